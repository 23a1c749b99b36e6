package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/sim/faults"
)

// DynamoDB, as the faulted simulation shows it to evalsched: writes
// throttled before any effect, a Commit's claim transactions throttled or
// their answer lost, and the errors an injected fault surfaces as.

// Injected faults surface as errors of these kinds; a pass or a repair that
// fails with one of them is the fault working, not a broken invariant.
var (
	errInjected  = errors.New("simulated fault")
	errThrottled = fmt.Errorf("%w: DynamoDB throttled the write (ProvisionedThroughputExceededException)", errInjected)
	errDepths    = fmt.Errorf("%w: CloudWatch GetMetricData failed (ServiceUnavailable)", errInjected)
)

// onlyInjected reports whether err, and every error joined in it, is an
// injected fault. A stale commit (scheduler.ErrStale) is one too: passes
// overlap only when a fault makes them.
func onlyInjected(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyInjected(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, errInjected) || errors.Is(err, scheduler.ErrStale)
}

// The store's faults on a Commit's claims. The DynamoDB store writes the
// model states first, then claims each grant in a transaction of its own —
// batched across queues (dynamostore/batchclaim.go), or one queue at a time —
// so a throttling episode can meet a Commit after its states are written:
//
//   - a claim transaction throttled (claimThrottled): nothing of it is
//     written and its grant claims nothing this pass; Commit returns the
//     other grants' jobs (an error if there are none), the states stay
//     written. Must hold: the counters match the jobs; the next pass
//     admits the grant's jobs again.
//   - a claim transaction applied but its answer lost, and the read that
//     would confirm it (the queue's last_claim) failing too (claimLost):
//     its jobs are CLAIMED and the pass does not know them. Must hold: the
//     reconciler returns them to waiting after its claim grace (attempt+1);
//     none is lost or launched twice.
//
// These draw from their own stream (faultPlan.claims): a Commit's grants
// in plan order, one draw each, only inside a throttling episode.
const (
	claimThrottled = 0.3
	claimLost      = 0.1
)

// commit is dynamostore.Commit under the claim faults: the store's Commit
// of the grants not throttled, then the jobs of grants whose answer was
// lost taken out of what the pass sees. all is every job claimed (the
// simulator reads them back), seen what the pass gets.
func (c *chaos) commit(ctx context.Context, plan scheduler.Plan) (all, seen []scheduler.Job, err error) {
	p := c.plan
	if _, ok := p.Active(faults.SrcThrottle, c.d.e.now); !ok || c.settling {
		committed, err := c.d.store.Commit(ctx, plan, nil)
		return committed.Claimed, committed.Claimed, err
	}
	lost := map[scheduler.QueueKey]bool{}
	throttled := 0
	kept := plan
	kept.Models = make([]scheduler.ModelPlan, len(plan.Models))
	for i, mp := range plan.Models {
		mp.Grants = slices.Clone(mp.Grants)
		mp.Grants = slices.DeleteFunc(mp.Grants, func(g scheduler.Grant) bool {
			switch x := p.Claims.Float64(); {
			case x < claimThrottled:
				throttled++
				c.stats.ClaimsThrottled++
				p.Count(faults.Store)
				return true
			case x < claimThrottled+claimLost:
				lost[g.Queue] = true
				c.stats.ClaimsUnconfirmed++
				p.Count(faults.Store)
			}
			return false
		})
		kept.Models[i] = mp
	}
	committed, err := c.d.store.Commit(ctx, kept, nil)
	all = committed.Claimed
	for _, j := range all {
		if !lost[scheduler.QueueKey{Account: j.Account, Project: j.Project, Batch: j.Batch, Model: j.Model}] {
			seen = append(seen, j)
		}
	}
	if err == nil && len(seen) == 0 && (throttled > 0 || len(lost) > 0) {
		err = fmt.Errorf("claim jobs: %w", errThrottled)
	}
	return all, seen, err
}

// eventStore is the store as the task-events handler and the reconciler
// use it: every job it changes is read back; the handler's writes may be
// throttled (the handler fails, EventBridge retries).
type eventStore struct {
	c          *chaos
	reconciler bool
}

func (s eventStore) TaskStarted(ctx context.Context, id string, attempt int, now time.Time) error {
	if !s.reconciler && s.c.throttled(0.2) {
		return errThrottled
	}
	err := s.c.d.store.TaskStarted(ctx, id, attempt, now)
	s.c.d.observeID(id)
	return err
}

func (s eventStore) TaskStopped(ctx context.Context, id string, attempt int, exit domain.Exit, now time.Time) error {
	if !s.reconciler && s.c.throttled(0.2) {
		return errThrottled
	}
	err := s.c.d.store.TaskStopped(ctx, id, attempt, exit, now)
	s.c.d.observeID(id)
	return err
}

// reconcileStore adds what the reconciler reads and records; its records
// may be throttled like the passes' (the run fails them, the next repairs).
type reconcileStore struct{ eventStore }

func (s reconcileStore) InFlight(ctx context.Context) ([]scheduler.InFlight, error) {
	return s.c.d.store.InFlight(ctx)
}

func (s reconcileStore) RecordLaunches(ctx context.Context, now time.Time, results []scheduler.LaunchResult) error {
	if s.c.throttled(0.3) {
		return errThrottled
	}
	err := s.c.d.store.RecordLaunches(ctx, now, results)
	for _, r := range results {
		s.c.d.observeID(r.JobID)
	}
	return err
}
