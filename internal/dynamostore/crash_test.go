package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestCrashDuringClaim stops a Commit at each of its calls in turn — before
// the call reaches DynamoDB, or after it did but with the answer lost — as
// a Lambda that dies there would, and retries from a new store. Nothing is
// claimed twice; a job the crashed pass claimed and could not return stays
// CLAIMED and counted (for the reconciler), never waiting nor lost.
func TestCrashDuringClaim(t *testing.T) {
	ctx := context.Background()
	// How many calls does an undisturbed commit of two transactions make?
	s, c := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 250)
	submit(t, s, b)
	c.reset()
	if jobs := commit(t, s, grant(t0, b, 120)); len(jobs) != 120 {
		t.Fatalf("got %d, want 120", len(jobs))
	}
	calls := c.stats().Calls
	t.Logf("an undisturbed commit of 120 jobs makes %d calls: %v", calls, c.stats().ByOp)

	for _, after := range []bool{false, true} {
		for failAt := 1; failAt <= calls; failAt++ {
			t.Run(fmt.Sprintf("after=%v/call=%d", after, failAt), func(t *testing.T) {
				t.Parallel()
				s, c := newStore(t)
				submit(t, s, b)
				c.failAt, c.failAfter = failAt, after
				c1, err := s.Commit(ctx, grant(t0, b, 120), nil)
				if err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("got %v, want the injected crash or nil", err)
				}
				jobs1 := c1.Claimed
				jobs2 := commit(t, New(client, s.tables, defaults()), grant(t0.Add(10*time.Second), b, 120-len(jobs1)))
				d := dump(t, s)
				returned, stranded := claimedOnce(t, d, after, maxClaimJobs, jobs1, jobs2)
				for _, j := range stranded {
					if j.ClaimedAt != stamp(t0) {
						t.Errorf("job %s claimed at %s and not returned, by a pass that did not crash", j.Key, j.ClaimedAt)
					}
				}
				if returned != 120 {
					t.Errorf("got %d returned, want 120", returned)
				}
				if err := checkErr(d); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// claimedOnce checks what a crashed Commit and a later one returned against
// the table: no job returned twice, none returned but not CLAIMED, none
// CLAIMED and returned by neither (stranded) unless the crash came after a
// call reached DynamoDB — and then at most max. It returns how many were
// returned, and the stranded jobs.
func claimedOnce(t *testing.T, d tableDump, after bool, max int, commits ...[]scheduler.Job) (int, []jobItem) {
	t.Helper()
	returned := map[string]bool{}
	for _, jobs := range commits {
		for _, j := range jobs {
			if returned[j.ID] {
				t.Fatalf("job %s claimed twice", j.Key)
			}
			returned[j.ID] = true
		}
	}
	var stranded []jobItem
	for _, j := range d.jobs {
		switch {
		case j.State == job.Claimed && !returned[j.ID]:
			stranded = append(stranded, j)
		case j.State != job.Claimed && returned[j.ID]:
			t.Errorf("job %s returned but %s", j.Key, j.State)
		}
	}
	if !after && len(stranded) > 0 {
		t.Errorf("%d jobs claimed and not returned by a call that never reached DynamoDB", len(stranded))
	}
	if len(stranded) > max {
		t.Errorf("%d jobs stranded, more than one transaction's", len(stranded))
	}
	return len(returned), stranded
}

// TestLostAnswerDuringClaim loses the answer of each call of a Commit in
// turn, the store's later calls going through: the claims are recognised
// as applied (the queue's last_claim), a lost read ends the claims early
// with what was claimed, and a Commit that failed is retried with the same
// plan by the same store. Every claimed job is returned.
func TestLostAnswerDuringClaim(t *testing.T) {
	ctx := context.Background()
	b := batch("lab", "sweep", "b1", "gpt", -1, 250)
	for failAt := 1; failAt <= 12; failAt++ {
		t.Run(fmt.Sprintf("call=%d", failAt), func(t *testing.T) {
			t.Parallel()
			s, c := newStore(t)
			submit(t, s, b)
			snap := snapshot(t, s)
			plan := scheduler.Decide(scheduler.DefaultConfig(), snap, nil, t0)
			plan.Models[0].Grants = grant(t0, b, 120).Models[0].Grants
			c.reset()
			c.failAt, c.failAfter, c.failOnce = failAt, true, true
			committed, err := s.Commit(ctx, plan, snap.Versions)
			if err != nil {
				if !errors.Is(err, errCrash) || len(committed.Claimed) != 0 {
					t.Fatalf("got %d jobs and %v, want the lost answer and none", len(committed.Claimed), err)
				}
				if committed, err = s.Commit(ctx, plan, snap.Versions); err != nil {
					t.Fatalf("retry: %v", err)
				}
			}
			jobs := committed.Claimed
			// A lost read ends the claims early: fewer jobs, all returned.
			if len(jobs) != 120 && len(jobs) != maxClaimJobs {
				t.Fatalf("got %d jobs, want 120, or the first transaction's %d", len(jobs), maxClaimJobs)
			}
			if got := counts(t, s)[job.Claimed]; got != len(jobs) {
				t.Fatalf("got %d claimed in the table, want the %d returned", got, len(jobs))
			}
			check(t, s)
		})
	}
}

// TestCrashDuringSubmit stops a Submit at each call and redelivers the
// message; also a second message overlapping the first, and a third that
// arrives between the crash and the redelivery.
func TestCrashDuringSubmit(t *testing.T) {
	ctx := context.Background()
	all := batch("lab", "sweep", "b1", "gpt", 2, 100)
	part := func(from, to int) job.BatchSpec {
		p := all
		p.Jobs = all.Jobs[from:to]
		return p
	}
	first, second, third := part(0, 40), part(20, 80), part(60, 100)
	later := t0.Add(17 * time.Minute) // past the crashed Submit's lock

	s, c := newStore(t)
	submit(t, s, first)
	c.reset()
	if _, err := s.Submit(ctx, second, t0); err != nil {
		t.Fatal(err)
	}
	calls := c.stats().Calls
	t.Logf("an undisturbed second part makes %d calls: %v", calls, c.stats().ByOp)

	for _, after := range []bool{false, true} {
		for failAt := 1; failAt <= calls; failAt++ {
			for _, between := range []bool{false, true} {
				t.Run(fmt.Sprintf("after=%v/call=%d/third-between=%v", after, failAt, between), func(t *testing.T) {
					t.Parallel()
					s, c := newStore(t)
					submit(t, s, first)
					c.failAt, c.failAfter = failAt, after
					if _, err := s.Submit(ctx, second, t0); err != nil && !errors.Is(err, errCrash) {
						t.Fatalf("got %v, want the injected crash or nil", err)
					}
					retry := New(client, s.tables, defaults())
					if between {
						if _, err := retry.Submit(ctx, third, later); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := retry.Submit(ctx, second, later); err != nil {
						t.Fatal(err)
					}
					if !between {
						if _, err := retry.Submit(ctx, third, later); err != nil {
							t.Fatal(err)
						}
					}
					d := dump(t, s)
					if err := checkErr(d); err != nil {
						t.Fatal(err)
					}
					var q queueItem
					for _, q = range d.queues {
					}
					if len(d.queues) != 1 || q.Size != 100 || q.Waiting != 100 {
						t.Fatalf("got %d queues, size %d, waiting %d; want one with the 100 jobs once", len(d.queues), q.Size, q.Waiting)
					}
					// Every job once, and claimed in an order that keeps each
					// message's order.
					got := commit(t, retry, grant(later, all, 100))
					if len(got) != 100 {
						t.Fatalf("claimed %d, want 100", len(got))
					}
					for i := 1; i < 40; i++ {
						if got[i].Key != all.Jobs[i].Key {
							t.Fatalf("claim %d: got %s, want %s (the first part in order)", i, got[i].Key, all.Jobs[i].Key)
						}
					}
				})
			}
		}
	}
}

// TestSubmitWaitsForTheLockOfACrashedSubmit: a lock held by a dead Submit
// blocks the batch until it expires, then the redelivery completes.
func TestSubmitWaitsForTheLockOfACrashedSubmit(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 10)
	c.failAt = 3 // after the lock
	if _, err := s.Submit(ctx, b, t0); !errors.Is(err, errCrash) {
		t.Fatalf("got %v, want the crash", err)
	}
	retry := New(client, s.tables, defaults())
	retry.LockWait = 200 * time.Millisecond
	if _, err := retry.Submit(ctx, b, t0.Add(time.Minute)); !errors.Is(err, ErrBusy) {
		t.Fatalf("within the lock's time: got %v, want ErrBusy", err)
	}
	if n, err := retry.Submit(ctx, b, t0.Add(17*time.Minute)); n != 10 || err != nil {
		t.Fatalf("after it: got %d, %v; want 10 created", n, err)
	}
	check(t, s)
}

// TestCrashDuringSampledSubmit stops the second message of a sampled
// batch (part 2 of 2, or a second message of a batch without parts) at
// each of its calls — before the call reaches DynamoDB, or after it did
// with the answer lost — and redelivers it: whatever the crash point
// (before the registration, between it and the wait items, between those
// and the message's mark, at the part's mark), every waiting job has its
// wait item (checkErr) and is claimed, and the strata count each job once
// — the second message repeats 20 of the first's jobs, 5 of which were
// claimed before.
func TestCrashDuringSampledSubmit(t *testing.T) {
	for _, parts := range []int{2, 0} {
		t.Run(fmt.Sprintf("parts=%d", parts), func(t *testing.T) { crashDuringSampledSubmit(t, parts) })
	}
}

func crashDuringSampledSubmit(t *testing.T, parts int) {
	ctx := context.Background()
	p1, p2 := sampledRange("c", 0, 40, min(parts, 1), parts), sampledRange("c", 20, 80, parts, parts)
	later := t0.Add(17 * time.Minute) // past the crashed Submit's lock
	const want = "x:27 y:27 z:26"     // k000 … k079, by i mod 3

	s, c := newStore(t)
	submit(t, s, p1)
	commit(t, s, grant(t0, p1, 5))
	c.reset()
	if _, err := s.Submit(ctx, p2, t0); err != nil {
		t.Fatal(err)
	}
	calls := c.stats().Calls
	t.Logf("an undisturbed sampled part 2 makes %d calls: %v", calls, c.stats().ByOp)
	if got := strataSizes(t, s, "acme/p/c"); got != want {
		t.Fatalf("undisturbed: strata %s, want %s", got, want)
	}

	for _, after := range []bool{false, true} {
		for failAt := 1; failAt <= calls; failAt++ {
			t.Run(fmt.Sprintf("after=%v/call=%d", after, failAt), func(t *testing.T) {
				t.Parallel()
				s, c := newStore(t)
				submit(t, s, p1)
				commit(t, s, grant(t0, p1, 5))
				c.failAt, c.failAfter = failAt, after
				if _, err := s.Submit(ctx, p2, t0); err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("got %v, want the injected crash or nil", err)
				}
				retry := New(client, s.tables, defaults())
				if _, err := retry.Submit(ctx, p2, later); err != nil {
					t.Fatal(err)
				}
				if err := checkErr(dump(t, s)); err != nil {
					t.Fatal(err)
				}
				if got := strataSizes(t, retry, "acme/p/c"); got != want {
					t.Errorf("strata %s, want %s", got, want)
				}
				if got := commit(t, retry, grant(later, p1, 100)); len(got) != 75 {
					t.Errorf("claimed %d, want the 75 waiting", len(got))
				}
			})
		}
	}
}
