package taskevent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// claimedJob puts one job through submit and claim in a memstore, and
// rewrites the fixtures' job id to it.
func claimedJob(t *testing.T) (*memstore.Store, string) {
	t.Helper()
	st := memstore.New(scheduler.ModelConfig{})
	if _, err := st.Submit(context.Background(), job.BatchSpec{Account: "acme", Project: "search-evals", Batch: "b", Model: "gpt-5.5", Tier: -1,
		Jobs: []job.JobSpec{{Key: "000123"}}}, t0); err != nil {
		t.Fatal(err)
	}
	plan := scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: "gpt-5.5", Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "acme", Project: "search-evals", Batch: "b", Model: "gpt-5.5"}, Count: 1}}}}}
	committed, err := st.Commit(context.Background(), plan, nil)
	jobs := committed.Claimed
	if err != nil || len(jobs) != 1 {
		t.Fatal(err)
	}
	return st, jobs[0].ID
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func invoke(t *testing.T, h *Handler, file, jobID string) {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(fixture(t, file), &ev); err != nil {
		t.Fatal(err)
	}
	ev["detail"].(map[string]any)["startedBy"] = jobID
	raw, _ := json.Marshal(ev)
	if _, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), raw); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func TestHandlerFollowsTheFixtures(t *testing.T) {
	cases := []struct {
		events []string
		state  job.State
		check  func(t *testing.T, j memstore.Job)
	}{
		{[]string{"ecs-provisioning.json", "ecs-running.json"}, job.Running, nil},
		{[]string{"ecs-running.json", "ecs-stopped-exit0.json"}, job.Succeeded, nil},
		{[]string{"ecs-running.json", "ecs-running.json", "ecs-stopped-exit0.json", "ecs-stopped-exit0.json"}, job.Succeeded, nil},
		{[]string{"ecs-stopped-exit0.json", "ecs-running.json"}, job.Succeeded, nil}, // out of order: the late RUNNING is stale
		{[]string{"ecs-running.json", "ecs-stopped-exit1.json"}, job.Failed, func(t *testing.T, j memstore.Job) {
			if j.Exit.Code != 1 || j.Exit.ProviderError {
				t.Errorf("got exit %+v, want code 1, not a provider error", j.Exit)
			}
		}},
		// Exit 75, the provider failed: the job waits again at its next
		// attempt, counted as a provider retry, once however often the
		// event comes.
		{[]string{"ecs-running.json", "ecs-stopped-provider-error.json", "ecs-stopped-provider-error.json"}, job.Waiting, func(t *testing.T, j memstore.Job) {
			if j.Attempt != 2 || j.ProviderRetries != 1 || j.Reason != "exit code 75: provider error" {
				t.Errorf("got attempt %d, %d provider retries, reason %q; want attempt 2, 1, the provider error", j.Attempt, j.ProviderRetries, j.Reason)
			}
		}},
		{[]string{"ecs-running.json", "ecs-spot-interruption.json"}, job.Waiting, func(t *testing.T, j memstore.Job) {
			if j.Attempt != 2 {
				t.Errorf("got attempt %d, want 2 after a spot interruption", j.Attempt)
			}
		}},
		{[]string{"ecs-failed-to-start.json"}, job.Waiting, nil},
		// The scheduler yielded the task before it ran: the job waits at its
		// next attempt, which is not spent (one more max attempt), with no
		// exit of its own.
		{[]string{"ecs-stopped-yielded.json"}, job.Waiting, func(t *testing.T, j memstore.Job) {
			if j.Attempt != 2 || j.MaxAttempts != 4 || j.Reason != YieldReason || j.Exit != (job.Exit{}) {
				t.Errorf("got attempt %d of %d, reason %q, exit %+v; want attempt 2 of 4, the yield's reason, no exit", j.Attempt, j.MaxAttempts, j.Reason, j.Exit)
			}
		}},
		{[]string{"ecs-running.json", "ecs-stopped-yielded.json", "ecs-stopped-yielded.json"}, job.Waiting, func(t *testing.T, j memstore.Job) {
			if j.Attempt != 2 || j.MaxAttempts != 4 {
				t.Errorf("got attempt %d of %d, want 2 of 4: a yield from RUNNING, once", j.Attempt, j.MaxAttempts)
			}
		}},
		// evalsched cancel --stop-running died before ending the job: its
		// task's STOPPED event, with the cancel reason, ends it CANCELLED.
		{[]string{"ecs-running.json", "ecs-stopped-cancelled.json"}, job.Cancelled, func(t *testing.T, j memstore.Job) {
			if !j.Exit.Cancelled || j.Exit.ProviderError {
				t.Errorf("got exit %+v, want cancelled, not a provider error", j.Exit)
			}
		}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.events), func(t *testing.T) {
			st, id := claimedJob(t)
			h := &Handler{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			for _, f := range c.events {
				invoke(t, h, f, id)
			}
			j, _ := st.Job(id)
			if j.State != c.state {
				t.Fatalf("got %s, want %s", j.State, c.state)
			}
			if c.check != nil {
				c.check(t, j)
			}
			if err := st.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHandlerDropsWhatItCannotUse(t *testing.T) {
	st, _ := claimedJob(t)
	h := &Handler{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, raw := range [][]byte{fixture(t, "ecs-not-evalsched.json"), []byte(`{"source":"aws.ec2"}`)} {
		if err := h.Handle(context.Background(), raw); err != nil {
			t.Errorf("got %v, want the event dropped without a retry", err)
		}
	}
}

func TestHandlerReturnsStoreErrorsForARetry(t *testing.T) {
	st, _ := claimedJob(t)
	h := &Handler{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// The fixture's job id is unknown to this store: the store refuses.
	if err := h.Handle(context.Background(), fixture(t, "ecs-running.json")); err == nil {
		t.Error("got no error for an event the store could not apply")
	}
}

func TestHandlerWritesJobTimings(t *testing.T) {
	for _, detail := range []emf.Detail{emf.Full, emf.Essential} {
		t.Run(string(detail), func(t *testing.T) { testJobTimings(t, detail) })
	}
}

func testJobTimings(t *testing.T, detail emf.Detail) {
	st, id := claimedJob(t)
	var metrics bytes.Buffer
	h := &Handler{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: &metrics, Namespace: "evalsched", Detail: detail}
	// The fixtures: submitted 12:00:30, created 12:00:52.123, running 12:01:38.456, stopped 12:11:05.
	for _, f := range []string{"ecs-running.json", "ecs-stopped-exit0.json"} {
		var ev map[string]any
		if err := json.Unmarshal(fixture(t, f), &ev); err != nil {
			t.Fatal(err)
		}
		d := ev["detail"].(map[string]any)
		d["startedBy"] = id
		env := d["overrides"].(map[string]any)["containerOverrides"].([]any)[0].(map[string]any)
		env["environment"] = append(env["environment"].([]any), map[string]any{"name": "EVALSCHED_SUBMITTED_AT", "value": "2026-11-29T12:00:30Z"})
		raw, _ := json.Marshal(ev)
		if err := h.Handle(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
	}
	var docs []map[string]any
	dec := json.NewDecoder(&metrics)
	for dec.More() {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d metric documents, want one at start and one at stop", len(docs))
	}
	near := func(got any, want float64) bool { f, ok := got.(float64); return ok && f > want-0.01 && f < want+0.01 }
	if !near(docs[0]["JobWaitSeconds"], 68.456) || !near(docs[0]["StartSeconds"], 46.333) || docs[0]["Model"] != "gpt-5.5" {
		t.Errorf("start: got %v", docs[0])
	}
	run := 566.544 // 12:01:38.456 → 12:11:05
	if !near(docs[1]["JobRunSeconds"], run) || !near(docs[1]["JobWaitShare"], 68.456/(68.456+run)) {
		t.Errorf("stop: got %v", docs[1])
	}
	// Full: by Model; Essential: one set for the account, Model a property.
	dims := docs[1]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"].([]any)[0].([]any)
	if want := map[emf.Detail]int{emf.Full: 1, emf.Essential: 0}[detail]; len(dims) != want {
		t.Errorf("%s: dimensions %v, want %d", detail, dims, want)
	}
}

// failingWriter refuses every write, as a closed stdout would.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

// A handler without a Log logs a failed metrics write to slog's default
// logger, as it does everything else, rather than dereferencing nil; the
// event is still applied.
func TestHandlerWithoutLogReportsAFailedMetricsWrite(t *testing.T) {
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	st, id := claimedJob(t)
	h := &Handler{Store: st, Metrics: failingWriter{}, Namespace: "evalsched"}
	invoke(t, h, "ecs-running.json", id)
	if j, _ := st.Job(id); j.State != job.Running {
		t.Errorf("job is %s, want RUNNING", j.State)
	}
	if !strings.Contains(logged.String(), "write job metrics") || !strings.Contains(logged.String(), "closed") {
		t.Errorf("the default logger got %q, want the failed metrics write", logged.String())
	}
}

// recordingStore keeps the exits the handler passes on.
type recordingStore struct{ exits []job.Exit }

func (*recordingStore) TaskStarted(context.Context, string, int, time.Time) error { return nil }
func (r *recordingStore) TaskStopped(_ context.Context, _ string, _ int, exit job.Exit, _ time.Time) error {
	r.exits = append(r.exits, exit)
	return nil
}

// TestHandlerPassesAYield: the yield's STOPPED event reaches the store as
// Exit{Yielded: true} with the yield's reason, and nothing else set.
func TestHandlerPassesAYield(t *testing.T) {
	st := &recordingStore{}
	h := &Handler{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	invoke(t, h, "ecs-stopped-yielded.json", "5b0e8a9c1d2f3a4b5c6d7e8f9a0b1c2d")
	if want := (job.Exit{Yielded: true, Reason: YieldReason}); len(st.exits) != 1 || st.exits[0] != want {
		t.Errorf("store got %+v, want [%+v]", st.exits, want)
	}
}
