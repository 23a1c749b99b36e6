package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestCancelTakesTheWaitingJobsOfTheScope(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b1, b2 := batch("lab", "sweep", "b1", "gpt", -1, 150), batch("lab", "other", "b2", "gpt", -1, 5)
	submit(t, s, b1)
	submit(t, s, b2)
	claimed := commit(t, s, grant(t0, b1, 10))
	// A retried job goes back in its place: cancel takes it too.
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: claimed[0].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"}}); err != nil {
		t.Fatal(err)
	}
	n, err := s.Cancel(ctx, scheduler.Scope{Account: "lab", Project: "sweep"}, t0)
	if err != nil || n != 141 {
		t.Fatalf("got %d, %v; want b1's 141 waiting jobs (150 − 10 claimed + 1 retried)", n, err)
	}
	c := counts(t, s)
	if c[job.Cancelled] != 141 || c[job.Claimed] != 9 || c[job.Waiting] != 5 {
		t.Errorf("got %v, want 141 cancelled, 9 claimed kept, b2's 5 waiting", c)
	}
	if err := checkErr(dump(t, s)); err != nil {
		t.Fatal(err)
	}
	// The pass sees only b2 now.
	snap := snapshot(t, s)
	if len(snap.Queues) != 1 || snap.Queues[0].Batch != "b2" {
		t.Errorf("got queues %+v, want only b2", snap.Queues)
	}
	if j := jobAt(t, s, b1, 149); j.State != job.Cancelled {
		t.Errorf("got %s, want CANCELLED", j.State)
	}
}

func TestSubmitRecordsTheParts(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for _, part := range []int{2, 3, 2} { // out of order, and a redelivery
		b := batch("lab", "sweep", "multi", "gpt", -1, 4)
		for i := range b.Jobs {
			b.Jobs[i].Key = fmt.Sprintf("p%d-%d", part, i)
		}
		b.Part, b.Parts = part, 3
		if _, err := s.Submit(ctx, b, t0); err != nil {
			t.Fatal(err)
		}
	}
	seen, total, err := s.BatchParts(ctx, "lab", "sweep", "multi")
	if err != nil || total != 3 || !slices.Equal(seen, []int{2, 3}) {
		t.Fatalf("got parts %v of %d, %v; want 2 and 3 of 3", seen, total, err)
	}
	if c := counts(t, s); c[job.Waiting] != 8 {
		t.Errorf("got %v, want the 8 jobs of two parts waiting", c)
	}
	if _, total, _ := s.BatchParts(ctx, "lab", "sweep", "none"); total != 0 {
		t.Errorf("an unknown batch has %d parts", total)
	}
}

// A running job whose task an operator stopped ends CANCELLED: its slot is
// freed, and the breaker counts no outcome for it.
func TestStoppedByAnOperatorEndsCancelled(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 3)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 2))
	launchAll(t, s, jobs)
	if err := s.TaskStarted(ctx, jobs[0].ID, 1, t0); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs { // one running, one still starting
		if err := s.TaskStopped(ctx, j.ID, 1, job.Exit{Code: -1, Cancelled: true, Reason: "cancelled by an operator"}, t0); err != nil {
			t.Fatal(err)
		}
		if got := jobAt(t, s, b, slices.IndexFunc(b.Jobs, func(js job.JobSpec) bool { return js.Key == j.Key })); got.State != job.Cancelled || got.Reason != "cancelled by an operator" {
			t.Errorf("job %s: got %s %q, want CANCELLED", j.Key, got.State, got.Reason)
		}
	}
	m := modelOf(t, snapshot(t, s), "gpt")
	if m.Running+m.Starting != 0 || m.Outcomes.OK+m.Outcomes.ProviderFailed != 0 {
		t.Errorf("got %d running, %d starting, outcomes %+v; want none", m.Running, m.Starting, m.Outcomes)
	}
	check(t, s)
}
