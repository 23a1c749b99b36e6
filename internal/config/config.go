package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// Config is every setting; a function uses the fields it needs.
type Config struct {
	TablePrefix           string
	Tiers                 int
	TierWeight            float64
	DefaultTier           int
	GlobalMaxRunning      int
	DefaultTaskDefinition string
	// EnvAllow is the deployment's env allowlist (EVALSCHED_ENV_ALLOW,
	// comma-separated names and PREFIX_* prefixes); nil: none, every name
	// the env policy does not refuse passes.
	EnvAllow []string

	Cluster         string
	Subnets         []string
	SecurityGroups  []string
	AssignPublicIP  bool
	Capacity        string
	ContainerName   string
	LaunchRate      float64
	LaunchBurst     int
	MetricNamespace string
	MetricName      string
	MetricDimension string
	MetricPeriod    time.Duration
	// ErrorMetricName and CallsMetricName are the gateway's counters of
	// calls answered with a provider error and of all calls, per model;
	// both empty (the default): the breaker goes by exit codes alone.
	ErrorMetricName string
	CallsMetricName string
	// InServiceMetricName is the gateway's count of calls in service to
	// each model's provider; empty (the default): not read.
	InServiceMetricName string
	// DepthSource is where the pass reads the gateway's readings:
	// DepthFromCloudWatch (GetMetricData on the metrics above) or
	// DepthFromDynamoDB (the bridge's readings item in the state table,
	// package depthitem).
	DepthSource  string
	EMFNamespace string
	// ModelMetrics is emf.Full, emf.Essential or emf.Lean: how many
	// per-model values become CloudWatch metrics (the rest stay in the
	// logs).
	ModelMetrics string

	DLQURL             string
	ProviderErrorCodes []int
	// JobRetention is how long an ended job's item stays before DynamoDB's
	// TTL deletes it (0: for ever).
	JobRetention time.Duration

	// PassInterval and Passes shape one scheduler invocation: a pass every
	// PassInterval, Passes of them (10 s × 6 covers EventBridge's minute).
	// Tests and the local mode shorten them.
	PassInterval time.Duration
	Passes       int
	// Shards is the number of scheduler invocations the models are split
	// over (scheduler.ShardOf); each takes an even share of the global cap
	// and of the launch rate (scheduler.Caps.Share). 1: one scheduler.
	Shards int

	// The model settings of a model that has no item in the models table.
	DefaultMinLimit     int
	DefaultMaxLimit     int
	DefaultTargetDepth  float64
	DefaultInitialLimit int
}

// DefaultModel is the configuration of a model without an operator item.
func (c Config) DefaultModel() scheduler.ModelConfig {
	return scheduler.ModelConfig{
		Enabled: true, MinLimit: c.DefaultMinLimit, MaxLimit: c.DefaultMaxLimit,
		TargetDepth: c.DefaultTargetDepth, InitialLimit: c.DefaultInitialLimit,
	}
}

// maxShards bounds EVALSCHED_SHARDS: at 64 a shard's share of ECS's launch
// budget (200 jobs a pass) is already 3 jobs, so more shards only add
// passes. The template deploys up to 4 (one rule, five targets at most).
const maxShards = 64

// Getenv reads a variable; os.Getenv in production, a map in tests.
type Getenv func(string) string

// Load reads the configuration, reporting every malformed variable at once.
func Load(getenv Getenv) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	r := reader{getenv: getenv}
	// The pass's defaults are the scheduler's (scheduler.DefaultConfig):
	// one place, so an unset variable means what a test's DefaultConfig does.
	def := scheduler.DefaultConfig()
	c := Config{
		TablePrefix:           r.str("EVALSCHED_TABLE_PREFIX", "evalsched-"),
		Tiers:                 r.integer("EVALSCHED_TIERS", def.Tiers, 1, 10),
		TierWeight:            r.float("EVALSCHED_TIER_WEIGHT", def.TierWeight, 0, 1),
		GlobalMaxRunning:      r.integer("EVALSCHED_GLOBAL_MAX_RUNNING", def.GlobalMaxRunning, 0, 1_000_000),
		DefaultTaskDefinition: r.str("EVALSCHED_DEFAULT_TASK_DEFINITION", ""),
		EnvAllow:              r.list("EVALSCHED_ENV_ALLOW"),
		Cluster:               r.str("EVALSCHED_CLUSTER", ""),
		Subnets:               r.list("EVALSCHED_SUBNETS"),
		SecurityGroups:        r.list("EVALSCHED_SECURITY_GROUPS"),
		AssignPublicIP:        r.boolean("EVALSCHED_ASSIGN_PUBLIC_IP", false),
		Capacity:              r.str("EVALSCHED_CAPACITY", "FARGATE"),
		ContainerName:         r.str("EVALSCHED_CONTAINER_NAME", "sandbox"),
		LaunchRate:            r.float("EVALSCHED_LAUNCH_RATE", 20, 0.1, 1000),
		LaunchBurst:           r.integer("EVALSCHED_LAUNCH_BURST", 100, 1, 10000),
		MetricNamespace:       r.str("EVALSCHED_METRIC_NAMESPACE", "LLMGateway"),
		MetricName:            r.str("EVALSCHED_METRIC_NAME", "QueueDepth"),
		MetricDimension:       r.str("EVALSCHED_METRIC_DIMENSION", "Model"),
		MetricPeriod:          time.Duration(r.integer("EVALSCHED_METRIC_PERIOD_SECONDS", 10, 1, 3600)) * time.Second,
		ErrorMetricName:       r.str("EVALSCHED_ERROR_METRIC_NAME", ""),
		CallsMetricName:       r.str("EVALSCHED_CALLS_METRIC_NAME", ""),
		InServiceMetricName:   r.str("EVALSCHED_INSERVICE_METRIC_NAME", ""),
		DepthSource:           r.str("EVALSCHED_DEPTH_SOURCE", DepthFromCloudWatch),
		EMFNamespace:          r.str("EVALSCHED_EMF_NAMESPACE", "evalsched"),
		ModelMetrics:          r.str("EVALSCHED_MODEL_METRICS", "lean"),
		DLQURL:                r.str("EVALSCHED_DLQ_URL", ""),
		ProviderErrorCodes:    r.ints("EVALSCHED_PROVIDER_ERROR_EXIT_CODES", []int{75}),
		JobRetention:          time.Duration(r.integer("EVALSCHED_JOB_RETENTION_DAYS", 90, 0, 3650)) * 24 * time.Hour,
		DefaultMinLimit:       r.integer("EVALSCHED_DEFAULT_MIN_LIMIT", 1, 0, 1_000_000),
		DefaultMaxLimit:       r.integer("EVALSCHED_DEFAULT_MAX_LIMIT", 10000, 1, 1_000_000),
		DefaultTargetDepth:    r.float("EVALSCHED_DEFAULT_TARGET_DEPTH", 20, 0, 1e6),
		DefaultInitialLimit:   r.integer("EVALSCHED_DEFAULT_INITIAL_LIMIT", 10, 1, 1_000_000),
		PassInterval:          time.Duration(r.integer("EVALSCHED_PASS_INTERVAL_SECONDS", 10, 1, 60)) * time.Second,
		Passes:                r.integer("EVALSCHED_PASSES", 6, 1, 60),
		Shards:                r.integer("EVALSCHED_SHARDS", 1, 1, maxShards),
	}
	if c.DefaultMaxLimit < c.DefaultMinLimit {
		r.fail("EVALSCHED_DEFAULT_MAX_LIMIT", "%d is below EVALSCHED_DEFAULT_MIN_LIMIT %d", c.DefaultMaxLimit, c.DefaultMinLimit)
	}
	if (c.ErrorMetricName == "") != (c.CallsMetricName == "") {
		r.fail("EVALSCHED_ERROR_METRIC_NAME", "%q and EVALSCHED_CALLS_METRIC_NAME %q must be set together (the error rate is errors/calls) or both left empty", c.ErrorMetricName, c.CallsMetricName)
	}
	c.DefaultTier = r.integer("EVALSCHED_DEFAULT_TIER", min(def.DefaultTier, c.Tiers-1), 0, c.Tiers-1)
	switch c.Capacity {
	case "FARGATE", "FARGATE_SPOT", "SPOT_FALLBACK":
	default:
		r.fail("EVALSCHED_CAPACITY", "%q is not FARGATE, FARGATE_SPOT or SPOT_FALLBACK", c.Capacity)
	}
	if c.DepthSource != DepthFromCloudWatch && c.DepthSource != DepthFromDynamoDB {
		r.fail("EVALSCHED_DEPTH_SOURCE", "%q is not %s or %s", c.DepthSource, DepthFromCloudWatch, DepthFromDynamoDB)
	}
	if c.ModelMetrics != "full" && c.ModelMetrics != "essential" && c.ModelMetrics != "lean" {
		r.fail("EVALSCHED_MODEL_METRICS", "%q is not full, essential or lean", c.ModelMetrics)
	}
	return c, errors.Join(r.errs...)
}

// The sources of the gateway's readings (EVALSCHED_DEPTH_SOURCE).
const (
	DepthFromCloudWatch = "cloudwatch"
	DepthFromDynamoDB   = "dynamodb"
)

// Require reports the named variables that are empty, for the function that
// needs them (the scheduler needs the cluster, the intake the DLQ).
func (c Config) Require(names ...string) error {
	var errs []error
	for _, n := range names {
		var empty bool
		switch n {
		case "EVALSCHED_CLUSTER":
			empty = c.Cluster == ""
		case "EVALSCHED_SUBNETS":
			empty = len(c.Subnets) == 0
		case "EVALSCHED_DLQ_URL":
			empty = c.DLQURL == ""
		case "EVALSCHED_DEFAULT_TASK_DEFINITION":
			empty = c.DefaultTaskDefinition == ""
		default:
			return fmt.Errorf("config: Require does not know %s", n)
		}
		if empty {
			errs = append(errs, fmt.Errorf("%s: required", n))
		}
	}
	return errors.Join(errs...)
}

type reader struct {
	getenv Getenv
	errs   []error
}

func (r *reader) fail(name, format string, a ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, a...)))
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) integer(name string, def, lo, hi int) int {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.fail(name, "%q is not an integer in %d..%d", v, lo, hi)
		return def
	}
	return n
}

func (r *reader) float(name string, def, lo, hi float64) float64 {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < lo || f > hi {
		r.fail(name, "%q is not a number in %g..%g", v, lo, hi)
		return def
	}
	return f
}

func (r *reader) boolean(name string, def bool) bool {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, "%q is not true or false", v)
		return def
	}
	return b
}

func (r *reader) list(name string) []string { return List(r.getenv(name)) }

// List reads a comma-separated list as the variables hold them, spaces
// trimmed and empty items dropped: nil when none.
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (r *reader) ints(name string, def []int) []int {
	items := r.list(name)
	if len(items) == 0 {
		return def
	}
	var out []int
	for _, it := range items {
		n, err := strconv.Atoi(it)
		if err != nil || n < 1 || n > 255 {
			r.fail(name, "%q is not an exit code 1..255", it)
			continue
		}
		out = append(out, n)
	}
	return out
}
