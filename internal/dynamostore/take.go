package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
)

// The primitives shared by the operations that take waiting jobs out of a
// queue: the claim one queue at a time (claim.go), the batched claim
// (batchclaim.go), the sampled claim (release.go) and an operator's cancel
// (cancel.go).

// A claim transaction holds the queue item, the model's counters item and,
// per job, the job item (and the back item of a retried job): at most
// maxClaimJobs jobs, within DynamoDB's 100 items.
const maxClaimJobs = 90

// maxConflicts bounds the re-reads of one grant when concurrent writers
// keep moving its queue.
const maxConflicts = 8

// judged is job.Apply's judgement of a claim, cancel or skip of j as read
// (WAITING): the store writes the state and reason it returns, and the
// write's condition (WAITING at the attempt read) keeps the judgement true
// when it lands. The callers pass only jobs read waiting; one read
// otherwise is an error, never a write.
func judged(j jobItem, kind job.Kind, reason string) (job.Change, error) {
	c, ok := job.Apply(j.current(), job.Event{Kind: kind, Attempt: j.Attempt, Reason: reason})
	if !ok {
		return job.Change{}, fmt.Errorf("%s of job %s: read %s at attempt %d", kind, j.ID, j.State, j.Attempt)
	}
	return c, nil
}

// claimUpdate is a claimed job's update: the state job.Apply gives a
// claim (CLAIMED) at tier for the pass of atKey, listed in the in-flight
// index, with the attempt's result token (drawn into j.ResultToken by the
// caller) in the same write. j becomes what the update leaves it.
func claimUpdate(j *jobItem, tier int, atKey string) (expression.UpdateBuilder, error) {
	c, err := judged(*j, job.Claim, "")
	if err != nil {
		return expression.UpdateBuilder{}, err
	}
	j.State, j.Tier, j.ClaimedAt = c.To, tier, atKey
	return expression.Set(name("state"), value(c.To)).
		Set(name("tier"), value(tier)).
		Set(name("claimed_at"), value(atKey)).
		Set(name(attrInflight), value(inflightShard(j.ID))).
		Set(name(attrResultToken), value(j.ResultToken.Reveal())), nil
}

// A move is what taking a job out of a queue's front writes beyond what
// every take writes (the job's condition, the back item, the cursor): a
// pass's claim (claim.go) or an operator's cancel (cancel.go).
type move struct {
	job     func(j *jobItem) (expression.UpdateBuilder, error) // the taken job's new state, judged by job.Apply (it may set j's fields to match)
	outcome string                                             // a queue attribute counting the taken jobs; "" none
	extra   func(k int64) ([]types.TransactWriteItem, error)   // more items when k > 0 jobs are taken; nil none
	also    func(j jobItem) ([]types.TransactWriteItem, error) // more items for one taken job (at most one each); nil none
	claim   bool                                               // a pass's claim: refused on a queue a cancel has marked
}

// unmarked is a claim's condition on its queue item: no cancel has marked
// it (cancel.go). Guard: a pass whose Snapshot was read before a cancel
// began claims nothing of the scope after its mark. Without it
// TestCancelAdmitsNothingAfterItsMark fails (make mutate: claim-unmarked).
func unmarked() expression.ConditionBuilder {
	return name(attrCancelling).AttributeNotExists()
}

// frontStatus is what one takeFront found.
type frontStatus int

const (
	frontTaken frontStatus = iota // the transaction was written
	frontEmpty                    // nothing waits: nothing was written
	frontMoved                    // another writer moved the queue or a job since q was read: read again
)

// takeFront takes up to want of the oldest waiting jobs of the queue pk, as
// q was just read: retried jobs (back items, oldest position first), then
// the cursor's. One transaction writes mv's update of each job, deletes the
// back items read, moves the cursor past the positions read and carries
// mv's counts. It returns the jobs taken, as read.
func (s *Store) takeFront(ctx context.Context, pk string, q queueItem, want int, mv move, conflicts *int) ([]jobItem, frontStatus, error) {
	// 1. Candidates.
	var backs []backItem
	var err error
	if q.Backs > 0 {
		if backs, err = s.readBacks(ctx, pk, min(want, maxClaimJobs/2)); err != nil {
			return nil, 0, err
		}
	}
	nf := max(0, min(int64(want-len(backs)), int64(maxClaimJobs-len(backs)), int64(transactMax-2-2*len(backs)), q.Size-q.Next))
	if len(backs) == 0 && nf == 0 {
		return nil, frontEmpty, nil
	}
	ids, err := s.idsAt(ctx, pk, q.Next, nf)
	if err != nil {
		return nil, 0, err
	}
	read := make([]string, 0, len(backs)+len(ids))
	for _, b := range backs {
		read = append(read, b.ID)
	}
	jobs, err := s.readJobs(ctx, append(read, ids...))
	if err != nil {
		return nil, 0, err
	}

	// 2. One transaction: jobs, back items, cursor, counts.
	tok := token()
	var items []types.TransactWriteItem
	var taken []jobItem
	take := func(j jobItem) error {
		// Guard: the job is claimed (or cancelled) only if still WAITING at the
		// attempt read. Without it TestClaimSkipsAJobThatLeftWaitingAfterItWasRead
		// fails (make mutate: slow-claim-job).
		cond := name("state").Equal(value(job.Waiting)).And(name("attempt").Equal(value(j.Attempt)))
		u, err := mv.job(&j)
		if err != nil {
			return err
		}
		it, err := updateItem(s.tables.State, key(j.PK, skJob), u, cond)
		if err != nil {
			return err
		}
		items = append(items, it)
		if mv.also != nil {
			more, err := mv.also(j)
			if err != nil {
				return err
			}
			items = append(items, more...)
		}
		taken = append(taken, j)
		return nil
	}
	for _, b := range backs {
		// Guard: a back item is taken by one claim only, so the queue's count of
		// back items goes down once. Without it TestStaleBackItemIsTakenOnce fails
		// (make mutate: slow-claim-back-delete).
		it, err := deleteItem(s.tables.State, key(pk, b.SK), name(attrPK).AttributeExists())
		if err != nil {
			return nil, 0, err
		}
		items = append(items, it)
		// A back item whose job is not waiting at that place is stale:
		// it is deleted without a claim, never left to block the queue.
		if j, ok := jobs[b.ID]; ok && j.State == job.Waiting && j.Attempt == b.Attempt && j.Pos == b.Pos {
			if err := take(j); err != nil {
				return nil, 0, err
			}
		}
	}
	for i, id := range ids {
		// A job that is not waiting at its place was cancelled: the
		// cursor passes it.
		if j, ok := jobs[id]; ok && j.State == job.Waiting && j.Pos == q.Next+int64(i) {
			if err := take(j); err != nil {
				return nil, 0, err
			}
		}
	}
	k := int64(len(taken))
	u := expression.Set(name("next"), value(q.Next+nf)).
		Set(name("last_claim"), value(tok)).
		Add(name("waiting"), value(-k)).
		Add(name("backs"), value(-int64(len(backs))))
	if mv.outcome != "" {
		u = u.Add(name(mv.outcome), value(k))
	}
	// Guard: the cursor moves only from where this claim read it, never back
	// over another pass's claims. Without it
	// TestSlowClaimDoesNotWriteAStaleCursor fails (make mutate:
	// slow-claim-cursor).
	cond := name("next").Equal(value(q.Next))
	if mv.claim {
		cond = cond.And(unmarked())
	}
	if q.Waiting-k <= 0 {
		// The queue empties: it leaves the active index, unless a retry
		// or a registration added a job meanwhile (then the condition
		// sends us round again). Guard: without it
		// TestClaimKeepsAQueueThatGrewActive fails (make mutate:
		// slow-claim-emptying).
		u = u.Remove(name(attrActive))
		cond = cond.And(name("waiting").Equal(value(q.Waiting)))
	}
	it, err := updateItem(s.tables.State, key(pk, skQueue), u, cond)
	if err != nil {
		return nil, 0, err
	}
	items = append(items, it)
	if k > 0 && mv.extra != nil {
		more, err := mv.extra(k)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, more...)
	}

	applied, err := s.writeClaim(ctx, pk, items, tok, conflicts)
	if err != nil {
		return nil, 0, err
	}
	if !applied {
		return nil, frontMoved, nil
	}
	return taken, frontTaken, nil
}

// writeClaim writes one queue's claim transaction, whose queue update sets
// last_claim to tok. applied false: another pass, an event or a cancel
// moved the queue or a job between the reads and the write, nothing was
// written, and the caller reads again after a random pause (so that racing
// writers do not meet again), up to maxConflicts times. A lost answer is
// settled as transactClaim does.
func (s *Store) writeClaim(ctx context.Context, pk string, items []types.TransactWriteItem, tok string, conflicts *int) (bool, error) {
	err := s.transactClaim(ctx, pk, items, tok)
	if cancelReasons(err) != nil {
		if *conflicts++; *conflicts > maxConflicts {
			return false, fmt.Errorf("gave up after %d conflicting attempts: %w", *conflicts, err)
		}
		return false, jitter(ctx, time.Duration(*conflicts)*10*time.Millisecond)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// transactClaim writes a claim transaction whose update of the queue item
// pk sets last_claim to tok. A lost answer (an error that is not the
// transaction's cancellation) is settled by that queue item: nil if its
// last_claim is tok, the write was applied; else the error. pk "" (a
// transaction with no queue item) settles nothing.
func (s *Store) transactClaim(ctx context.Context, pk string, items []types.TransactWriteItem, tok string) error {
	err := s.transact(ctx, items, tok)
	if err == nil || cancelReasons(err) != nil || pk == "" {
		return err
	}
	if q, ok, rerr := s.readQueue(ctx, pk); rerr == nil && ok && q.LastClaim == tok {
		return nil
	}
	return err
}
