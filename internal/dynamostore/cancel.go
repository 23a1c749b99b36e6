package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
//
// A sweep of a large scope takes a minute, while passes go on claiming from
// the front of the same queues. So admission stops first:
//
//  1. Mark: the scope is paused (each pass's Decide grants it nothing) and
//     each of its queues is marked (a claim from a Snapshot read before
//     the pause is refused: unmarked, take.go). The first progress call
//     comes after the mark.
//  2. Sweep the waiting jobs.
//  3. Lift the marks, and the pause if the cancel wrote it (an operator's
//     own pause stays).
//
// A cancel interrupted between 1 and 3 leaves its scope paused, which
// status shows; running it again finishes it.
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

	// 1. Mark.
	pausedHere, err := s.pauseIfNot(ctx, scope.PauseKey(), now)
	if err != nil {
		return 0, fmt.Errorf("cancel: pause the scope: %w", err)
	}
	tok := token()
	for _, k := range keys {
		if err := s.markQueue(ctx, k, tok, true); err != nil {
			return 0, fmt.Errorf("cancel: mark %s: %w", k, err)
		}
	}
	report := func(n int) {
		if progress != nil {
			progress(n, total)
		}
	}
	report(0)

	// 2. Sweep.
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

	// 3. Lift.
	for _, k := range keys {
		if err := s.markQueue(ctx, k, tok, false); err != nil {
			return n, fmt.Errorf("cancel: unmark %s: %w", k, err)
		}
	}
	if pausedHere {
		if err := s.SetPaused(ctx, scope.PauseKey(), false, now); err != nil {
			return n, fmt.Errorf("cancel: lift its pause: %w", err)
		}
	}
	return n, nil
}

// pauseIfNot writes the scope's pause item unless one is there, and tells
// whether it wrote it.
func (s *Store) pauseIfNot(ctx context.Context, scope string, now time.Time) (bool, error) {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.State),
		Item: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: pkPauses}, attrSK: &types.AttributeValueMemberS{Value: scope},
			attrScope: &types.AttributeValueMemberS{Value: scope}, "since": &types.AttributeValueMemberS{Value: stamp(now)},
		},
		// Guard: a cancel writes its own pause only where none stands, and
		// lifts only the pause it wrote, so an operator's pause of the scope
		// outlives the cancel. Without it TestCancelKeepsAnOperatorsPause
		// fails (make mutate: cancel-keeps-operators-pause).
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if isConditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// markQueue sets (on) or removes (off) a cancel's mark tok on the queue
// item. Removing leaves another cancel's mark alone; a queue item that is
// gone is not written.
func (s *Store) markQueue(ctx context.Context, k scheduler.QueueKey, tok string, on bool) error {
	u := expression.Set(name(attrCancelling), value(tok))
	// Guard: a mark is written on a queue item that exists, never creating
	// a stray one (a queue emptied and tidied away meanwhile needs none).
	cond := name(attrPK).AttributeExists()
	if !on {
		u = expression.Remove(name(attrCancelling))
		// Guard: a cancel lifts its own mark only; a second cancel of an
		// overlapping scope, still sweeping, keeps its queues closed to
		// claims. Without it TestACancelLiftsOnlyItsOwnMark fails (make
		// mutate: cancel-lifts-own-mark).
		cond = cond.And(name(attrCancelling).Equal(value(tok)))
	}
	e, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.State), Key: key(queuePK(k), skQueue),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if isConditionFailed(err) {
		return nil
	}
	return err
}

// cancelQueue moves up to count of the queue's oldest waiting jobs to
// CANCELLED (takeFront, as a claim takes them; a sampled batch's too, in
// queue order: a cancel takes every waiting job), counting them on the
// queue item. It returns how many it cancelled.
func (s *Store) cancelQueue(ctx context.Context, k scheduler.QueueKey, count int, now time.Time) (int, error) {
	pk := queuePK(k)
	atKey := stamp(now)
	mv := move{
		job: func(j *jobItem) (expression.UpdateBuilder, error) {
			c, err := judged(*j, job.Cancel, "")
			if err != nil {
				return expression.UpdateBuilder{}, err
			}
			return s.expiry(expression.Set(name("state"), value(c.To)).
				Set(name("ended_at"), value(atKey)).
				Set(name("reason"), value(c.Reason)), now), nil
		},
		outcome: outcomeAttr[job.Cancelled],
		// A sampled job that waits again with its place in the release
		// log (a retry) ends unmeasured there, in the same transaction, so
		// the prefix passes it over, as when a job ends without a result
		// (events.go). Without it TestSampledCancelOfARetriedJobPassesItsPlace
		// fails.
		also: func(j jobItem) ([]types.TransactWriteItem, error) {
			if j.Stratum == "" || j.ReleasePos == nil {
				return nil, nil
			}
			it, err := s.logOutcome(j.batchID(), j.Stratum, *j.ReleasePos, outcomeNone)
			return []types.TransactWriteItem{it}, err
		},
	}
	n, placed := 0, false
	for conflicts := 0; n < count; {
		q, ok, err := s.readQueue(ctx, pk)
		if err != nil {
			return n, fmt.Errorf("read queue: %w", err)
		}
		if !ok {
			return n, nil
		}
		want := count - n
		if q.Sampled {
			want = min(want, maxClaimJobs/2) // a log item per job, at most
		}
		taken, st, err := s.takeFront(ctx, pk, q, want, mv, &conflicts)
		if err != nil {
			return n, err
		}
		if st == frontEmpty {
			break
		}
		n += len(taken)
		for _, j := range taken {
			placed = placed || j.ReleasePos != nil
		}
	}
	if placed { // the prefix may pass the places just ended: count it
		if _, _, err := s.advance(ctx, k.Account+"/"+k.Project+"/"+k.Batch, now); err != nil {
			return n, err
		}
	}
	return n, nil
}
