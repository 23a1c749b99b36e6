package depthbridge

import (
	"strings"
	"testing"
)

// TestNormalize: the tables first (the target's, then the configuration's;
// "" drops), only_mapped drops the rest, then lowercase (when set) and "-"
// for every byte outside a job name's characters; names that are still no
// valid job model name are dropped.
func TestNormalize(t *testing.T) {
	cfg := Config{Models: map[string]string{"/models/llama": "llama-3.1-8b", "admin": ""}}
	lower := cfg
	lower.Lowercase = true
	for _, tc := range []struct {
		name, in string
		t        Target
		c        Config
		want     string
		ok       bool
	}{
		{"as written", "meta-llama/Llama-3.1-8B-Instruct", Target{}, cfg, "meta-llama/Llama-3.1-8B-Instruct", true},
		{"config table", "/models/llama", Target{}, cfg, "llama-3.1-8b", true},
		{"target table first", "/models/llama", Target{Models: map[string]string{"/models/llama": "other"}}, cfg, "other", true},
		{"mapped to empty", "admin", Target{}, cfg, "", false},
		{"mapped to an invalid name", "x", Target{Models: map[string]string{"x": "a b"}}, cfg, "a b", false},
		{"only mapped", "xds_cluster", Target{OnlyMapped: true}, cfg, "", false},
		{"only mapped, mapped", "/models/llama", Target{OnlyMapped: true}, cfg, "llama-3.1-8b", true},
		{"disallowed characters", "outbound|8000||vllm.default.svc", Target{}, cfg, "outbound-8000--vllm.default.svc", true},
		{"lowercase", "Claude Sonnet@4", Target{}, lower, "claude-sonnet-4", true},
		{"case kept by default", "GPT-4o", Target{}, cfg, "GPT-4o", true},
		{"empty", "", Target{}, cfg, "", false},
		{"too long", strings.Repeat("a", 129), Target{}, cfg, strings.Repeat("a", 129), false},
		{"longest", strings.Repeat("a", 128), Target{}, cfg, strings.Repeat("a", 128), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Normalize(tc.in, tc.t, tc.c)
			if ok != tc.ok || ok && got != tc.want {
				t.Errorf("Normalize(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseSelector(t *testing.T) {
	sel, err := ParseSelector(`envoy_cluster_upstream_rq_xx{envoy_cluster_name, envoy_response_code_class="5", x="a,b"}`)
	if err != nil || sel.Metric != "envoy_cluster_upstream_rq_xx" || sel.Label != "envoy_cluster_name" ||
		len(sel.Filters) != 2 || sel.Filters["envoy_response_code_class"] != "5" || sel.Filters["x"] != "a,b" {
		t.Errorf("got %+v, %v", sel, err)
	}
	if sel, err := ParseSelector("vllm:num_requests_waiting"); err != nil || sel.Label != "" {
		t.Errorf("bare metric: %+v, %v", sel, err)
	}
	for _, bad := range []string{"", "{model}", "m{a,b}", `m{a,k=v}`, "m{model", `m{,=""}`} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("ParseSelector(%q): no error", bad)
		}
	}
}

// TestLoadNamesTheField: each broken rule is an error naming its field.
func TestLoadNamesTheField(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"targets": [{"url": "http://h/metrics", "preset": "vllm"}], "bogus": 1}`, `unknown field "bogus"`},
		{`{"targets": []}`, "targets: at least one"},
		{`{"targets": [{"url": "h:1/metrics", "preset": "vllm"}]}`, "targets[0].url"},
		{`{"targets": [{"url": "http://h/m", "preset": "tgi"}]}`, `targets[0].preset: "tgi" is not one of envoy, litellm, vllm`},
		{`{"targets": [{"url": "http://h/m"}]}`, "targets[0]: maps no series"},
		{`{"targets": [{"url": "http://h/m", "depth": ["q{a,b}"]}]}`, "targets[0].depth[0]"},
		{`{"targets": [{"url": "http://h/m", "calls": ["c_total"]}]}`, "targets[0].calls[0]: \"c_total\" names no model label"},
		{`{"interval": "50ms", "targets": [{"url": "http://h/m", "preset": "vllm"}]}`, "interval"},
		{`{"publish_every": "1500ms", "targets": [{"url": "http://h/m", "preset": "vllm"}]}`, "publish_every"},
		{`{"interval": "soon", "targets": [{"url": "http://h/m", "preset": "vllm"}]}`, "duration"},
		{`{"cloudwatch": {"errors": "E"}, "targets": [{"url": "http://h/m", "preset": "envoy"}]}`, "cloudwatch.errors"},
	} {
		if _, err := Load([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s): %v; want an error with %q", tc.json, err, tc.want)
		}
	}
	c, err := Load([]byte(`{"targets": [{"url": "http://h/m", "preset": "envoy", "calls": ["c_total{model}"]}]}`))
	if err != nil || c.Interval.D() != 1e9 || c.PublishEvery.D() != 1e10 || c.CloudWatch.Depth != "QueueDepth" {
		t.Errorf("defaults: %+v, %v", c, err)
	}
}

// TestRoleReplacesThePresets: a role given replaces the preset's, [] drops
// it, and the preset's other roles stay.
func TestRoleReplacesThePresets(t *testing.T) {
	c, err := Load([]byte(`{"targets": [{"url": "http://h/m", "preset": "envoy", "in_service": [], "calls": ["c_total{cluster}"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := c.compile()
	sel := ts[0].sel
	if len(sel[roleDepth]) != 1 || len(sel[roleInService]) != 0 || len(sel[roleErrors]) != 2 || len(sel[roleCalls]) != 1 || sel[roleCalls][0].Label != "cluster" {
		t.Errorf("selectors %+v; want the preset's depth and errors, no in service, the calls given", sel)
	}
}

func TestFromEnvFillsTheSchedulersNames(t *testing.T) {
	env := map[string]string{
		EnvConfig:                         `{"targets": [{"url": "http://127.0.0.1:8000/metrics", "preset": "vllm"}], "cloudwatch": {"namespace": "Mine"}}`,
		"EVALSCHED_METRIC_NAMESPACE":      "Theirs",
		"EVALSCHED_METRIC_NAME":           "Waiting",
		"EVALSCHED_INSERVICE_METRIC_NAME": "InService",
	}
	cfg, err := FromEnv("", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cw := cfg.CloudWatch; cw.Namespace != "Mine" || cw.Depth != "Waiting" || cw.InService != "InService" {
		t.Errorf("got %+v; want the file's namespace kept, the depth and in-service names from the environment", cw)
	}
	if _, err := FromEnv("", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), EnvConfig) {
		t.Errorf("no configuration: err %v, want one naming %s", err, EnvConfig)
	}
}
