package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func spec(name, model string, n int) job.BatchSpec {
	b := job.BatchSpec{Account: "lab", Project: "sweep", Batch: name, Model: model, Tier: -1}
	for i := range n {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("k%03d", i), Env: map[string]string{"I": fmt.Sprint(i)}})
	}
	return b
}

// claim commits a plan granting n jobs of one queue.
func claim(t *testing.T, s *Store, model, batch string, n int) []scheduler.Job {
	t.Helper()
	plan := scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: model, Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "lab", Project: "sweep", Batch: batch, Model: model}, Count: n,
	}}}}}
	committed, err := s.Commit(context.Background(), plan, nil)
	jobs := committed.Claimed
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func keys(jobs []scheduler.Job) string {
	var ks []string
	for _, j := range jobs {
		ks = append(ks, j.Key)
	}
	return strings.Join(ks, ",")
}

func TestSubmitIsIdempotent(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	if n, err := s.Submit(context.Background(), spec("b", "gpt", 5), t0); n != 5 || err != nil {
		t.Fatalf("got %d, %v; want 5 created", n, err)
	}
	if n, err := s.Submit(context.Background(), spec("b", "gpt", 5), t0); n != 0 || err != nil {
		t.Fatalf("redelivery: got %d, %v; want nothing new", n, err)
	}
	if n, err := s.Submit(context.Background(), spec("b", "gpt", 6), t0); n != 1 || err != nil {
		t.Fatalf("a message with one more job: got %d, %v; want it created", n, err)
	}
}

// TestSubmitRefusesConflicts: a message that disagrees with its stored
// batch is refused whole, with a reason naming each field, and leaves the
// stored jobs and parts as they were.
func TestSubmitRefusesConflicts(t *testing.T) {
	parted := func(part, parts int, keys ...string) job.BatchSpec {
		b := job.BatchSpec{Account: "lab", Project: "sweep", Batch: "p", Model: "gpt", Tier: -1, Part: part, Parts: parts}
		for _, k := range keys {
			b.Jobs = append(b.Jobs, job.JobSpec{Key: k})
		}
		return b
	}
	changedEnv := spec("b", "gpt", 6)
	changedEnv.Jobs[2].Env["I"] = "other"
	changedModel := spec("b", "gpt", 5)
	changedModel.Jobs[1].Model = "claude"
	tier := spec("b", "gpt", 5)
	tier.Tier = 0
	td := spec("b", "gpt", 5)
	td.TaskDefinition = "eval:2"
	for _, tc := range []struct {
		name   string
		stored []job.BatchSpec
		msg    job.BatchSpec
		reason string
	}{
		{"env", []job.BatchSpec{spec("b", "gpt", 5)}, changedEnv, `jobs[2].env: differs from the stored job "k002" in I`},
		{"model", []job.BatchSpec{spec("b", "gpt", 5)}, changedModel, `jobs[1].model: "claude", but the stored job "k001" runs "gpt"`},
		{"tier", []job.BatchSpec{spec("b", "gpt", 5)}, tier, "tier: 0, but the batch was stored with none (the default tier)"},
		{"task definition", []job.BatchSpec{spec("b", "gpt", 5)}, td, `task_definition: "eval:2", but the batch was stored with ""`},
		{"part 2 of 3 into 2 parts", []job.BatchSpec{parted(1, 2, "a")}, parted(2, 3, "b"), "parts: 3, but the batch was stored in 2 parts"},
		{"two different part 2s", []job.BatchSpec{parted(1, 2, "a"), parted(2, 2, "b")}, parted(2, 2, "c"), "part: part 2 of this batch was stored with other jobs; a part sent again must be the same"},
		{"part-less into parts", []job.BatchSpec{parted(1, 2, "a")}, parted(0, 0, "z"), "parts: missing, but the batch was stored in 2 parts; a message without part and parts cannot join it"},
		{"part into part-less", []job.BatchSpec{parted(0, 0, "a")}, parted(1, 2, "z"), "parts: 2, but the batch was stored from messages without part and parts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := New(scheduler.ModelConfig{})
			for _, b := range tc.stored {
				if _, err := s.Submit(ctx, b, t0); err != nil {
					t.Fatal(err)
				}
			}
			before := s.Counts()
			parts, total, _ := s.BatchParts(ctx, "lab", "sweep", tc.msg.Batch)
			n, err := s.Submit(ctx, tc.msg, t0)
			var ce *job.ConflictError
			if n != 0 || !errors.As(err, &ce) || !errors.Is(err, job.ErrConflict) || !slices.Contains(ce.Reasons, tc.reason) {
				t.Fatalf("got %d created, %v; want none and a conflict %q", n, err, tc.reason)
			}
			if after := s.Counts(); after != before {
				t.Errorf("counts %+v after the conflict, want %+v as before", after, before)
			}
			if p, n, _ := s.BatchParts(ctx, "lab", "sweep", tc.msg.Batch); !slices.Equal(p, parts) || n != total {
				t.Errorf("parts %v of %d after the conflict, want %v of %d", p, n, parts, total)
			}
			if j, _ := s.Job(job.JobID("lab", "sweep", "b", "k002")); tc.name == "env" && j.Env["I"] != "2" {
				t.Errorf("a conflicting submit changed the job: env %v", j.Env)
			}
			// The stored batch's own messages are still a no-op.
			for _, b := range tc.stored {
				if n, err := s.Submit(ctx, b, t0); n != 0 || err != nil {
					t.Errorf("stored message again: got %d, %v; want 0, nil", n, err)
				}
			}
		})
	}
}

// TestConflictReasonsAreBounded: 20,000 changed jobs are reported by ten
// reasons, the last counting the rest.
func TestConflictReasonsAreBounded(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	b := spec("b", "gpt", 20_000)
	if _, err := s.Submit(context.Background(), b, t0); err != nil {
		t.Fatal(err)
	}
	for _, j := range b.Jobs {
		j.Env["I"] = "x"
	}
	_, err := s.Submit(context.Background(), b, t0)
	var ce *job.ConflictError
	if !errors.As(err, &ce) || len(ce.Reasons) != 10 || ce.Reasons[9] != "and 19991 more" {
		t.Fatalf("got %v, want 9 reasons and \"and 19991 more\"", err)
	}
}

func TestClaimsOldestFirstAndRetriesInPlace(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	if _, err := s.Submit(context.Background(), spec("b", "gpt", 6), t0); err != nil {
		t.Fatal(err)
	}
	first := claim(t, s, "gpt", "b", 3)
	if got := keys(first); got != "k000,k001,k002" {
		t.Fatalf("got %s, want the three oldest", got)
	}
	// k001's launch fails for capacity: it goes back and is claimed next.
	err := s.RecordLaunches(context.Background(), t0, []scheduler.LaunchResult{
		{JobID: first[0].ID, Attempt: 1, Status: scheduler.Launched},
		{JobID: first[1].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"},
		{JobID: first[2].ID, Attempt: 1, Status: scheduler.Launched},
	})
	if err != nil {
		t.Fatal(err)
	}
	again := claim(t, s, "gpt", "b", 2)
	if got := keys(again); got != "k001,k003" {
		t.Fatalf("got %s, want the retried job before newer ones", got)
	}
	if again[0].Attempt != 2 {
		t.Errorf("got attempt %d, want 2", again[0].Attempt)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestTaskEventsAreIdempotentAndIgnoreStaleAttempts(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	if _, err := s.Submit(context.Background(), spec("b", "gpt", 1), t0); err != nil {
		t.Fatal(err)
	}
	j := claim(t, s, "gpt", "b", 1)[0]
	for range 2 { // a duplicated RUNNING event counts once
		if err := s.TaskStarted(context.Background(), j.ID, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	if c := s.Counts(); c.Running != 1 {
		t.Fatalf("got %+v, want 1 running", c)
	}
	// A spot interruption returns it to waiting as attempt 2 ...
	if err := s.TaskStopped(context.Background(), j.ID, 1, job.Exit{Infrastructure: true, Reason: "SpotInterruption"}, t0); err != nil {
		t.Fatal(err)
	}
	// ... and a late STOPPED of attempt 1 changes nothing.
	if err := s.TaskStopped(context.Background(), j.ID, 1, job.Exit{Code: 0}, t0); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Job(j.ID)
	if got.State != job.Waiting || got.Attempt != 2 {
		t.Fatalf("got %s attempt %d, want WAITING attempt 2", got.State, got.Attempt)
	}
	j2 := claim(t, s, "gpt", "b", 1)[0]
	if err := s.TaskStopped(context.Background(), j2.ID, 2, job.Exit{Code: 1, ProviderError: true}, t0); err != nil {
		t.Fatal(err)
	}
	snap, _ := s.Snapshot(context.Background(), t0)
	if o := snap.Models[0].Outcomes; o.ProviderFailed != 1 || o.OK != 0 {
		t.Errorf("got outcomes %+v, want one provider failure", o)
	}
	if err := s.TaskStarted(context.Background(), "nope", 1, t0); err == nil {
		t.Error("an unknown job id gave no error")
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestStopEventsCountOnce: a repeated STOPPED event of an ended job, and a
// late STOPPED of an attempt since retried while the next attempt runs,
// change nothing: no second outcome for the breaker, no end of the running
// attempt.
func TestStopEventsCountOnce(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	if _, err := s.Submit(ctx, spec("b", "gpt", 2), t0); err != nil {
		t.Fatal(err)
	}
	jobs := claim(t, s, "gpt", "b", 2)
	done, retried := jobs[0], jobs[1]
	for _, ex := range []job.Exit{{Code: 0}, {Code: 0}, {Code: 1, ProviderError: true}} { // the first, then repeats
		if err := s.TaskStopped(ctx, done.ID, 1, ex, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TaskStopped(ctx, retried.ID, 1, job.Exit{Infrastructure: true, Reason: "SpotInterruption"}, t0); err != nil {
		t.Fatal(err)
	}
	again := claim(t, s, "gpt", "b", 1)
	if len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("re-claim: %+v, want attempt 2", again)
	}
	if err := s.TaskStarted(ctx, retried.ID, 2, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, retried.ID, 1, job.Exit{Code: 1, ProviderError: true}, t0); err != nil { // attempt 1's, late
		t.Fatal(err)
	}
	if j, _ := s.Job(done.ID); j.State != job.Succeeded || j.Exit.Code != 0 {
		t.Errorf("ended job: %s exit %d, want SUCCEEDED exit 0 as first stopped", j.State, j.Exit.Code)
	}
	if j, _ := s.Job(retried.ID); j.State != job.Running || j.Attempt != 2 {
		t.Errorf("retried job: %s attempt %d, want attempt 2 RUNNING", j.State, j.Attempt)
	}
	snap, _ := s.Snapshot(ctx, t0)
	if m := snap.Models[0]; m.Outcomes.OK != 1 || m.Outcomes.ProviderFailed != 0 || m.Running != 1 {
		t.Errorf("outcomes %+v, running %d; want one OK and one running", m.Outcomes, m.Running)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestCommitAcknowledgesOutcomesOnce(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	if _, err := s.Submit(context.Background(), spec("b", "gpt", 2), t0); err != nil {
		t.Fatal(err)
	}
	for _, j := range claim(t, s, "gpt", "b", 2) {
		if err := s.TaskStopped(context.Background(), j.ID, 1, job.Exit{Code: 0}, t0); err != nil {
			t.Fatal(err)
		}
	}
	snap, _ := s.Snapshot(context.Background(), t0)
	seen := snap.Models[0].Outcomes
	if seen.OK != 2 {
		t.Fatalf("got %+v, want 2 OK", seen)
	}
	plan := scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: "gpt", Ack: seen}}}
	if _, err := s.Commit(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	snap, _ = s.Snapshot(context.Background(), t0)
	if o := snap.Models[0].Outcomes; o.OK != 0 {
		t.Errorf("got %+v after the acknowledgement, want none", o)
	}
}

func TestPendingRaiseCountsLaunchesUpToTheRaise(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	if _, err := s.Submit(context.Background(), spec("b", "gpt", 4), t0); err != nil {
		t.Fatal(err)
	}
	claim(t, s, "gpt", "b", 2) // claimed at t0
	snap, _ := s.Snapshot(context.Background(), t0)
	st := snap.Models[0].State
	st.Limit.FilledAt = t0 // the raise's launches were all claimed by t0
	later := scheduler.Plan{At: t0.Add(10 * time.Second), Models: []scheduler.ModelPlan{{Model: "gpt", State: st, Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "lab", Project: "sweep", Batch: "b", Model: "gpt"}, Count: 2,
	}}}}}
	if _, err := s.Commit(context.Background(), later, nil); err != nil {
		t.Fatal(err)
	}
	snap, _ = s.Snapshot(context.Background(), t0)
	if m := snap.Models[0]; m.Starting != 4 || m.PendingRaise != 2 {
		t.Errorf("got starting %d pending %d, want 4 and 2", m.Starting, m.PendingRaise)
	}
}

func TestCancelTakesTheWaitingJobsOfTheScope(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	for _, name := range []string{"b1", "b2"} {
		if _, err := s.Submit(ctx, spec(name, "gpt", 3), t0); err != nil {
			t.Fatal(err)
		}
	}
	claim(t, s, "gpt", "b1", 1)
	n, err := s.Cancel(ctx, scheduler.Scope{Account: "lab", Project: "sweep", Batch: "b1"}, t0)
	if err != nil || n != 2 {
		t.Fatalf("got %d, %v; want the two waiting jobs of b1", n, err)
	}
	c := s.Counts()
	if c.Cancelled != 2 || c.Claimed != 1 || c.Waiting != 3 {
		t.Errorf("got %+v, want 2 cancelled, the claimed one kept, b2's 3 waiting", c)
	}
	if n, _ := s.Cancel(ctx, scheduler.Scope{Account: "lab"}, t0); n != 3 {
		t.Errorf("cancelling the account took %d, want b2's 3", n)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestSubmitRecordsTheParts(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	for _, part := range []int{3, 1} {
		b := spec("multi", "gpt", 2)
		for i := range b.Jobs {
			b.Jobs[i].Key = fmt.Sprintf("p%d-%d", part, i)
		}
		b.Part, b.Parts = part, 3
		if _, err := s.Submit(ctx, b, t0); err != nil {
			t.Fatal(err)
		}
	}
	if seen, total, _ := s.BatchParts(ctx, "lab", "sweep", "multi"); total != 3 || len(seen) != 2 || seen[0] != 1 || seen[1] != 3 {
		t.Errorf("got parts %v of %d, want 1 and 3 of 3", seen, total)
	}
}

// TestYieldedJobKeepsItsAttempts: a job of max attempts 3 yielded three
// times (from LAUNCHED, RUNNING and CLAIMED) still waits, claimed again
// ahead of its queue's newer jobs, each time at the next attempt with one
// more max attempt; a late copy of a yield changes nothing and the breaker
// counts nothing. Then real failures to start still get the job's three
// attempts, and the last fails it. Check holds throughout (as the DynamoDB
// store's test of the same name).
func TestYieldedJobKeepsItsAttempts(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	b := spec("b", "gpt", 3)
	b.MaxAttempts = 3
	if _, err := s.Submit(ctx, b, t0); err != nil {
		t.Fatal(err)
	}
	yield := job.Exit{Yielded: true, Reason: "UserInitiated: evalsched: yielded"}
	claimFirst := func(attempt int) scheduler.Job {
		t.Helper()
		got := claim(t, s, "gpt", "b", 1)
		if len(got) != 1 || got[0].Key != "k000" || got[0].Attempt != attempt {
			t.Fatalf("got %+v, want k000 at attempt %d, ahead of the newer jobs", got, attempt)
		}
		return got[0]
	}
	launch := func(j scheduler.Job) {
		t.Helper()
		if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: "arn"}}); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(j scheduler.Job, exit job.Exit) {
		t.Helper()
		if err := s.TaskStopped(ctx, j.ID, j.Attempt, exit, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
	}
	waits := func(id string, attempt, maxAttempts int) {
		t.Helper()
		j, _ := s.Job(id)
		if j.State != job.Waiting || j.Attempt != attempt || j.MaxAttempts != maxAttempts || j.Reason != yield.Reason || j.TaskARN != "" {
			t.Fatalf("got %s attempt %d of %d (%q, task %q), want WAITING attempt %d of %d with the yield's reason",
				j.State, j.Attempt, j.MaxAttempts, j.Reason, j.TaskARN, attempt, maxAttempts)
		}
		snap, _ := s.Snapshot(ctx, t0)
		if m := snap.Models[0]; m.Starting != 0 || m.Running != 0 || m.Outcomes.OK != 0 || m.Outcomes.ProviderFailed != 0 {
			t.Errorf("model after the yield: starting %d running %d outcomes %+v, want none", m.Starting, m.Running, m.Outcomes)
		}
		if c := s.Counts(); c.Waiting != 3 {
			t.Errorf("counts %+v, want all 3 waiting", c)
		}
	}

	j := claimFirst(1)
	launch(j)
	stop(j, yield)
	waits(j.ID, 2, 4)
	stop(j, yield) // the late copy
	waits(j.ID, 2, 4)
	j = claimFirst(2)
	launch(j)
	if err := s.TaskStarted(ctx, j.ID, j.Attempt, t0); err != nil {
		t.Fatal(err)
	}
	stop(j, job.Exit{Yielded: true, Code: 143, Reason: yield.Reason})
	waits(j.ID, 3, 5)
	j = claimFirst(3)
	stop(j, yield)
	waits(j.ID, 4, 6)

	failed := job.Exit{Infrastructure: true, Reason: "TaskFailedToStart: CannotPullContainerError"}
	for attempt := 4; attempt <= 6; attempt++ {
		j = claimFirst(attempt)
		launch(j)
		stop(j, failed)
	}
	got, _ := s.Job(j.ID)
	if got.State != job.Failed || got.Attempt != 6 || got.MaxAttempts != 6 || got.Reason != failed.Reason+" (attempt 6 of 6)" {
		t.Errorf("got %s attempt %d of %d (%q), want FAILED at attempt 6 of 6", got.State, got.Attempt, got.MaxAttempts, got.Reason)
	}
	if next := keys(claim(t, s, "gpt", "b", 3)); next != "k001,k002" {
		t.Errorf("then claimed %s, want the two newer jobs", next)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// Provider failures send their jobs back to waiting, and the breaker they
// feed gates those retries: 25 jobs whose provider failed them all wait
// again at attempt 2, and the next pass, its breaker open, admits none.
func TestProviderRetriesWaitForTheBreaker(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	if _, err := s.Submit(ctx, spec("b", "gpt", 25), t0); err != nil {
		t.Fatal(err)
	}
	for _, j := range claim(t, s, "gpt", "b", 25) {
		if err := s.TaskStopped(ctx, j.ID, j.Attempt, job.Exit{Code: 75, ProviderError: true}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if c := s.Counts(); c.Waiting != 25 || c.Failed != 0 || c.ProviderRetries != 25 {
		t.Fatalf("counts %+v, want 25 waiting again, 25 provider retries, none failed", c)
	}
	snap, err := s.Snapshot(ctx, t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	plan := scheduler.Decide(scheduler.DefaultConfig(), snap, nil, t0.Add(10*time.Second))
	if len(plan.Models) != 1 || plan.Models[0].Breaker.State.Phase == breaker.Closed || plan.Models[0].Admitted != 0 {
		t.Errorf("plan %+v; want the breaker open and no retry admitted", plan.Models)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

// TestCommitClaimsNothingOfAScopePausedSinceTheSnapshot: a plan decided
// before a pause (or a cancel's mark) and committed after it claims
// nothing of the paused scope, as the DynamoDB store's claims refuse a
// marked queue; the rest of the plan is claimed.
func TestCommitClaimsNothingOfAScopePausedSinceTheSnapshot(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 40, InitialLimit: 10})
	for _, b := range []job.BatchSpec{spec("cx", "gpt", 5), spec("b2", "gpt", 5)} {
		if _, err := s.Submit(ctx, b, t0); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := s.Snapshot(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	plan := scheduler.Decide(scheduler.DefaultConfig(), snap, map[string]scheduler.Depth{}, t0)
	if err := s.SetPaused(ctx, "batch#lab/sweep/cx", true, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.Commit(ctx, plan, snap.Versions)
	if err != nil {
		t.Fatal(err)
	}
	batches := map[string]int{}
	for _, j := range got.Claimed {
		batches[j.Batch]++
	}
	if batches["cx"] != 0 || batches["b2"] == 0 {
		t.Errorf("claimed by batch %v; want none of the paused cx, some of b2", batches)
	}
}
