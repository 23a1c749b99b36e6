package sandboxkit

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// The kit's exit codes are exported here because internal/taskevent, which
// reads them, cannot be imported by another module; this test holds the two
// to the same convention: the task-events decoder, with the stack's default
// configuration, classifies each kit code as the kit means it.
func TestExitCodesMatchTaskEvent(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" }) // the stack's defaults
	if err != nil {
		t.Fatal(err)
	}
	te := taskevent.Config{ProviderErrorCodes: cfg.ProviderErrorCodes}
	cases := []struct {
		code int
		want taskevent.Kind
	}{
		{ExitSucceeded, taskevent.Succeeded},
		{ExitJobFailed, taskevent.Failed},
		{ExitProviderFailed, taskevent.ProviderFailed},
		{ExitCode(&ProviderError{Err: errors.New("503")}), taskevent.ProviderFailed},
		{ExitCode(ErrBreakerOpen), taskevent.ProviderFailed},
		{ExitCode(&RequestError{Status: 400}), taskevent.Failed},
	}
	for _, c := range cases {
		code := c.code
		kind, _, _ := taskevent.Classify("EssentialContainerExited", "Essential container in task exited",
			[]taskevent.Container{{Name: "sandbox", ExitCode: &code}}, te)
		if kind != c.want {
			t.Errorf("exit %d: taskevent says %s, the kit means %s", code, kind, c.want)
		}
	}
}

// JobFromEnv reads exactly what the launcher sets.
func TestJobFromEnvReadsTheLaunchersEnvironment(t *testing.T) {
	submitted := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sj := scheduler.Job{ID: "0123456789abcdef0123456789abcdef", Account: "acme", Project: "search", Batch: "b1",
		Model: "gpt-5.5", Attempt: 2, Env: map[string]string{"TASK_ID": "7"}, SubmittedAt: submitted, ResultToken: resulttoken.New()}
	env := map[string]string{}
	for _, kv := range ecslauncher.Environment(sj) {
		env[aws.ToString(kv.Name)] = aws.ToString(kv.Value)
	}
	j, err := JobFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Job{ID: sj.ID, Account: "acme", Project: "search", Batch: "b1", Model: "gpt-5.5", Attempt: 2, SubmittedAt: submitted,
		ResultToken: sj.ResultToken.Reveal()}
	if j != want {
		t.Errorf("got %+v, want %+v", j, want)
	}
}
