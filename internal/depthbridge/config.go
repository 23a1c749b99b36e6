package depthbridge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/dynamostore"
)

// Config is the bridge's configuration file (JSON). Zero fields take the
// defaults named on them.
type Config struct {
	// Interval is how often every target is scraped (default 1s).
	Interval Duration `json:"interval"`
	// PublishEvery is how often the datapoints gathered are sent, in as
	// few PutMetricData calls as CloudWatch's limits allow (default 10s, a
	// multiple of Interval). Each datapoint keeps its own second.
	PublishEvery Duration `json:"publish_every"`
	// Timeout bounds one scrape (default 80 % of Interval): a target that
	// does not answer within it counts as gone for that scrape.
	Timeout    Duration   `json:"timeout"`
	CloudWatch CloudWatch `json:"cloudwatch"`
	// Models maps a gateway's model name to the name jobs use, before the
	// name rule (see Normalize); a name mapped to "" is dropped.
	Models map[string]string `json:"models"`
	// Lowercase lowercases names that Models does not map.
	Lowercase bool     `json:"lowercase"`
	Targets   []Target `json:"targets"`
}

// CloudWatch names the metrics the bridge publishes: those the scheduler
// reads (gatewaydepth.Config, the template's GatewayMetric* parameters).
// Depth is always published; an empty InService, Errors or Calls is not,
// nor written to the readings item (Bridge.Readings) either.
type CloudWatch struct {
	Namespace string `json:"namespace"` // default "LLMGateway"
	Dimension string `json:"dimension"` // default "Model"
	Depth     string `json:"depth"`     // default "QueueDepth"
	InService string `json:"in_service"`
	Errors    string `json:"errors"` // with Calls: both or neither
	Calls     string `json:"calls"`
}

// Target is one Prometheus endpoint and the series it maps.
type Target struct {
	URL string `json:"url"`
	// Preset is vllm, envoy or litellm (see presets), or "": the series
	// below are given. A role given below replaces the preset's.
	Preset string `json:"preset"`
	// Depth, InService, Errors and Calls are selectors, metric{label} (see
	// ParseSelector); the series of a role are summed per model. Depth and
	// InService are gauges, Errors and Calls counters.
	Depth     []string `json:"depth"`
	InService []string `json:"in_service"`
	Errors    []string `json:"errors"`
	Calls     []string `json:"calls"`
	// Model names the model of selectors with no model label.
	Model string `json:"model"`
	// Models maps this target's names first, then Config.Models.
	Models map[string]string `json:"models"`
	// OnlyMapped drops every name that no Models table maps (an Envoy's
	// clusters that are not models: xDS, admin, ...).
	OnlyMapped bool `json:"only_mapped"`
	// BearerTokenEnv names an environment variable holding a token sent as
	// "Authorization: Bearer <token>" (LiteLLM's /metrics may require its
	// key); the token stays out of the configuration.
	BearerTokenEnv string `json:"bearer_token_env,omitempty"`
}

// Duration is a time.Duration written as "1s", "500ms" in JSON.
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"1s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as UnmarshalJSON reads it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// role is one of the values published per model.
type role int

const (
	roleDepth role = iota
	roleInService
	roleErrors
	roleCalls
	nRoles
)

var roleNames = [nRoles]string{"depth", "in_service", "errors", "calls"}

// counter reports whether the role's series are counters, published as
// their increase since the previous scrape.
func (r role) counter() bool { return r == roleErrors || r == roleCalls }

// presets are the built-in mappings. vLLM: requests waiting for and in
// the engine's batch. Envoy (and Envoy AI Gateway, an Envoy): each
// cluster's requests pending on its connection pool and active, its
// 5xx and 429 answers and all its requests. LiteLLM exposes no queue nor
// in-flight gauge: only its per-deployment counters of failed and all
// calls, by the model the client asked for.
var presets = map[string][nRoles][]string{
	"vllm": {
		roleDepth:     {"vllm:num_requests_waiting{model_name}"},
		roleInService: {"vllm:num_requests_running{model_name}"},
	},
	"envoy": {
		roleDepth:     {"envoy_cluster_upstream_rq_pending_active{envoy_cluster_name}"},
		roleInService: {"envoy_cluster_upstream_rq_active{envoy_cluster_name}"},
		roleErrors: {
			`envoy_cluster_upstream_rq_xx{envoy_cluster_name,envoy_response_code_class="5"}`,
			`envoy_cluster_upstream_rq{envoy_cluster_name,envoy_response_code="429"}`,
		},
		roleCalls: {"envoy_cluster_upstream_rq_total{envoy_cluster_name}"},
	},
	"litellm": {
		roleErrors: {"litellm_deployment_failure_responses_total{requested_model}"},
		roleCalls:  {"litellm_deployment_total_requests_total{requested_model}"},
	},
}

// Presets lists the built-in presets' names.
func Presets() []string { return slices.Sorted(maps.Keys(presets)) }

// Load reads a configuration from JSON (see Parse) and validates it.
func Load(data []byte) (Config, error) {
	c, err := Parse(data)
	if err != nil {
		return Config{}, err
	}
	return c.WithDefaults(), c.Validate()
}

// Parse reads a configuration from JSON, refusing unknown fields, without
// validating it (Validate, New do), so that a caller may fill fields first.
func Parse(data []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("bridge config: %w", err)
	}
	return c, nil
}

// Validate checks the configuration with its defaults; the error names the
// first field that breaks its rule.
func (c Config) Validate() error {
	_, err := c.WithDefaults().compile()
	return err
}

// The default pace: a scrape a second, a send every 10 s (the scheduler's
// default period, so each send carries whole periods). internal/bill
// prices the bridge at them.
const (
	DefaultInterval     = time.Second
	DefaultPublishEvery = 10 * time.Second
)

// WithDefaults fills the zero fields with their defaults.
func (c Config) WithDefaults() Config {
	c.Interval = cmp.Or(c.Interval, Duration(DefaultInterval))
	c.PublishEvery = cmp.Or(c.PublishEvery, Duration(DefaultPublishEvery))
	c.Timeout = cmp.Or(c.Timeout, c.Interval*4/5)
	c.CloudWatch.Namespace = cmp.Or(c.CloudWatch.Namespace, "LLMGateway")
	c.CloudWatch.Dimension = cmp.Or(c.CloudWatch.Dimension, "Model")
	c.CloudWatch.Depth = cmp.Or(c.CloudWatch.Depth, "QueueDepth")
	return c
}

// metricNames are the CloudWatch names of the roles ("": not published).
func (c Config) metricNames() [nRoles]string {
	return [nRoles]string{c.CloudWatch.Depth, c.CloudWatch.InService, c.CloudWatch.Errors, c.CloudWatch.Calls}
}

// target is a Target with its selectors parsed.
type target struct {
	Target
	sel [nRoles][]Selector
}

// compile validates the configuration (with its defaults) and parses the
// selectors; an error names the field and the rule it breaks.
func (c Config) compile() ([]target, error) {
	iv, every := time.Duration(c.Interval), time.Duration(c.PublishEvery)
	switch {
	case iv < 100*time.Millisecond:
		return nil, fmt.Errorf("bridge config: interval %v must be at least 100ms", iv)
	case every < iv || every%iv != 0 || every > time.Minute:
		return nil, fmt.Errorf("bridge config: publish_every %v must be a multiple of the interval %v, at most 1m", every, iv)
	case c.Timeout <= 0 || c.Timeout > c.Interval:
		return nil, fmt.Errorf("bridge config: timeout %v must be positive and at most the interval %v", time.Duration(c.Timeout), iv)
	case (c.CloudWatch.Errors == "") != (c.CloudWatch.Calls == ""):
		return nil, fmt.Errorf("bridge config: cloudwatch.errors %q and cloudwatch.calls %q must be set together (the error rate is errors/calls) or both left empty", c.CloudWatch.Errors, c.CloudWatch.Calls)
	case len(c.Targets) == 0:
		return nil, fmt.Errorf("bridge config: targets: at least one is required")
	}
	for _, f := range []struct{ name, v string }{{"namespace", c.CloudWatch.Namespace}, {"dimension", c.CloudWatch.Dimension},
		{"depth", c.CloudWatch.Depth}, {"in_service", c.CloudWatch.InService}, {"errors", c.CloudWatch.Errors}, {"calls", c.CloudWatch.Calls}} {
		// CloudWatch's limit; it also keeps 1,000 datums under PutMetricData's 1 MB.
		if len(f.v) > 255 {
			return nil, fmt.Errorf("bridge config: cloudwatch.%s is %d characters, at most 255", f.name, len(f.v))
		}
	}
	out := make([]target, len(c.Targets))
	for i, t := range c.Targets {
		at := fmt.Sprintf("bridge config: targets[%d]", i)
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s.url: %q is not an http(s) URL", at, t.URL)
		}
		out[i].Target = t
		if t.Preset != "" {
			p, ok := presets[t.Preset]
			if !ok {
				return nil, fmt.Errorf("%s.preset: %q is not one of %s", at, t.Preset, strings.Join(Presets(), ", "))
			}
			for r := range nRoles {
				for _, s := range p[r] {
					out[i].sel[r] = append(out[i].sel[r], MustParseSelector(s))
				}
			}
		}
		mapped := false
		for r, given := range [nRoles][]string{t.Depth, t.InService, t.Errors, t.Calls} {
			if given != nil {
				out[i].sel[r] = nil
			}
			for k, s := range given {
				sel, err := ParseSelector(s)
				if err != nil {
					return nil, fmt.Errorf("%s.%s[%d]: %w", at, roleNames[r], k, err)
				}
				if sel.Label == "" && t.Model == "" {
					return nil, fmt.Errorf("%s.%s[%d]: %q names no model label, and the target no model", at, roleNames[r], k, s)
				}
				out[i].sel[r] = append(out[i].sel[r], sel)
			}
			mapped = mapped || len(out[i].sel[r]) > 0
		}
		if !mapped {
			return nil, fmt.Errorf("%s: maps no series: give a preset or a depth, in_service, errors or calls selector", at)
		}
	}
	return out, nil
}

// Selector picks the samples of one metric family: those whose labels
// match every filter. Label carries the model's name ("": the target's
// Model).
type Selector struct {
	Metric  string
	Label   string
	Filters map[string]string
}

// ParseSelector reads metric, metric{label} or metric{label,name="value",...}:
// the one bare label name is the label carrying the model, name="value"
// pairs filter the samples.
func ParseSelector(s string) (Selector, error) {
	name, rest, braces := strings.Cut(s, "{")
	sel := Selector{Metric: strings.TrimSpace(name), Filters: map[string]string{}}
	if sel.Metric == "" || strings.ContainsAny(sel.Metric, " \t\"}=,") {
		return Selector{}, fmt.Errorf("%q: want metric{label} or metric{label,name=\"value\"}", s)
	}
	if !braces {
		return sel, nil
	}
	body, ok := strings.CutSuffix(strings.TrimSpace(rest), "}")
	if !ok {
		return Selector{}, fmt.Errorf("%q: the label list does not end with }", s)
	}
	for body = strings.TrimSpace(body); body != ""; {
		var item string
		item, body = nextItem(body)
		k, v, isFilter := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if k == "" {
			return Selector{}, fmt.Errorf("%q: an empty label name", s)
		}
		if !isFilter {
			if sel.Label != "" {
				return Selector{}, fmt.Errorf("%q: two model labels (%s, %s); filters are name=\"value\"", s, sel.Label, k)
			}
			sel.Label = k
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return Selector{}, fmt.Errorf("%q: the value of %s must be quoted", s, k)
		}
		sel.Filters[k] = v[1 : len(v)-1]
	}
	return sel, nil
}

// nextItem splits a label list at its first comma outside quotes.
func nextItem(s string) (item, rest string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				return s[:i], strings.TrimSpace(s[i+1:])
			}
		}
	}
	return s, ""
}

// MustParseSelector is ParseSelector for the presets.
func MustParseSelector(s string) Selector {
	sel, err := ParseSelector(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// EnvConfig holds the configuration's JSON when no file is given (the ECS
// service passes it so: template.yaml).
const EnvConfig = "EVALSCHED_BRIDGE_CONFIG"

// FromEnv reads the configuration from file, or from EnvConfig when file is
// "", and fills the CloudWatch names it leaves empty from the scheduler's
// variables, so that one set of template parameters names both sides.
// getenv is os.Getenv but in tests.
func FromEnv(file string, getenv func(string) string) (Config, error) {
	var data []byte
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return Config{}, err
		}
		data = b
	} else if s := getenv(EnvConfig); s != "" {
		data = []byte(s)
	} else {
		return Config{}, fmt.Errorf("no configuration: give --config FILE or set %s", EnvConfig)
	}
	cfg, err := Parse(data)
	if err != nil {
		return cfg, err
	}
	cw := &cfg.CloudWatch
	for _, f := range []struct {
		field *string
		env   string
	}{
		{&cw.Namespace, "EVALSCHED_METRIC_NAMESPACE"}, {&cw.Depth, "EVALSCHED_METRIC_NAME"}, {&cw.Dimension, "EVALSCHED_METRIC_DIMENSION"},
		{&cw.InService, "EVALSCHED_INSERVICE_METRIC_NAME"}, {&cw.Errors, "EVALSCHED_ERROR_METRIC_NAME"}, {&cw.Calls, "EVALSCHED_CALLS_METRIC_NAME"},
	} {
		if *f.field == "" {
			*f.field = getenv(f.env)
		}
	}
	return cfg.WithDefaults(), cfg.Validate()
}

// SinkFromEnv is where the readings go, by EVALSCHED_DEPTH_SOURCE: the
// state table's readings item (EVALSCHED_TABLE_PREFIX) when the scheduler
// reads it ("dynamodb", the template's default with the bridge), else
// CloudWatch metrics. Exactly one of the two is set.
func SinkFromEnv(aws awssdk.Config, getenv func(string) string) (API, Readings, error) {
	switch src := getenv("EVALSCHED_DEPTH_SOURCE"); src {
	case "", config.DepthFromCloudWatch:
		return cloudwatch.NewFromConfig(aws), nil, nil
	case config.DepthFromDynamoDB:
		table := dynamostore.DefaultTables(cmp.Or(getenv("EVALSCHED_TABLE_PREFIX"), "evalsched-")).State
		return nil, &depthitem.Writer{API: dynamodb.NewFromConfig(aws), Table: table}, nil
	default:
		return nil, nil, fmt.Errorf("EVALSCHED_DEPTH_SOURCE %q is not %s or %s", src, config.DepthFromCloudWatch, config.DepthFromDynamoDB)
	}
}
