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
		c.MetricPeriod != 10*time.Second || c.Capacity != "FARGATE" || len(c.ProviderErrorCodes) != 1 {
		t.Errorf("got %+v", c)
	}
}

func TestLoadReadsEverything(t *testing.T) {
	c, err := Load(env(map[string]string{
		"EVALSCHED_SUBNETS": "subnet-a, subnet-b", "EVALSCHED_TIERS": "5", "EVALSCHED_DEFAULT_TIER": "4",
		"EVALSCHED_CAPACITY": "SPOT_FALLBACK", "EVALSCHED_ASSIGN_PUBLIC_IP": "true", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES": "75,76",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Subnets) != 2 || c.Subnets[1] != "subnet-b" || c.DefaultTier != 4 || !c.AssignPublicIP || c.ProviderErrorCodes[1] != 76 {
		t.Errorf("got %+v", c)
	}
}

func TestLoadNamesEveryBadVariable(t *testing.T) {
	_, err := Load(env(map[string]string{
		"EVALSCHED_TIERS": "many", "EVALSCHED_LAUNCH_RATE": "-1", "EVALSCHED_CAPACITY": "EC2",
		"EVALSCHED_ASSIGN_PUBLIC_IP": "yes please", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES": "0",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"EVALSCHED_TIERS", "EVALSCHED_LAUNCH_RATE", "EVALSCHED_CAPACITY", "EVALSCHED_ASSIGN_PUBLIC_IP", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES"} {
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
