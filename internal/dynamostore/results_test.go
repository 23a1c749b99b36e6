package dynamostore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
)

// TestRecordResultPerAttempt: a verdict is kept for the job's current
// attempt only; a stale attempt's, a repeat and one for a job that never
// ran change nothing; a later attempt's replaces an earlier one's.
func TestRecordResultPerAttempt(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("acme", "p", "b", "gpt", 1, 2)
	submit(t, s, b)
	j := commit(t, s, grant(t0, b, 1))[0]
	launchAll(t, s, nil)
	waiting := jobAt(t, s, b, 1)
	score := 0.75
	record := func(id string, r memstore.Result) bool {
		t.Helper()
		ok, err := s.RecordResult(ctx, id, r)
		if err != nil {
			t.Fatalf("RecordResult: %v", err)
		}
		return ok
	}
	if record(waiting.ID, memstore.Result{Attempt: 1, Pass: true, At: t0}) {
		t.Error("a waiting job's result was recorded")
	}
	if record(j.ID, memstore.Result{Attempt: 2, Pass: true, At: t0}) {
		t.Error("a result for an attempt the job has not reached was recorded")
	}
	if !record(j.ID, memstore.Result{Attempt: 1, Pass: false, Score: &score, At: t0}) {
		t.Fatal("the current attempt's result was not recorded")
	}
	if record(j.ID, memstore.Result{Attempt: 1, Pass: true, At: t0}) {
		t.Error("a repeated result was recorded")
	}
	r, ok, err := s.JobResult(ctx, j.ID)
	if err != nil || !ok || r.Pass || r.Attempt != 1 || r.Score == nil || *r.Score != 0.75 || !r.At.Equal(t0) {
		t.Errorf("JobResult = %+v, %v, %v; want the first verdict (fail, 0.75, attempt 1)", r, ok, err)
	}

	// The task is lost; attempt 2 runs and reports; attempt 1's late
	// duplicate is stale.
	if err := s.TaskStopped(ctx, j.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	j2 := commit(t, s, grant(t0, b, 1))[0]
	if j2.ID != j.ID || j2.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d, want %s attempt 2", j2.ID, j2.Attempt, j.ID)
	}
	if record(j.ID, memstore.Result{Attempt: 1, Pass: true, At: t0}) {
		t.Error("attempt 1's result was recorded while attempt 2 runs")
	}
	if !record(j.ID, memstore.Result{Attempt: 2, Pass: true, At: t0}) {
		t.Fatal("attempt 2's result was not recorded")
	}
	if r, _, _ := s.JobResult(ctx, j.ID); !r.Pass || r.Attempt != 2 || r.Score != nil {
		t.Errorf("JobResult = %+v, want attempt 2's pass without a score", r)
	}

	_, err = s.RecordResult(ctx, strings.Repeat("f", 32), memstore.Result{Attempt: 1})
	if !errors.Is(err, memstore.ErrUnknownJob) {
		t.Errorf("unknown job: %v, want ErrUnknownJob", err)
	}
}
