package sandboxkit

import (
	"strings"
	"testing"
)

func TestJobFromEnvNamesEveryBadVariable(t *testing.T) {
	env := map[string]string{EnvBatch: "acme/search", EnvAttempt: "zero", EnvSubmittedAt: "yesterday"}
	_, err := JobFromEnv(func(k string) string { return env[k] })
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"EVALSCHED_JOB_ID: required", "EVALSCHED_MODEL: required",
		`EVALSCHED_BATCH: "acme/search" is not account/project/batch`,
		`EVALSCHED_ATTEMPT: "zero" is not an integer ≥ 1`,
		`EVALSCHED_SUBMITTED_AT: "yesterday" is not an RFC 3339 time`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
