package intake_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/intake"
)

func TestConfigFrom(t *testing.T) {
	load := func(env map[string]string) config.Config {
		t.Helper()
		c, err := config.Load(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := intake.ConfigFrom(load(nil)); err == nil || !strings.Contains(err.Error(), "EVALSCHED_DLQ_URL: required") {
		t.Errorf("no dead-letter queue: got %v, want EVALSCHED_DLQ_URL required", err)
	}
	got, err := intake.ConfigFrom(load(map[string]string{
		"EVALSCHED_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq", "EVALSCHED_TIERS": "5",
		"EVALSCHED_DEFAULT_TIER": "4", "EVALSCHED_DEFAULT_TASK_DEFINITION": "eval-sandbox:7",
		"EVALSCHED_ENV_ALLOW": "TASK_ID, EVAL_*",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got.DLQURL != "https://sqs.us-east-1.amazonaws.com/123456789012/dlq" || got.Namespace != "evalsched" ||
		got.Batch.Tiers != 5 || got.Batch.DefaultTier != 4 || got.Batch.DefaultTaskDefinition != "eval-sandbox:7" ||
		!slices.Equal(got.Batch.EnvAllow, []string{"TASK_ID", "EVAL_*"}) {
		t.Errorf("got %+v", got)
	}
	// The template's parameter allows only well-formed lists; a hand-set
	// variable that is not fails at cold start, naming the entry.
	_, err = intake.ConfigFrom(load(map[string]string{"EVALSCHED_DLQ_URL": "q", "EVALSCHED_ENV_ALLOW": "TASK_ID,eval_*"}))
	if err == nil || !strings.Contains(err.Error(), `env allowlist: "eval_*"`) {
		t.Errorf("bad env allowlist: got %v, want it named", err)
	}
	_, err = intake.ConfigFrom(load(map[string]string{"EVALSCHED_DLQ_URL": "q", "EVALSCHED_DEFAULT_TASK_DEFINITION": "no spaces"}))
	if err == nil || !strings.Contains(err.Error(), "default task definition") {
		t.Errorf("bad default task definition: got %v, want it named", err)
	}
}
