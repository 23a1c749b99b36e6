package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func keys(jobs []scheduler.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Key
	}
	return out
}

// commit commits a plan made without a Snapshot (grant, a hand-built plan):
// no versions, so the states are written unconditioned and every grant is
// claimed one queue at a time.
func commit(t testing.TB, s *Store, plan scheduler.Plan) []scheduler.Job {
	t.Helper()
	return commitRead(t, s, plan, nil)
}

// commitRead commits a plan decided on a Snapshot whose Versions are read:
// the state writes conditioned on them, the grants of the queues it read
// batched.
func commitRead(t testing.TB, s *Store, plan scheduler.Plan, read scheduler.Versions) []scheduler.Job {
	t.Helper()
	c, err := s.Commit(context.Background(), plan, read)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Stale) > 0 {
		t.Fatalf("commit: stale %v", c.Stale)
	}
	return c.Claimed
}

func jobAt(t testing.TB, s *Store, b job.BatchSpec, i int) Job {
	t.Helper()
	j, ok, err := s.Job(context.Background(), job.JobID(b.Account, b.Project, b.Batch, b.Jobs[i].Key))
	if err != nil || !ok {
		t.Fatalf("job %d: ok %v err %v", i, ok, err)
	}
	return j
}

func launchAll(t testing.TB, s *Store, jobs []scheduler.Job) {
	t.Helper()
	var rs []scheduler.LaunchResult
	for _, j := range jobs {
		rs = append(rs, scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: "arn:task/" + j.ID})
	}
	if err := s.RecordLaunches(context.Background(), t0, rs); err != nil {
		t.Fatal(err)
	}
}

func snapshot(t testing.TB, s *Store) scheduler.Snapshot {
	t.Helper()
	snap, err := s.Snapshot(context.Background(), t0)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func modelOf(t testing.TB, snap scheduler.Snapshot, name string) scheduler.Model {
	t.Helper()
	for _, m := range snap.Models {
		if m.Config.Name == name {
			return m
		}
	}
	t.Fatalf("model %s not in snapshot (%d models)", name, len(snap.Models))
	return scheduler.Model{}
}

func TestSubmitIsIdempotentAndReportsConflicts(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", 1, 30)
	submit(t, s, b)

	// The same message again creates nothing.
	if n, err := s.Submit(ctx, b, t0.Add(time.Minute)); n != 0 || err != nil {
		t.Fatalf("redelivery: got %d created, err %v; want 0, nil", n, err)
	}
	// A second part with one new job, one repeated and one changed.
	part := job.BatchSpec{Account: "lab", Project: "sweep", Batch: "b1", Model: "gpt", Tier: 1, Jobs: []job.JobSpec{
		b.Jobs[3],
		{Key: b.Jobs[4].Key, Env: map[string]string{"I": "changed"}},
		{Key: "late", Env: map[string]string{"I": "late"}},
	}}
	n, err := s.Submit(ctx, part, t0.Add(time.Minute))
	if n != 0 || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `jobs[1].env: differs from the stored job "`+b.Jobs[4].Key+`" in I`) {
		t.Fatalf("got %d created, err %v; want none and a conflict naming jobs[1].env and %s", n, err, b.Jobs[4].Key)
	}
	if j := jobAt(t, s, b, 4); j.Env["I"] != "4" {
		t.Errorf("conflicting job changed: env %v", j.Env)
	}
	// Without the changed job, the message is stored.
	part.Jobs = slices.Delete(part.Jobs, 1, 2)
	if n, err := s.Submit(ctx, part, t0.Add(time.Minute)); n != 1 || err != nil {
		t.Fatalf("got %d created, err %v; want the late job created", n, err)
	}
	snap := snapshot(t, s)
	if len(snap.Queues) != 1 || snap.Queues[0].Waiting != 31 || snap.Queues[0].SubmittedTier != 1 {
		t.Fatalf("got queues %+v, want one with 31 waiting at tier 1", snap.Queues)
	}
	// Concurrent deliveries of one message: the lock serializes them.
	b2 := batch("lab", "sweep", "b2", "gpt", -1, 60)
	var wg sync.WaitGroup
	created := make([]int, 3)
	for i := range created {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if created[i], err = s.Submit(ctx, b2, t0); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if sum := created[0] + created[1] + created[2]; sum != 60 {
		t.Errorf("concurrent deliveries created %v jobs, want 60 in all", created)
	}
	check(t, s)
	if c := counts(t, s); c[job.Waiting] != 91 {
		t.Errorf("got %v, want 91 waiting", c)
	}
}

func TestSubmitRejectsSeparatorInNames(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.Submit(context.Background(), batch("la#b", "p", "b", "gpt", -1, 1), t0)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
}

func TestClaimTakesOldestFirstAndLeavesTheWaitingCount(t *testing.T) {
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 10)
	submit(t, s, b)
	got := commit(t, s, grant(t0, b, 4))
	if want := []string{"b1-0000", "b1-0001", "b1-0002", "b1-0003"}; !slices.Equal(keys(got), want) {
		t.Fatalf("got %v, want %v", keys(got), want)
	}
	for _, j := range got {
		if j.Tier != 1 || j.Attempt != 1 || j.MaxAttempts != 3 || j.Env["I"] == "" {
			t.Errorf("claimed %+v: want tier 1, attempt 1 of 3, env kept", j)
		}
	}
	snap := snapshot(t, s)
	if m := modelOf(t, snap, "gpt"); m.Starting != 4 || m.Running != 0 {
		t.Errorf("got starting %d running %d, want 4 and 0", m.Starting, m.Running)
	}
	if snap.Queues[0].Waiting != 6 {
		t.Errorf("got %d waiting, want 6", snap.Queues[0].Waiting)
	}
	// Granting more than wait claims what is there, and the queue leaves
	// the active index.
	got = commit(t, s, grant(t0.Add(10*time.Second), b, 50))
	if len(got) != 6 || got[0].Key != "b1-0004" {
		t.Fatalf("got %v, want the 6 left from b1-0004", keys(got))
	}
	if snap := snapshot(t, s); len(snap.Queues) != 0 {
		t.Errorf("got queues %+v, want none", snap.Queues)
	}
	check(t, s)
}

// TestClaimExactlyOnceUnderConcurrentPasses commits plans for the same
// queue from several stores (several Lambdas) at once.
func TestClaimExactlyOnceUnderConcurrentPasses(t *testing.T) {
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 700)
	submit(t, s, b)
	const passes, rounds = 3, 2
	got := make([][]scheduler.Job, passes)
	var wg sync.WaitGroup
	for i := range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := New(client, s.tables, defaults())
			// Several rounds, so that passes overlap mid-claim too.
			for range rounds {
				c, err := other.Commit(context.Background(), grant(t0, b, 100), nil)
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = append(got[i], c.Claimed...)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, jobs := range got {
		for _, j := range jobs {
			if seen[j.ID] {
				t.Fatalf("job %s claimed twice", j.Key)
			}
			seen[j.ID] = true
		}
	}
	c := counts(t, s)
	if c[job.Claimed] != len(seen) || c[job.Claimed]+c[job.Waiting] != 700 {
		t.Fatalf("claimed %d, table has %v: want every claim returned and nothing lost", len(seen), c)
	}
	if len(seen) != passes*rounds*100 {
		t.Errorf("got %d claimed, want %d (all grants fit in the queue)", len(seen), passes*rounds*100)
	}
	check(t, s)
}

func TestStaleSnapshotCommitsNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 10)
	submit(t, s, b)
	other := New(client, s.tables, defaults())
	snap1, snap2 := snapshot(t, s), snapshot(t, other)
	plan1 := scheduler.Decide(scheduler.DefaultConfig(), snap1, nil, t0)
	// The other pass runs at the same aligned time (a lease gone wrong).
	plan2 := scheduler.Decide(scheduler.DefaultConfig(), snap2, nil, t0)
	if jobs := commitRead(t, s, plan1, snap1.Versions); len(jobs) != 10 {
		t.Fatalf("first pass claimed %d, want 10 (initial limit)", len(jobs))
	}
	// A retry of the very same plan is harmless (it finds nothing left).
	if jobs := commitRead(t, s, plan1, snap1.Versions); len(jobs) != 0 {
		t.Fatalf("re-commit claimed %d, want 0", len(jobs))
	}
	c, err := other.Commit(ctx, plan2, snap2.Versions)
	if err != nil || len(c.Claimed) != 0 || !slices.Equal(c.Stale, []string{"gpt"}) {
		t.Fatalf("overlapping pass: got %d jobs, stale %v, err %v; want none, stale [gpt], no error", len(c.Claimed), c.Stale, err)
	}
	check(t, s)
}

func TestRetriedJobsGoBackInTheirPlace(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 8)
	submit(t, s, b)
	got := commit(t, s, grant(t0, b, 3))
	// b1-0001 finds no capacity; the others launch.
	rs := []scheduler.LaunchResult{
		{JobID: got[0].ID, Attempt: 1, Status: scheduler.Launched, TaskARN: "arn:0"},
		{JobID: got[1].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"},
		{JobID: got[2].ID, Attempt: 1, Status: scheduler.Launched, TaskARN: "arn:2"},
	}
	if err := s.RecordLaunches(ctx, t0, rs); err != nil {
		t.Fatal(err)
	}
	if j := jobAt(t, s, b, 1); j.State != job.Waiting || j.Attempt != 2 || j.Reason != "capacity" {
		t.Fatalf("got %s attempt %d (%q), want WAITING attempt 2 (capacity)", j.State, j.Attempt, j.Reason)
	}
	// The same results again change nothing.
	if err := s.RecordLaunches(ctx, t0, rs); err != nil {
		t.Fatal(err)
	}
	check(t, s)
	// b1-0000's task is lost to infrastructure: it goes back too, ahead.
	if err := s.TaskStopped(ctx, got[0].ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	got = commit(t, s, grant(t0.Add(10*time.Second), b, 3))
	if want := []string{"b1-0000", "b1-0001", "b1-0003"}; !slices.Equal(keys(got), want) {
		t.Fatalf("got %v, want %v: retried jobs before newer ones", keys(got), want)
	}
	if got[0].Attempt != 2 || got[1].Attempt != 2 || got[2].Attempt != 1 {
		t.Errorf("got attempts %d %d %d, want 2 2 1", got[0].Attempt, got[1].Attempt, got[2].Attempt)
	}
	check(t, s)
}

func TestAttemptsExhaustedFailWithTheReason(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 1)
	b.MaxAttempts = 2
	submit(t, s, b)
	for attempt := 1; attempt <= 2; attempt++ {
		got := commit(t, s, grant(t0.Add(time.Duration(attempt)*time.Second), b, 1))
		if len(got) != 1 || got[0].Attempt != attempt {
			t.Fatalf("attempt %d: claimed %+v", attempt, got)
		}
		err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: got[0].ID, Attempt: attempt, Status: scheduler.Retry, Reason: "capacity"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	j := jobAt(t, s, b, 0)
	if j.State != job.Failed || !strings.Contains(j.Reason, "capacity (attempt 2 of 2)") || j.EndedAt.IsZero() {
		t.Fatalf("got %s (%q), want FAILED with the attempts in the reason", j.State, j.Reason)
	}
	if snap := snapshot(t, s); len(snap.Queues) != 0 || modelOf(t, snap, "gpt").Starting != 0 {
		t.Errorf("got %+v, want nothing waiting or starting", snap)
	}
	// A launch that fails outright fails the job at once.
	b2 := batch("lab", "sweep", "b2", "gpt", -1, 1)
	submit(t, s, b2)
	got := commit(t, s, grant(t0, b2, 1))
	err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: got[0].ID, Attempt: 1, Status: scheduler.Failed, Reason: "bad task definition"}})
	if err != nil {
		t.Fatal(err)
	}
	if j := jobAt(t, s, b2, 0); j.State != job.Failed || j.Reason != "bad task definition" {
		t.Errorf("got %s (%q), want FAILED with the reason", j.State, j.Reason)
	}
	check(t, s)
}

func TestTaskEventsAreIdempotentAndIgnoreStaleAttempts(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 4)
	submit(t, s, b)
	got := commit(t, s, grant(t0, b, 4))
	launchAll(t, s, got)
	id := got[0].ID

	for range 2 { // at least once: the second is a no-op
		if err := s.TaskStarted(ctx, id, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TaskStarted(ctx, got[1].ID, 7, t0); err != nil { // another attempt's event
		t.Fatal(err)
	}
	if n, err := s.ProjectRunning(ctx, "lab", "sweep"); n != 1 || err != nil {
		t.Errorf("project running: got %d, %v; want 1", n, err)
	}
	m := modelOf(t, snapshot(t, s), "gpt")
	if m.Running != 1 || m.Starting != 3 {
		t.Fatalf("got running %d starting %d, want 1 and 3", m.Running, m.Starting)
	}
	// Out of order: the stop arrives, then a late start of the same attempt.
	for range 2 {
		if err := s.TaskStopped(ctx, id, 1, job.Exit{Code: 0}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TaskStarted(ctx, id, 1, t0); err != nil {
		t.Fatal(err)
	}
	// b1-0001 stops on provider errors straight from LAUNCHED (exit 75:
	// it waits again, at attempt 2); b1-0002 fails on its own.
	if err := s.TaskStopped(ctx, got[1].ID, 1, job.Exit{Code: 1, ProviderError: true}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStarted(ctx, got[2].ID, 1, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, got[2].ID, 1, job.Exit{Code: 2, Reason: "assertion"}, t0); err != nil {
		t.Fatal(err)
	}
	// b1-0003 is lost to infrastructure, retried, and its old attempt's
	// stop arrives late: ignored.
	if err := s.TaskStopped(ctx, got[3].ID, 1, job.Exit{Infrastructure: true, Reason: "image pull"}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, got[3].ID, 1, job.Exit{Code: 0}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStarted(ctx, "nope", 1, t0); !errors.Is(err, job.ErrUnknownJob) {
		t.Errorf("unknown job: got %v, want ErrUnknownJob", err)
	}

	want := map[int]job.State{0: job.Succeeded, 1: job.Waiting, 2: job.Failed, 3: job.Waiting}
	for i, st := range want {
		if j := jobAt(t, s, b, i); j.State != st {
			t.Errorf("job %d: got %s, want %s", i, j.State, st)
		}
	}
	if j := jobAt(t, s, b, 2); j.Reason != "assertion" || j.Exit.Code != 2 {
		t.Errorf("got reason %q exit %d, want assertion and 2", j.Reason, j.Exit.Code)
	}
	for _, i := range []int{1, 3} {
		if j := jobAt(t, s, b, i); j.Attempt != 2 {
			t.Errorf("job %d: got attempt %d, want 2", i, j.Attempt)
		}
	}
	if n, err := s.ProjectRunning(ctx, "lab", "sweep"); n != 0 || err != nil {
		t.Errorf("project running: got %d, %v; want 0", n, err)
	}
	m = modelOf(t, snapshot(t, s), "gpt")
	if m.Running != 0 || m.Starting != 0 || m.Outcomes != (breaker.Outcomes{OK: 2, ProviderFailed: 1}) {
		t.Errorf("got running %d starting %d outcomes %+v, want 0, 0, {2 1}", m.Running, m.Starting, m.Outcomes)
	}
	check(t, s)
}

func TestOutcomesAreAcknowledgedOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 4)
	submit(t, s, b)
	got := commit(t, s, grant(t0, b, 4))
	for i, exit := range []job.Exit{{Code: 0}, {Code: 0}, {Code: 1, ProviderError: true}} {
		if err := s.TaskStopped(ctx, got[i].ID, 1, exit, t0); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshot(t, s)
	if o := modelOf(t, snap, "gpt").Outcomes; o != (breaker.Outcomes{OK: 2, ProviderFailed: 1}) {
		t.Fatalf("got %+v, want {2 1}", o)
	}
	plan := scheduler.Decide(scheduler.DefaultConfig(), snap, nil, t0.Add(10*time.Second))
	commitRead(t, s, plan, snap.Versions)
	commitRead(t, s, plan, snap.Versions) // a retried commit acknowledges nothing twice
	if o := modelOf(t, snapshot(t, s), "gpt").Outcomes; o != (breaker.Outcomes{}) {
		t.Fatalf("after the ack: got %+v, want none", o)
	}
	if err := s.TaskStopped(ctx, got[3].ID, 1, job.Exit{Code: 0}, t0); err != nil {
		t.Fatal(err)
	}
	if o := modelOf(t, snapshot(t, s), "gpt").Outcomes; o != (breaker.Outcomes{OK: 1}) {
		t.Fatalf("got %+v, want {1 0}", o)
	}
}

// TestAStaleOutcomeTotalCountsNothing: the counters are read eventually
// consistent, so a total older than what the last pass acknowledged can
// come back. It gives no outcome (never a negative one) and the ack stays
// where it was, so the outcomes it held back count once, when they show.
func TestAStaleOutcomeTotalCountsNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 3)
	submit(t, s, b)
	got := commit(t, s, grant(t0, b, 3))
	for i := range 3 {
		if err := s.TaskStopped(ctx, got[i].ID, 1, job.Exit{Code: 0}, t0); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshot(t, s)
	commitRead(t, s, scheduler.Decide(scheduler.DefaultConfig(), snap, nil, t0.Add(10*time.Second)), snap.Versions)
	// A replica behind by two outcomes.
	setTotal := func(n int) {
		t.Helper()
		if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.tables.State), Key: key(countersPK("gpt"), skCounters),
			UpdateExpression: aws.String("SET ok_total = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}}}); err != nil {
			t.Fatal(err)
		}
	}
	setTotal(1)
	snap = snapshot(t, s)
	if o := modelOf(t, snap, "gpt").Outcomes; o != (breaker.Outcomes{}) {
		t.Fatalf("stale total: got %+v, want none", o)
	}
	commitRead(t, s, scheduler.Decide(scheduler.DefaultConfig(), snap, nil, t0.Add(20*time.Second)), snap.Versions)
	setTotal(5) // caught up, and two more ended
	if o := modelOf(t, snapshot(t, s), "gpt").Outcomes; o != (breaker.Outcomes{OK: 2}) {
		t.Fatalf("caught up: got %+v, want {2 0}", o)
	}
}

func TestPendingRaiseCountsStartingJobsClaimedByTheRaise(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 10)
	submit(t, s, b)
	t1, t2 := t0, t0.Add(10*time.Second)
	first := commit(t, s, grant(t1, b, 3))
	commit(t, s, grant(t2, b, 2))

	// The model's state says the last raise was filled (its launches all
	// claimed) at t1.
	snap := snapshot(t, s)
	plan := scheduler.Plan{At: t2, Models: []scheduler.ModelPlan{{Model: "gpt",
		State: scheduler.ModelState{Limit: limits.State{Limit: 5, RaisedAt: t1, RaisedBy: 3, FilledAt: t1}}}}}
	commitRead(t, s, plan, snap.Versions)
	if m := modelOf(t, snapshot(t, s), "gpt"); m.PendingRaise != 3 || m.Starting != 5 || m.State.Limit.Limit != 5 {
		t.Fatalf("got pending %d starting %d limit %d, want 3, 5, 5", m.PendingRaise, m.Starting, m.State.Limit.Limit)
	}
	// One starts, one is retried, one fails: none of t1's is pending.
	launchAll(t, s, first)
	if err := s.TaskStarted(ctx, first[0].ID, 1, t2); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, first[1].ID, 1, job.Exit{Infrastructure: true}, t2); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, first[2].ID, 1, job.Exit{Code: 3}, t2); err != nil {
		t.Fatal(err)
	}
	snap = snapshot(t, s)
	if m := modelOf(t, snap, "gpt"); m.PendingRaise != 0 || m.Starting != 2 || m.Running != 1 {
		t.Fatalf("got pending %d starting %d running %d, want 0, 2, 1", m.PendingRaise, m.Starting, m.Running)
	}
	check(t, s)
}

func TestModelsFromItemsAndJobs(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.PutModel(ctx, scheduler.ModelConfig{Name: "claude", Enabled: false, MinLimit: 2, MaxLimit: 50, TargetDepth: 12.5, LimitPin: 7, InitialLimit: 4, ProviderConcurrency: 300}); err != nil {
		t.Fatal(err)
	}
	b := batch("lab", "sweep", "b1", "gpt", -1, 2)
	b.Jobs[1].Model = "claude"
	submit(t, s, b)
	snap := snapshot(t, s)
	if len(snap.Models) != 2 || snap.Models[0].Config.Name != "claude" || snap.Models[1].Config.Name != "gpt" {
		t.Fatalf("got models %+v, want claude and gpt, sorted", snap.Models)
	}
	want := scheduler.ModelConfig{Name: "claude", Enabled: false, MinLimit: 2, MaxLimit: 50, TargetDepth: 12.5, LimitPin: 7, InitialLimit: 4, ProviderConcurrency: 300}
	if snap.Models[0].Config != want {
		t.Errorf("got %+v, want %+v", snap.Models[0].Config, want)
	}
	d := defaults()
	d.Name = "gpt"
	if snap.Models[1].Config != d {
		t.Errorf("model without an item: got %+v, want the defaults %+v", snap.Models[1].Config, d)
	}
	if len(snap.Queues) != 2 || snap.Queues[0].Seq >= snap.Queues[1].Seq || len(snap.Warnings) != 0 {
		t.Errorf("got queues %+v warnings %q, want two in submission order and no warning", snap.Queues, snap.Warnings)
	}
}

func TestSubmitManyModelsAndChunks(t *testing.T) {
	// A queue spanning several chunks, claimed across chunk boundaries.
	s, _ := newStore(t)
	b := batch("lab", "sweep", "big", "gpt", -1, 1234)
	submit(t, s, b)
	var all []string
	for i := range 7 {
		all = append(all, keys(commit(t, s, grant(t0.Add(time.Duration(i)*time.Second), b, 200)))...)
	}
	if len(all) != 1234 {
		t.Fatalf("got %d claimed, want 1234", len(all))
	}
	for i, k := range all {
		if want := fmt.Sprintf("big-%04d", i); k != want {
			t.Fatalf("claim %d: got %s, want %s", i, k, want)
		}
	}
	check(t, s)
}

// TestModelStateRoundTrips fills every field of the scheduler's ModelState
// (whatever fields it has today) and reads it back through Commit and
// Snapshot.
func TestModelStateRoundTrips(t *testing.T) {
	s, _ := newStore(t)
	var st scheduler.ModelState
	fill(reflect.ValueOf(&st).Elem())
	commit(t, s, scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: "gpt", State: st}}})
	got := modelOf(t, snapshot(t, s), "gpt").State
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, st)
	}
}

// fill sets every field reachable from v to a value that is not zero.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(t0.Add(1234567891 * time.Nanosecond)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0))
		fill(v.Index(1))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("OPEN")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Float64, reflect.Float32:
		v.SetFloat(0.375)
	case reflect.Bool:
		v.SetBool(true)
	}
}

// TestConcurrentTaskEvents: events of many jobs of one model arrive at once
// (one Lambda each); their transactions meet on the model's counters item.
func TestConcurrentTaskEvents(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 40)
	submit(t, s, b)
	got := commit(t, s, grant(t0, b, 40))
	launchAll(t, s, got)
	each := func(f func(j scheduler.Job) error) {
		var wg sync.WaitGroup
		for _, j := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := f(j); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	each(func(j scheduler.Job) error { return s.TaskStarted(ctx, j.ID, 1, t0) })
	check(t, s)
	each(func(j scheduler.Job) error {
		return s.TaskStopped(ctx, j.ID, 1, job.Exit{Infrastructure: j.Key < "b1-0010"}, t0)
	})
	check(t, s)
	m := modelOf(t, snapshot(t, s), "gpt")
	if m.Running != 0 || m.Starting != 0 || m.Outcomes.OK != 30 {
		t.Errorf("got running %d starting %d outcomes %+v, want 0, 0, 30 ok", m.Running, m.Starting, m.Outcomes)
	}
	if snap := snapshot(t, s); len(snap.Queues) != 1 || snap.Queues[0].Waiting != 10 {
		t.Errorf("got %+v, want the 10 lost tasks waiting again", snap.Queues)
	}
}
