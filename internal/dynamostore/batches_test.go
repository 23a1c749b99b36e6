package dynamostore

import (
	"context"
	"testing"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestBatchesCountsEveryState: a batch's counts follow its jobs through
// every transition, stay listed once it has finished, and are read without
// reading a job: 5,000 jobs cost what 10 do.
func TestBatchesCountsEveryState(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 6)
	submit(t, s, b)
	submit(t, s, batch("acme", "x", "other", "gpt", -1, 2))
	jobs := commit(t, s, grant(t0, b, 5))
	if len(jobs) != 5 {
		t.Fatalf("claimed %d, want 5", len(jobs))
	}
	// 0 succeeds, 1 fails, 2 is retried (back to waiting) after the
	// provider failed it (exit 75, delivered twice), 3 runs, 4 starts.
	for _, j := range jobs[:4] {
		if err := s.TaskStarted(ctx, j.ID, j.Attempt, t0); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(i int, e job.Exit) {
		if err := s.TaskStopped(ctx, jobs[i].ID, jobs[i].Attempt, e, t0); err != nil {
			t.Fatal(err)
		}
	}
	stop(0, job.Exit{Code: 0})
	stop(1, job.Exit{Code: 3})
	stop(2, job.Exit{Code: 75, ProviderError: true, Reason: "exit code 75: provider error"})
	stop(2, job.Exit{Code: 75, ProviderError: true, Reason: "exit code 75: provider error"})
	want := func(label string, w BatchCounts) {
		t.Helper()
		got, err := s.Batches(ctx, scheduler.Scope{Account: "lab"})
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: got %+v, %v; want lab/sweep/b1 alone", label, got, err)
		}
		g := got[0]
		g.Seq = 0
		w.Account, w.Project, w.Batch, w.Model, w.Registered, w.Tier = "lab", "sweep", "b1", "gpt", 6, -1 // sent without a tier
		if g != w {
			t.Errorf("%s:\n got %+v\nwant %+v", label, g, w)
		}
	}
	want("mid-way", BatchCounts{Waiting: 2, Starting: 1, Running: 1, Succeeded: 1, Failed: 1, ProviderRetries: 1})
	// Cancel the waiting ones and stop the rest: the batch is finished, and
	// still listed.
	if n, err := s.Cancel(ctx, scheduler.Scope{Account: "lab"}, t0); err != nil || n != 2 {
		t.Fatalf("cancel: %d %v", n, err)
	}
	stop(3, job.Exit{Code: 0})
	stop(4, job.Exit{Code: -1, Cancelled: true})
	want("finished", BatchCounts{Succeeded: 2, Failed: 1, Cancelled: 3, ProviderRetries: 1})
	all, err := s.Batches(ctx, scheduler.Scope{})
	if err != nil || len(all) != 2 || all[0].Account != "acme" || all[0].Waiting != 2 {
		t.Errorf("all batches: got %+v %v", all, err)
	}

	// Cost: the same requests and items for a 10-job and a 5,000-job batch.
	measure := func(n int) stats {
		s, c := newStore(t)
		submit(t, s, batch("big", "p", "b", "gpt", -1, n))
		c.reset()
		if got, err := s.Batches(ctx, scheduler.Scope{}); err != nil || len(got) != 1 || got[0].Waiting != n {
			t.Fatalf("got %+v %v", got, err)
		}
		return c.stats()
	}
	small, big := measure(10), measure(5000)
	t.Logf("Batches, 10 jobs: %d requests, %d items; 5,000 jobs: %d requests, %d items", small.Calls, small.ItemsRead, big.Calls, big.ItemsRead)
	if small.Calls != big.Calls || small.ItemsRead != big.ItemsRead {
		t.Errorf("Batches reads %d requests/%d items for 10 jobs, %d/%d for 5,000: want the same", small.Calls, small.ItemsRead, big.Calls, big.ItemsRead)
	}
	_ = c
}
