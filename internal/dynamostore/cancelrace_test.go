package dynamostore

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestCancelAdmitsNothingAfterItsMark: passes run during a cancel — one
// decided on a Snapshot read before the cancel began and committed after
// its mark, and whole passes between the mark and the sweep and between
// the sweep's steps — and none of them claims or launches a job of the
// scope, while the other scope's jobs go on being admitted. After it the
// pause and the queues' marks are lifted.
func TestCancelAdmitsNothingAfterItsMark(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	cx, other := batch("ops", "bulk", "cx", "gpt", -1, 120), batch("lab", "sweep", "b2", "gpt", -1, 40)
	submit(t, s, cx)
	submit(t, s, other)
	l := &passfake.Launcher{}
	c := passfake.NewClock(t0)
	cfg := scheduler.DefaultConfig()
	sched := &scheduler.Scheduler{Store: s, Depths: passfake.Depths{"gpt": 0}, Launcher: l, Clock: c, Config: cfg}

	// A pass that read its Snapshot before the cancel and commits after
	// the mark.
	before := snapshot(t, s)
	plan := scheduler.Decide(cfg, before, map[string]scheduler.Depth{}, t0)
	granted := 0
	for _, mp := range plan.Models {
		for _, g := range mp.Grants {
			if g.Queue.Batch == "cx" {
				granted += g.Count
			}
		}
	}
	if granted == 0 {
		t.Fatal("the early plan grants cx nothing: the test would prove nothing")
	}

	scope := scheduler.Scope{Account: "ops", Project: "bulk", Batch: "cx"}
	var mu sync.Mutex
	var admitted []scheduler.Job // jobs claimed after the mark
	calls := 0
	n, err := s.CancelWatched(ctx, scope, t0, func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			got, err := s.Commit(ctx, plan, before.Versions)
			if err != nil {
				t.Fatalf("the early plan's commit: %v", err)
			}
			admitted = append(admitted, got.Claimed...)
			if paused := snapshot(t, s).Pauses; len(paused) != 1 || paused[0].Scope != "batch#ops/bulk/cx" {
				t.Errorf("during the cancel: pauses %v, want batch#ops/bulk/cx", paused)
			}
		}
		from := len(l.Launched())
		c.Add(10e9)
		if _, err := sched.Pass(ctx); err != nil {
			t.Fatalf("pass during the cancel: %v", err)
		}
		admitted = append(admitted, l.Launched()[from:]...)
	})
	if err != nil {
		t.Fatal(err)
	}
	otherAdmitted := 0
	for _, j := range admitted {
		if j.Batch == "cx" {
			t.Errorf("job %s of the cancelled batch admitted after the cancel's mark", j.Key)
		} else {
			otherAdmitted++
		}
	}
	if otherAdmitted == 0 {
		t.Error("no job of the other batch admitted during the cancel: the passes did nothing")
	}
	if n != len(cx.Jobs) {
		t.Errorf("cancelled %d, want all %d of cx", n, len(cx.Jobs))
	}
	if got := counts(t, s)[job.Cancelled]; got != len(cx.Jobs) {
		t.Errorf("%d jobs CANCELLED, want %d", got, len(cx.Jobs))
	}
	if snap := snapshot(t, s); len(snap.Pauses) != 0 {
		t.Errorf("after the cancel: pauses %v, want the cancel's lifted", snap.Pauses)
	}
	q, _, err := s.readQueue(ctx, queuePK(scheduler.QueueKey{Account: "ops", Project: "bulk", Batch: "cx", Model: "gpt"}))
	if err != nil || q.Cancelling != "" {
		t.Errorf("after the cancel: queue mark %q, %v; want none", q.Cancelling, err)
	}
	check(t, s)
}

// TestCancelKeepsAnOperatorsPause: a scope the operator paused stays
// paused after a cancel of it.
func TestCancelKeepsAnOperatorsPause(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	submit(t, s, batch("ops", "bulk", "cx", "gpt", -1, 5))
	if err := s.SetPaused(ctx, "project#ops/bulk", true, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, scheduler.Scope{Account: "ops", Project: "bulk"}, t0); err != nil {
		t.Fatal(err)
	}
	if got := pausedScopes(t, s); len(got) != 1 || got[0] != "project#ops/bulk" {
		t.Errorf("got pauses %v, want the operator's project#ops/bulk kept", got)
	}
}

// TestACancelLiftsOnlyItsOwnMark: a cancel that ends while another, of
// an overlapping scope, still sweeps leaves the other's mark on the queue.
func TestACancelLiftsOnlyItsOwnMark(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	submit(t, s, batch("ops", "bulk", "cx", "gpt", -1, 5))
	k := scheduler.QueueKey{Account: "ops", Project: "bulk", Batch: "cx", Model: "gpt"}
	if err := s.markQueue(ctx, k, "other-cancel", true); err != nil {
		t.Fatal(err)
	}
	if err := s.markQueue(ctx, k, "this-cancel", false); err != nil && !isConditionFailed(err) {
		t.Fatal(err)
	}
	q, _, err := s.readQueue(ctx, queuePK(k))
	if err != nil || q.Cancelling != "other-cancel" {
		t.Errorf("queue mark %q, %v; want the other cancel's kept", q.Cancelling, err)
	}
}

// TestSlowClaimRefusesAQueueMarkedAfterItsRead: a cancel's mark written
// between a one-queue claim's read of the queue and its transaction
// refuses the transaction; the claim then reads the mark and takes
// nothing. So does a sampled batch's claim by stratum.
func TestSlowClaimRefusesAQueueMarkedAfterItsRead(t *testing.T) {
	plain := batch("ops", "bulk", "cx", "gpt", -1, 5)
	sampled := batch("ops", "bulk", "cx", "gpt", 1, 5)
	sampled.Sampling = &sampling.Params{MOE: 0.5, Confidence: 0.9, MinPerStratum: 1}
	sampled.Part, sampled.Parts = 1, 1
	for i := range sampled.Jobs {
		sampled.Jobs[i].Stratum = []string{"easy", "hard"}[i%2]
	}
	for name, b := range map[string]job.BatchSpec{"plain": plain, "sampled": sampled} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := newStore(t)
			submit(t, s, b)
			k := scheduler.QueueKey{Account: "ops", Project: "bulk", Batch: "cx", Model: "gpt"}
			var once sync.Once
			c.before = func(op string, in any) {
				tx, ok := in.(*dynamodb.TransactWriteItemsInput)
				if !ok || op != "TransactWriteItems" || !slices.ContainsFunc(tx.TransactItems, func(it types.TransactWriteItem) bool {
					return it.Update != nil && text(it.Update.Key[attrPK]) == queuePK(k) // the claim's, not the plan's state
				}) {
					return
				}
				once.Do(func() {
					if err := s.markQueue(ctx, k, "test", true); err != nil {
						t.Error(err)
					}
				})
			}
			got, err := s.Commit(ctx, grant(t0, b, 3), nil) // read nil: claimed one queue at a time
			c.before = nil
			if err != nil || len(got.Claimed) != 0 {
				t.Fatalf("got %d claimed, %v; want none of a marked queue", len(got.Claimed), err)
			}
			if n := counts(t, s)[job.Waiting]; n != 5 {
				t.Errorf("%d waiting, want 5", n)
			}
		})
	}
}
