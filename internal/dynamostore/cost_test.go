package dynamostore

import (
	"context"
	"testing"

	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestPassCostDoesNotGrowWithWaitingJobs: a Snapshot reads the same items
// with the same requests for a 10-job and a 5,000-job queue, and a Commit
// of 10 jobs costs the same from either.
func TestPassCostDoesNotGrowWithWaitingJobs(t *testing.T) {
	ctx := context.Background()
	measure := func(n int) (snap, claim stats) {
		s, c := newStore(t)
		if err := s.PutModel(ctx, scheduler.ModelConfig{Name: "gpt", Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 40, InitialLimit: 10}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutPin(ctx, priority.Pin{Scope: "project#lab/sweep", Tier: "0"}); err != nil {
			t.Fatal(err)
		}
		b := batch("lab", "sweep", "b1", "gpt", -1, n)
		submit(t, s, b)
		submit(t, s, batch("lab", "other", "b2", "gpt", -1, 3))
		c.reset()
		sn := snapshot(t, s)
		snap = c.stats()
		if len(sn.Queues) != 2 || sn.Queues[0].Waiting != n {
			t.Fatalf("got %+v, want 2 queues, the first with %d waiting", sn.Queues, n)
		}
		c.reset()
		if jobs := commit(t, s, grant(t0, b, 10)); len(jobs) != 10 {
			t.Fatalf("got %d claimed, want 10", len(jobs))
		}
		return snap, c.stats()
	}
	smallSnap, smallClaim := measure(10)
	bigSnap, bigClaim := measure(5000)
	t.Logf("snapshot, 10 waiting:    %d requests, %d items read %v", smallSnap.Calls, smallSnap.ItemsRead, smallSnap.ByOp)
	t.Logf("snapshot, 5,000 waiting: %d requests, %d items read %v", bigSnap.Calls, bigSnap.ItemsRead, bigSnap.ByOp)
	t.Logf("claim 10, 10 waiting:    %d requests, %d items read %v", smallClaim.Calls, smallClaim.ItemsRead, smallClaim.ByOp)
	t.Logf("claim 10, 5,000 waiting: %d requests, %d items read %v", bigClaim.Calls, bigClaim.ItemsRead, bigClaim.ByOp)
	if smallSnap.Calls != bigSnap.Calls || smallSnap.ItemsRead != bigSnap.ItemsRead {
		t.Errorf("snapshot: %d requests and %d items for 10 jobs, %d and %d for 5,000: want the same",
			smallSnap.Calls, smallSnap.ItemsRead, bigSnap.Calls, bigSnap.ItemsRead)
	}
	if smallClaim.Calls != bigClaim.Calls || smallClaim.ItemsRead != bigClaim.ItemsRead {
		t.Errorf("claim: %d requests and %d items for 10 jobs, %d and %d for 5,000: want the same",
			smallClaim.Calls, smallClaim.ItemsRead, bigClaim.Calls, bigClaim.ItemsRead)
	}
}

// TestSubmitWritesInBatches: a 10,000-job message takes at least 24 jobs
// per write call, and its redelivery writes nothing but the lock.
func TestSubmitWritesInBatches(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	b := batch("lab", "sweep", "huge", "gpt", -1, 10000)
	submit(t, s, b)
	st := c.stats()
	perCall := float64(len(b.Jobs)) / float64(st.Writes)
	t.Logf("submit of 10,000 jobs: %d write calls (%.2f jobs per call), %d reads: %v", st.Writes, perCall, st.Reads, st.ByOp)
	if perCall < 24 {
		t.Errorf("got %.2f jobs per write call, want at least 24", perCall)
	}

	c.reset()
	if n, err := s.Submit(ctx, b, t0); n != 0 || err != nil {
		t.Fatalf("redelivery: got %d, %v; want 0 created", n, err)
	}
	st = c.stats()
	t.Logf("its redelivery: %d write calls, %d read calls, %d items read: %v", st.Writes, st.Reads, st.ItemsRead, st.ByOp)
	if st.Writes != 2 {
		t.Errorf("redelivery made %d write calls, want 2 (lock and unlock)", st.Writes)
	}
	snap := snapshot(t, s)
	if len(snap.Queues) != 1 || snap.Queues[0].Waiting != 10000 {
		t.Fatalf("got %+v, want 10,000 waiting", snap.Queues)
	}
}
