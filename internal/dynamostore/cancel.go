package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Cancel moves every waiting job inside the scope to CANCELLED, queue by
// queue, with the same conditional transactions a claim uses (a job claimed
// meanwhile stays claimed). It returns how many it cancelled. Jobs already
// claimed, launched or running are not touched: the caller stops their tasks
// if it wants them gone.
func (s *Store) Cancel(ctx context.Context, scope scheduler.Scope, now time.Time) (int, error) {
	return s.CancelWatched(ctx, scope, now, nil)
}

// cancelStep is the jobs Cancel takes from a queue between two progress
// reports: ten transactions.
const cancelStep = 10 * maxClaimJobs

// CancelWatched is Cancel, calling progress (when not nil) with the jobs
// cancelled so far and the jobs the scope had waiting when it began (the
// active index's count: a moment behind, so done may pass it).
func (s *Store) CancelWatched(ctx context.Context, scope scheduler.Scope, now time.Time, progress func(done, total int)) (int, error) {
	queues, err := s.readActiveQueues(ctx, false)
	if err != nil {
		return 0, err
	}
	var keys []scheduler.QueueKey
	total := 0
	for _, q := range queues {
		k := scheduler.QueueKey{Account: q.Account, Project: q.Project, Batch: q.Batch, Model: q.Model}
		if scope.Matches(k) {
			keys = append(keys, k)
			total += int(q.Waiting)
		}
	}
	report := func(n int) {
		if progress != nil {
			progress(n, total)
		}
	}
	report(0)
	n := 0
	for _, k := range keys {
		// Every waiting job, however many the index (a moment behind)
		// says: a step at a time until a step comes back short.
		for {
			done, err := s.cancelQueue(ctx, k, cancelStep, now)
			n += done
			report(n)
			if err != nil {
				return n, fmt.Errorf("cancel %s: %w", k, err)
			}
			if done < cancelStep {
				break
			}
		}
	}
	return n, nil
}

// cancelQueue moves up to count of the queue's oldest waiting jobs to
// CANCELLED (takeFront, as a claim takes them; a sampled batch's too, in
// queue order: a cancel takes every waiting job), counting them on the
// queue item. It returns how many it cancelled.
func (s *Store) cancelQueue(ctx context.Context, k scheduler.QueueKey, count int, now time.Time) (int, error) {
	pk := queuePK(k)
	atKey := stamp(now)
	mv := move{
		job: func(*jobItem) expression.UpdateBuilder {
			return s.expiry(expression.Set(name("state"), value(job.Cancelled)).
				Set(name("ended_at"), value(atKey)).
				Set(name("reason"), value(job.OperatorCancelReason)), now)
		},
		outcome: outcomeAttr[job.Cancelled],
	}
	n := 0
	for conflicts := 0; n < count; {
		q, ok, err := s.readQueue(ctx, pk)
		if err != nil {
			return n, fmt.Errorf("read queue: %w", err)
		}
		if !ok {
			return n, nil
		}
		taken, st, err := s.takeFront(ctx, pk, q, count-n, mv, &conflicts)
		if err != nil {
			return n, err
		}
		if st == frontEmpty {
			return n, nil
		}
		n += len(taken)
	}
	return n, nil
}
