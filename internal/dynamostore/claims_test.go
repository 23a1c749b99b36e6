package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// planFromSnapshot grants n jobs to every queue of the snapshot, in its
// order, grouped by model in the snapshot's model order.
func planFromSnapshot(at time.Time, snap scheduler.Snapshot, n int) scheduler.Plan {
	plan := scheduler.Plan{At: at}
	for _, m := range snap.Models {
		mp := scheduler.ModelPlan{Model: m.Config.Name, State: m.State}
		for _, q := range snap.Queues {
			if q.Model == m.Config.Name {
				mp.Grants = append(mp.Grants, scheduler.Grant{Queue: q.Key(), Tier: 1, Count: n})
			}
		}
		plan.Models = append(plan.Models, mp)
	}
	return plan
}

// TestClaimsAreBatchedAcrossQueues: 150 one-job grants over 5 models cost a
// handful of requests, not 4 a queue; each claims its queue's oldest job,
// in plan order, with the counters moved; a queue with a retried job and a
// grant of more than 90 jobs still go one queue at a time, in their place.
func TestClaimsAreBatchedAcrossQueues(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	var batches []job.BatchSpec
	for i := range 150 {
		b := batch("lab", fmt.Sprintf("p%d", i%7), fmt.Sprintf("b%03d", i), fmt.Sprintf("m%d", i%5), -1, 3)
		batches = append(batches, b)
	}
	if err := parallel(ctx, len(batches), func(ctx context.Context, i int) error {
		_, err := s.Submit(ctx, batches[i], t0)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	c.reset()
	snap := snapshot(t, s)
	snapCalls := c.stats().Calls
	plan := planFromSnapshot(t0, snap, 1)
	c.reset()
	got := commitRead(t, s, plan, snap.Versions)
	st := c.stats()
	t.Logf("snapshot: %d requests; commit of 150 one-job grants: %d requests %v", snapCalls, st.Calls, st.ByOp)
	if len(got) != 150 {
		t.Fatalf("claimed %d, want 150", len(got))
	}
	// States: 5 single writes (5 models); claims: 2 chunk reads, 2 job
	// reads, 150 × (job + queue) = 300 items in 3 transactions.
	if st.Calls > 12 {
		t.Errorf("commit made %d requests, want at most 12", st.Calls)
	}
	i := 0
	for _, mp := range plan.Models {
		for _, g := range mp.Grants {
			if j := got[i]; j.Batch != g.Queue.Batch || j.Key != g.Queue.Batch+"-0000" || j.Tier != 1 {
				t.Fatalf("claim %d: got %s/%s tier %d, want %s-0000 tier 1 (plan order, oldest first)", i, j.Batch, j.Key, j.Tier, g.Queue.Batch)
			}
			i++
		}
	}
	for _, m := range snapshot(t, s).Models {
		if m.Starting != 30 {
			t.Errorf("model %s: starting %d, want 30", m.Config.Name, m.Starting)
		}
	}
	check(t, s)

	// A retried job (a back item) and a grant of 120: taken one queue at a
	// time, the retried job first.
	big := batch("lab", "big", "huge", "m0", -1, 200)
	submit(t, s, big)
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: got[0].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"}}); err != nil {
		t.Fatal(err)
	}
	snap = snapshot(t, s)
	plan = scheduler.Plan{At: t0.Add(10 * time.Second), Models: []scheduler.ModelPlan{{Model: "m0", State: modelOf(t, snap, "m0").State, Grants: []scheduler.Grant{
		{Queue: queueOf(got[0]), Tier: 1, Count: 2},
		{Queue: scheduler.QueueKey{Account: "lab", Project: "big", Batch: "huge", Model: "m0"}, Tier: 1, Count: 120},
		{Queue: queueOf(got[1]), Tier: 1, Count: 1},
	}}}}
	got2 := commitRead(t, s, plan, snap.Versions)
	if len(got2) != 123 {
		t.Fatalf("claimed %d, want 123", len(got2))
	}
	if got2[0].ID != got[0].ID || got2[0].Attempt != 2 || got2[1].Key != got[0].Batch+"-0001" {
		t.Errorf("got %s attempt %d then %s, want the retried %s attempt 2 then %s-0001", got2[0].Key, got2[0].Attempt, got2[1].Key, got[0].Key, got[0].Batch)
	}
	if got2[2].Key != "huge-0000" || got2[121].Key != "huge-0119" || got2[122].Key != got[1].Batch+"-0001" {
		t.Errorf("got %s … %s, %s: want huge-0000 … huge-0119 then %s-0001", got2[2].Key, got2[121].Key, got2[122].Key, got[1].Batch)
	}
	check(t, s)
}

// TestBatchedClaimOfAQueueThatMoved: the cursor the Snapshot read moved
// before Commit (another writer claimed), and an emptying queue gained jobs
// (the intake registered more): the batched transaction is refused whole,
// each queue is read again and claimed exactly, nothing twice, nothing lost.
func TestBatchedClaimOfAQueueThatMoved(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	moving := batch("lab", "sweep", "moving", "gpt", -1, 10)
	emptying := batch("lab", "sweep", "emptying", "gpt", -1, 2)
	steady := batch("lab", "other", "steady", "claude", -1, 5)
	for _, b := range []job.BatchSpec{moving, emptying, steady} {
		submit(t, s, b)
	}
	snap := snapshot(t, s)
	plan := planFromSnapshot(t0, snap, 2) // emptying: both its jobs

	other := New(client, s.tables, defaults())
	// Another writer's claim (no state write: the plan stays current).
	stolen, err := other.claim(ctx, scheduler.Grant{Queue: scheduler.QueueKey{Account: "lab", Project: "sweep", Batch: "moving", Model: "gpt"}, Tier: 1, Count: 3}, t0.Add(-time.Second))
	if err != nil || len(stolen) != 3 {
		t.Fatalf("the other claim: %d, %v", len(stolen), err)
	}
	more := batch("lab", "sweep", "emptying", "gpt", -1, 4) // keys 0000..0003: 0002, 0003 are new
	if n, err := s.Submit(ctx, more, t0); err != nil || n != 2 {
		t.Fatalf("second message: %d created, %v; want 2", n, err)
	}

	got := commitRead(t, s, plan, snap.Versions)
	slices.SortFunc(got, func(a, b scheduler.Job) int { return cmpString(a.Key, b.Key) })
	want := []string{"emptying-0000", "emptying-0001", "moving-0003", "moving-0004", "steady-0000", "steady-0001"}
	if !slices.Equal(keys(got), want) {
		t.Fatalf("got %v, want %v (stolen: %v)", keys(got), want, keys(stolen))
	}
	snap = snapshot(t, s)
	for _, q := range snap.Queues {
		if q.Batch == "emptying" && q.Waiting != 2 {
			t.Errorf("emptying: %d waiting, want the 2 registered since", q.Waiting)
		}
	}
	if len(snap.Queues) != 3 {
		t.Errorf("got %d active queues, want 3", len(snap.Queues))
	}
	check(t, s)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestChunksAreAlignedAcrossMessages: a batch that arrives in messages of
// 300, 450 and 700 jobs has its order in chunks starting at multiples of
// 500 (a claim reads a position's chunk by key), and claims across the
// chunk boundaries come out in submission order.
func TestChunksAreAlignedAcrossMessages(t *testing.T) {
	s, c := newStore(t)
	all := batch("lab", "sweep", "parts", "gpt", -1, 1450)
	for _, part := range [][2]int{{0, 300}, {300, 750}, {750, 1450}} {
		b := all
		b.Jobs = all.Jobs[part[0]:part[1]]
		submit(t, s, b)
	}
	check(t, s) // checks alignment and that chunks list every id in place
	var starts []int64
	for _, ch := range dump(t, s).chunks[queuePK(scheduler.QueueKey{Account: "lab", Project: "sweep", Batch: "parts", Model: "gpt"})] {
		starts = append(starts, ch.Start)
	}
	if !slices.Equal(starts, []int64{0, 500, 1000}) {
		t.Errorf("chunks start at %v, want [0 500 1000]", starts)
	}

	// Claim 80 at a time from a fresh store each round (a cold Lambda: no
	// cached chunk), so the batched path reads chunks by key.
	var got []scheduler.Job
	for round := 0; len(got) < 1450; round++ {
		fresh := New(c, s.tables, defaults())
		snap := snapshot(t, fresh)
		c.reset()
		jobs := commitRead(t, fresh, planFromSnapshot(t0.Add(time.Duration(round)*10*time.Second), snap, 80), snap.Versions)
		if st := c.stats(); st.ByOp["Query"] != 0 {
			t.Fatalf("round %d: %d Query calls, want chunks read by key (%v)", round, st.ByOp["Query"], st.ByOp)
		}
		if len(jobs) == 0 {
			t.Fatalf("round %d claimed nothing, %d of 1450 so far", round, len(got))
		}
		got = append(got, jobs...)
		if round > 20 {
			t.Fatal("too many rounds")
		}
	}
	for i, j := range got {
		if want := fmt.Sprintf("parts-%04d", i); j.Key != want {
			t.Fatalf("claim %d is %s, want %s", i, j.Key, want)
		}
	}
	check(t, s)
}

// TestLaunchesAreRecordedOneWriteEach: 150 launches take 150 conditional
// writes (1 unit each, not a transaction's 2) and no read; a stale result
// among them (an attempt the job is past) is refused alone, read and left
// alone, and the others are recorded.
func TestLaunchesAreRecordedOneWriteEach(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 300)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 150))
	c.reset()
	launchAll(t, s, jobs)
	if st := c.stats(); st.Calls != 150 || st.ByOp["UpdateItem"] != 150 {
		t.Errorf("recording 150 launches made %v, want 150 UpdateItem", st.ByOp)
	}
	if n := counts(t, s)[job.Launched]; n != 150 {
		t.Fatalf("%d launched, want 150", n)
	}

	more := commit(t, s, grant(t0.Add(10*time.Second), b, 150))
	var rs []scheduler.LaunchResult
	for _, j := range more {
		rs = append(rs, scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: "arn:task/" + j.ID})
	}
	rs[120].Attempt = 7 // stale: no such attempt
	c.reset()
	if err := s.RecordLaunches(ctx, t0, rs); err != nil {
		t.Fatal(err)
	}
	if st := c.stats(); st.ByOp["UpdateItem"] != 150 || st.ByOp["BatchGetItem"] != 1 || st.Calls != 151 {
		t.Errorf("with one stale result: %v, want 150 UpdateItem and one read of the stale one", st.ByOp)
	}
	if j := jobAt(t, s, b, 270); j.State != job.Claimed {
		t.Errorf("the stale result's job is %s, want CLAIMED (untouched)", j.State)
	}
	if n := counts(t, s)[job.Launched]; n != 299 {
		t.Errorf("%d launched, want 299", n)
	}
	check(t, s)
}

// TestSlotsAreCountedFromTheInflightIndex: a model's starting and running
// jobs are what Snapshot counts in the inflight index, so a claim writes no
// counters item and a start is one conditional write of the job alone (1
// write unit, not a transaction's 2 a item). A repeated start changes
// nothing.
func TestSlotsAreCountedFromTheInflightIndex(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	a := batch("lab", "sweep", "a", "gpt", -1, 4)
	submit(t, s, a)
	snap := snapshot(t, s)
	claimed := commitRead(t, s, planFromSnapshot(t0, snap, 3), snap.Versions)
	if len(claimed) != 3 {
		t.Fatalf("claimed %d, want 3", len(claimed))
	}
	launchAll(t, s, claimed)
	c.reset()
	for range 2 { // the second delivery finds the job moved on
		if err := s.TaskStarted(ctx, claimed[0].ID, claimed[0].Attempt, t0); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.stats(); st.ByOp["UpdateItem"] != 1 || st.ByOp["TransactWriteItems"] != 0 {
		t.Errorf("two deliveries of a start: %v, want one UpdateItem and no transaction", st.ByOp)
	}
	if m := modelOf(t, snapshot(t, s), "gpt"); m.Starting != 2 || m.Running != 1 {
		t.Errorf("got starting %d running %d, want 2 and 1", m.Starting, m.Running)
	}
	if err := s.TaskStopped(ctx, claimed[0].ID, claimed[0].Attempt, job.Exit{Code: 0}, t0); err != nil {
		t.Fatal(err)
	}
	if m := modelOf(t, snapshot(t, s), "gpt"); m.Starting != 2 || m.Running != 0 || m.Outcomes.OK != 1 {
		t.Errorf("got starting %d running %d ok %d, want 2, 0, 1", m.Starting, m.Running, m.Outcomes.OK)
	}
	check(t, s)
}

func queueOf(j scheduler.Job) scheduler.QueueKey {
	return scheduler.QueueKey{Account: j.Account, Project: j.Project, Batch: j.Batch, Model: j.Model}
}

// A launch whose outcome is unknown is not recorded: the job stays CLAIMED
// at its attempt, holding its slot, for the reconciler.
func TestUnknownLaunchesAreLeftClaimed(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 2)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 2))
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{
		{JobID: jobs[0].ID, Attempt: 1, Status: scheduler.Unknown, Reason: "outcome unknown: ServerException"},
		{JobID: jobs[1].ID, Attempt: 1, Status: scheduler.Launched, TaskARN: "arn:1"},
	}); err != nil {
		t.Fatal(err)
	}
	if j := jobAt(t, s, b, 0); j.State != job.Claimed || j.Attempt != 1 {
		t.Errorf("got %s attempt %d, want CLAIMED attempt 1", j.State, j.Attempt)
	}
	if m := modelOf(t, snapshot(t, s), "gpt"); m.Starting != 2 {
		t.Errorf("got %d starting, want both slots held", m.Starting)
	}
	check(t, s)
}

// batchedWorld is 40 three-job batches over 3 models and a plan granting
// all 120 jobs from the Snapshot (whose Versions it returns), so that
// Commit claims them batched: two transactions of up to 100 items.
func batchedWorld(t *testing.T) (*Store, *counter, scheduler.Plan, scheduler.Versions) {
	t.Helper()
	s, c := newStore(t)
	for i := range 40 {
		submit(t, s, batch("lab", fmt.Sprintf("p%d", i%5), fmt.Sprintf("b%02d", i), fmt.Sprintf("m%d", i%3), -1, 3))
	}
	snap := snapshot(t, s)
	return s, c, planFromSnapshot(t0, snap, 3), snap.Versions
}

// TestCrashDuringBatchedClaim stops a batched Commit at each of its calls,
// before or after the call reaches DynamoDB, then lets another pass claim
// the rest: no job is claimed twice, none claimed by a call that never
// reached DynamoDB is stranded, at most one transaction's are, and every
// counter matches the jobs.
func TestCrashDuringBatchedClaim(t *testing.T) {
	ctx := context.Background()
	s, c, plan, read := batchedWorld(t)
	c.reset()
	if jobs := commitRead(t, s, plan, read); len(jobs) != 120 {
		t.Fatalf("got %d, want 120", len(jobs))
	}
	calls := c.stats().Calls
	t.Logf("an undisturbed batched commit of 120 jobs over 40 queues makes %d calls: %v", calls, c.stats().ByOp)
	for _, after := range []bool{false, true} {
		for failAt := 1; failAt <= calls; failAt++ {
			t.Run(fmt.Sprintf("after=%v/call=%d", after, failAt), func(t *testing.T) {
				t.Parallel()
				s, c, plan, read := batchedWorld(t)
				c.failAt, c.failAfter = failAt, after
				c1, err := s.Commit(ctx, plan, read)
				if err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("got %v, want the injected crash or nil", err)
				}
				jobs1 := c1.Claimed
				other := New(client, s.tables, defaults())
				snap := snapshot(t, other)
				jobs2 := commitRead(t, other, planFromSnapshot(t0.Add(10*time.Second), snap, 3), snap.Versions)
				d := dump(t, s)
				returned, stranded := claimedOnce(t, d, after, transactMax, jobs1, jobs2)
				if returned+len(stranded) != 120 {
					t.Errorf("returned %d and stranded %d, want all 120 claimed", returned, len(stranded))
				}
				if err := checkErr(d); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestLostAnswerDuringBatchedClaim loses the answer of each call of a
// batched Commit in turn, the later calls going through: a transaction
// whose answer was lost is recognised as applied by its token on the queue
// items; a lost read sends the claims the per-queue way; a failed Commit is
// retried with the same plan. Every claimed job is returned.
func TestLostAnswerDuringBatchedClaim(t *testing.T) {
	ctx := context.Background()
	for failAt := 1; failAt <= 9; failAt++ {
		t.Run(fmt.Sprintf("call=%d", failAt), func(t *testing.T) {
			t.Parallel()
			s, c, plan, read := batchedWorld(t)
			c.failAt, c.failAfter, c.failOnce = failAt, true, true
			committed, err := s.Commit(ctx, plan, read)
			if err != nil {
				if !errors.Is(err, errCrash) || len(committed.Claimed) != 0 {
					t.Fatalf("got %d jobs and %v, want the lost answer and none", len(committed.Claimed), err)
				}
				if committed, err = s.Commit(ctx, plan, read); err != nil {
					t.Fatalf("retry: %v", err)
				}
			}
			jobs := committed.Claimed
			if got := counts(t, s)[job.Claimed]; got != len(jobs) || got != 120 {
				t.Fatalf("got %d claimed in the table and %d returned, want 120 both", got, len(jobs))
			}
			check(t, s)
		})
	}
}
