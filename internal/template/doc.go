// Package template holds the tests of the SAM application, ../../template.yaml:
// the template is the last link between the code and AWS, and nothing else
// checks it before `sam deploy` (cfn-lint's spec is too old to be useful
// here, see docs/local-aws.md).
//
// The test reads the template twice: with goformation, for the structure
// CloudFormation and SAM define (resource types, typed properties), and with
// its own walk of the YAML (gopkg.in/yaml.v3), which keeps the short-form
// intrinsics (!Ref, !GetAtt, !Sub, !If, …) that goformation resolves to
// nothing and applies SAM's Globals, which goformation does not. On that walk
// it checks what a deployment depends on:
//
//   - every reference names a parameter, a resource or a pseudo-parameter;
//   - every function is built by the Makefile's build-<LogicalId> target, for
//     its architecture, with -tags lambda.norpc, from ./functions/<dir>;
//   - every function's IAM policy grants what the platform needs (logs,
//     the SQS poller) and no call its code cannot make: the calls come from
//     the consumer-side interfaces it is wired with (reflection over
//     dynamostore.DynamoDBAPI, ecslauncher.API, …); each on the resources
//     it touches and nothing broader. Which calls a function does make is
//     not listed here: its flows run under its role with IAM enforced
//     (internal/iamcheck, functions/<dir>/iam_test.go), and fail on a call
//     the role refuses or on a grant no flow used;
//   - the sandbox's task role reaches nothing of the scheduler's;
//   - the tables are dynamostore's Tables.Definitions(), on demand, with PITR;
//   - the schedule, the queue and the event rule are the ones the design
//     needs (rate(1 minute) without retries, ReportBatchItemFailures, a
//     dead-letter queue, ECS task state changes of the sandbox cluster);
//   - for every shard count SchedulerShards allows, its conditions
//     evaluated (conditions_test.go): one schedule target per shard with the
//     input {"shard": k}, EVALSCHED_SHARDS from the same parameter, no
//     reserved executions unless SchedulerReservedConcurrency sets them
//     (a new account cannot reserve any) and a stall alarm per shard;
//   - the dashboard and the alarms name metrics the code emits.
//
// The table of what each function calls is functions in spec_test.go: change
// it with the function's wiring (functions/<dir>/main.go).
package template
