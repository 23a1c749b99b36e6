package dynamostore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// yieldExit is what the task-events function passes on for a task the
// scheduler stopped while it was starting (taskevent.YieldReason).
var yieldExit = job.Exit{Yielded: true, Reason: "UserInitiated: evalsched: yielded"}

// TestYieldedJobKeepsItsAttempts: a job of max attempts 3 yielded three
// times (from LAUNCHED, RUNNING and CLAIMED) still waits, ahead of its
// queue's newer jobs, each time at the next attempt with one more max
// attempt, written in the one transaction of the move; a late copy of a
// yield changes nothing; the breaker counts nothing. Then real failures to
// start still get the job's three attempts, and the last fails it; every
// counter agrees with the jobs throughout (check).
func TestYieldedJobKeepsItsAttempts(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	b := batch("lab", "sweep", "y", "gpt", -1, 3)
	b.MaxAttempts = 3
	submit(t, s, b)
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	claimFirst := func(n, attempt int) scheduler.Job {
		t.Helper()
		got := commit(t, s, grant(at(n), b, 1))
		if len(got) != 1 || got[0].Key != "y-0000" || got[0].Attempt != attempt {
			t.Fatalf("claim %d: got %+v, want y-0000 at attempt %d, ahead of the newer jobs", n, got, attempt)
		}
		return got[0]
	}
	stop := func(j scheduler.Job, exit job.Exit) {
		t.Helper()
		if err := s.TaskStopped(ctx, j.ID, j.Attempt, exit, at(100)); err != nil {
			t.Fatal(err)
		}
	}
	waits := func(attempt, maxAttempts int) {
		t.Helper()
		j := jobAt(t, s, b, 0)
		if j.State != job.Waiting || j.Attempt != attempt || j.MaxAttempts != maxAttempts || j.Reason != yieldExit.Reason || j.TaskARN != "" {
			t.Fatalf("got %s attempt %d of %d (%q, task %q), want WAITING attempt %d of %d with the yield's reason",
				j.State, j.Attempt, j.MaxAttempts, j.Reason, j.TaskARN, attempt, maxAttempts)
		}
		m := modelOf(t, snapshot(t, s), "gpt")
		if m.Starting != 0 || m.Running != 0 || m.Outcomes.OK != 0 || m.Outcomes.ProviderFailed != 0 {
			t.Errorf("model after the yield: starting %d running %d outcomes %+v, want none", m.Starting, m.Running, m.Outcomes)
		}
		check(t, s)
	}

	// 1. From LAUNCHED, in one transaction; its late copy changes nothing.
	j := claimFirst(1, 1)
	launchAll(t, s, []scheduler.Job{j})
	c.reset()
	stop(j, yieldExit)
	if st := c.stats(); st.Writes != 1 || st.ByOp["TransactWriteItems"] != 1 {
		t.Errorf("the yield wrote %v, want one transaction (state, attempt, max attempts and counters together)", st.ByOp)
	}
	waits(2, 4)
	stop(j, yieldExit)
	waits(2, 4)
	// 2. From RUNNING: the stop landed as the container began.
	j = claimFirst(2, 2)
	launchAll(t, s, []scheduler.Job{j})
	if err := s.TaskStarted(ctx, j.ID, j.Attempt, at(2)); err != nil {
		t.Fatal(err)
	}
	stop(j, job.Exit{Yielded: true, Code: 143, Reason: yieldExit.Reason})
	waits(3, 5)
	// 3. From CLAIMED, at attempt 3 of the batch's 3.
	j = claimFirst(3, 3)
	stop(j, yieldExit)
	waits(4, 6)

	// Real failures to start: three more attempts, then FAILED.
	failed := job.Exit{Infrastructure: true, Reason: "TaskFailedToStart: CannotPullContainerError"}
	for attempt := 4; attempt <= 6; attempt++ {
		j = claimFirst(attempt, attempt)
		if j.MaxAttempts != 6 {
			t.Errorf("claimed at attempt %d of %d, want of 6", j.Attempt, j.MaxAttempts)
		}
		launchAll(t, s, []scheduler.Job{j})
		stop(j, failed)
		check(t, s)
	}
	got := jobAt(t, s, b, 0)
	if got.State != job.Failed || got.Attempt != 6 || got.MaxAttempts != 6 || got.Reason != failed.Reason+" (attempt 6 of 6)" {
		t.Errorf("got %s attempt %d of %d (%q), want FAILED at attempt 6 of 6", got.State, got.Attempt, got.MaxAttempts, got.Reason)
	}
	if next := commit(t, s, grant(at(10), b, 3)); !slices.Equal(keys(next), []string{"y-0001", "y-0002"}) {
		t.Errorf("then claimed %v, want the two newer jobs", keys(next))
	}
	check(t, s)
}

// TestYieldAfterStopIsSkipped: a yield is a retry to persist's sampled
// path: a job of a stopped sampled batch yielded after the stop ends
// SKIPPED with the stop's reason at the attempt that ran, its max attempts
// as they were, as a retry does (TestRetryAfterStopIsSkipped).
func TestYieldAfterStopIsSkipped(t *testing.T) {
	ctx := context.Background()
	s, b, out := twoOutAtStop(t)
	for _, j := range out { // one LAUNCHED, one CLAIMED
		if err := s.TaskStopped(ctx, j.ID, 1, yieldExit, t0); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.Job(ctx, j.ID); got.MaxAttempts != 3 {
			t.Errorf("job %s skipped with max attempts %d, want 3 as submitted", j.Key, got.MaxAttempts)
		}
	}
	skippedAfterStop(t, s, b, out[0].ID, out[1].ID)
}
