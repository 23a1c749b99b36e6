package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.TablePrefix != "evalsched-" || c.Tiers != 3 || c.DefaultTier != 2 || c.LaunchRate != 20 ||
		c.MetricPeriod != 10*time.Second || c.Capacity != "FARGATE" || len(c.ProviderErrorCodes) != 1 || c.Shards != 1 ||
		c.JobRetention != 90*24*time.Hour || c.ModelMetrics != "lean" || c.ErrorMetricName != "" || c.CallsMetricName != "" || c.InServiceMetricName != "" {
		t.Errorf("got %+v", c)
	}
}

func TestLoadReadsEverything(t *testing.T) {
	c, err := Load(env(map[string]string{
		"EVALSCHED_SUBNETS": "subnet-a, subnet-b", "EVALSCHED_TIERS": "5", "EVALSCHED_DEFAULT_TIER": "4",
		"EVALSCHED_CAPACITY": "SPOT_FALLBACK", "EVALSCHED_ASSIGN_PUBLIC_IP": "true", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES": "75,76",
		"EVALSCHED_SHARDS": "4", "EVALSCHED_JOB_RETENTION_DAYS": "0",
		"EVALSCHED_ERROR_METRIC_NAME": "ProviderErrors", "EVALSCHED_CALLS_METRIC_NAME": "Calls",
		"EVALSCHED_INSERVICE_METRIC_NAME": "InService",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Subnets) != 2 || c.Subnets[1] != "subnet-b" || c.DefaultTier != 4 || !c.AssignPublicIP || c.ProviderErrorCodes[1] != 76 || c.Shards != 4 || c.JobRetention != 0 ||
		c.ErrorMetricName != "ProviderErrors" || c.CallsMetricName != "Calls" || c.InServiceMetricName != "InService" {
		t.Errorf("got %+v", c)
	}
}

func TestLoadNamesEveryBadVariable(t *testing.T) {
	_, err := Load(env(map[string]string{
		"EVALSCHED_TIERS": "many", "EVALSCHED_LAUNCH_RATE": "-1", "EVALSCHED_CAPACITY": "EC2",
		"EVALSCHED_ASSIGN_PUBLIC_IP": "yes please", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES": "0",
		"EVALSCHED_JOB_RETENTION_DAYS": "-1", "EVALSCHED_MODEL_METRICS": "some",
		"EVALSCHED_ERROR_METRIC_NAME": "ProviderErrors",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"EVALSCHED_TIERS", "EVALSCHED_LAUNCH_RATE", "EVALSCHED_CAPACITY", "EVALSCHED_ASSIGN_PUBLIC_IP", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES", "EVALSCHED_JOB_RETENTION_DAYS", "EVALSCHED_MODEL_METRICS", "EVALSCHED_ERROR_METRIC_NAME"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestRequire(t *testing.T) {
	c, _ := Load(env(nil))
	err := c.Require("EVALSCHED_CLUSTER", "EVALSCHED_DLQ_URL")
	if err == nil || !strings.Contains(err.Error(), "EVALSCHED_CLUSTER: required") || !strings.Contains(err.Error(), "EVALSCHED_DLQ_URL") {
		t.Errorf("got %v", err)
	}
}

func TestLoadShards(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int
		err   string
	}{
		{"", 1, ""},
		{"1", 1, ""},
		{" 64 ", 64, ""},
		{"0", 1, `EVALSCHED_SHARDS: "0" is not an integer in 1..64`},
		{"65", 1, `EVALSCHED_SHARDS: "65" is not an integer in 1..64`},
		{"four", 1, `EVALSCHED_SHARDS: "four" is not an integer in 1..64`},
		{"2.5", 1, `EVALSCHED_SHARDS: "2.5" is not an integer in 1..64`},
	} {
		cfg, err := Load(env(map[string]string{"EVALSCHED_SHARDS": c.value}))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: got %v, want no error", c.value, err)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%q: got error %v, want %q", c.value, err, c.err)
		case c.err == "" && cfg.Shards != c.want:
			t.Errorf("%q: got %d shards, want %d", c.value, cfg.Shards, c.want)
		}
	}
}
