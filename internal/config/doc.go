// Package config reads the functions' settings from environment variables,
// as the SAM template sets them. Each function reads only what it needs; a
// missing or malformed variable is an error naming the variable and the rule,
// so a bad deployment fails at cold start with a message an operator can act
// on, not at the first pass.
//
//	EVALSCHED_TABLE_PREFIX          tables <prefix>state, <prefix>models, <prefix>pins (default "evalsched-")
//	EVALSCHED_TIERS                 number of tiers (default 3)
//	EVALSCHED_TIER_WEIGHT           share a tier takes of what is left (default 0.8)
//	EVALSCHED_DEFAULT_TIER          tier of a batch without one (default 2)
//	EVALSCHED_GLOBAL_MAX_RUNNING    account-wide cap on sandbox tasks (default 6000)
//	EVALSCHED_DEFAULT_TASK_DEFINITION  for batches that name none
//	EVALSCHED_ENV_ALLOW             the env allowlist: comma-separated names and PREFIX_* prefixes a
//	                                job's env may use (intake; default "": any name the env policy,
//	                                docs/env-policy.md, does not refuse)
//	EVALSCHED_CLUSTER               the sandbox ECS cluster (scheduler)
//	EVALSCHED_SUBNETS               comma-separated subnet ids (scheduler)
//	EVALSCHED_SECURITY_GROUPS       comma-separated security group ids (scheduler)
//	EVALSCHED_ASSIGN_PUBLIC_IP      true|false (default false)
//	EVALSCHED_CAPACITY              FARGATE | FARGATE_SPOT | SPOT_FALLBACK (default FARGATE)
//	EVALSCHED_CONTAINER_NAME        the sandbox container (default "sandbox")
//	EVALSCHED_LAUNCH_RATE           RunTask calls per second (default 20)
//	EVALSCHED_LAUNCH_BURST          RunTask burst (default 100)
//	EVALSCHED_METRIC_NAMESPACE      gateway depth metric namespace (default "LLMGateway")
//	EVALSCHED_METRIC_NAME           gateway depth metric name (default "QueueDepth")
//	EVALSCHED_METRIC_DIMENSION      its model dimension (default "Model")
//	EVALSCHED_METRIC_PERIOD_SECONDS 1, 5, 10, 30 or a multiple of 60 (default 10)
//	EVALSCHED_ERROR_METRIC_NAME     the gateway's count of calls answered with 429/5xx, per model
//	                                (default "": off, the breaker goes by exit codes alone)
//	EVALSCHED_CALLS_METRIC_NAME     its count of all calls, per model; set with the error metric
//	EVALSCHED_INSERVICE_METRIC_NAME the gateway's calls in service to each model's provider, read
//	                                as a Maximum (default "": off); the limits learn the knee from it
//	EVALSCHED_DEPTH_SOURCE          cloudwatch (default): GetMetricData on the metrics above;
//	                                dynamodb: the bridge's readings item in the state table
//	EVALSCHED_EMF_NAMESPACE         namespace of evalsched's own metrics (default "evalsched")
//	EVALSCHED_MODEL_METRICS         lean (default): no per-model CloudWatch metric, each busy model's
//	                                values a log line (account totals are metrics); essential: 4
//	                                a busy model (limit, running, waiting, breaker); full: 14
//	EVALSCHED_DLQ_URL               the intake dead-letter queue (intake)
//	EVALSCHED_PROVIDER_ERROR_EXIT_CODES  comma-separated exit codes (default "75")
//	EVALSCHED_JOB_RETENTION_DAYS    days an ended job's item stays before the table's TTL deletes it,
//	                                0..3650, 0 for ever (default 90)
//	EVALSCHED_PASS_INTERVAL_SECONDS one pass every N seconds (default 10)
//	EVALSCHED_PASSES                passes per scheduler invocation (default 6: one minute)
//	EVALSCHED_SHARDS                scheduler invocations the models are split over, 1..64 (default 1);
//	                                they share the global cap and the launch rate by load
//	EVALSCHED_DEFAULT_MIN_LIMIT, _MAX_LIMIT, _TARGET_DEPTH, _INITIAL_LIMIT
//	                                a model without an item in the models table (1, 10000, 20, 10)
package config
