package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// ErrStale is returned by Commit when another pass committed a model's state
// since this store's Snapshot read it: the plan was decided on old counts,
// so nothing of it is written. The next pass reads afresh.
var ErrStale = errors.New("stale snapshot: another pass committed since")

// A claim transaction holds the queue item, the model's counters item and,
// per job, the job item (and the back item of a retried job): at most
// maxClaimJobs jobs, within DynamoDB's 100 items.
const maxClaimJobs = 90

// maxConflicts bounds the re-reads of one grant when concurrent writers
// keep moving its queue.
const maxConflicts = 8

// Commit implements scheduler.Store.
//
//  1. state   every model's new state and acknowledged outcomes, in
//     transactions of up to 100 models, each conditioned on the version the
//     last Snapshot read (ErrStale if another pass wrote since)
//  2. claim   the grants whose queue the Snapshot read, batched across
//     queues (claims.go): transactions of up to 100 items moving cursors
//     (conditioned on the values read), jobs and the models' counters
//     together, with the models' emptied pending entries removed
//  3. take    the rest one queue at a time (a queue with retried jobs, a
//     grant of more than 90 jobs, a queue that moved since the Snapshot):
//     transactions of up to 90 jobs after reading the queue afresh; a
//     model's grants in plan order, several models at a time
//
// A failure after some jobs were claimed returns those jobs and no error:
// the pass launches them and the rest waits for the next pass. The jobs are
// returned in plan order.
func (s *Store) Commit(ctx context.Context, plan scheduler.Plan) ([]scheduler.Job, error) {
	// 1. State.
	if err := s.commitStates(ctx, plan); err != nil {
		return nil, err
	}

	// What the Snapshot read is used once: a retried Commit reads afresh.
	s.mu.Lock()
	read, empty := s.snapQueues, s.emptyPending
	s.snapQueues, s.emptyPending = nil, nil
	s.mu.Unlock()
	inPlan := map[string][]string{}
	for _, mp := range plan.Models {
		if len(empty[mp.Model]) > 0 {
			inPlan[mp.Model] = empty[mp.Model]
		}
	}

	// 2. Claims, batched.
	var claims [][]*grantClaim // per model, per grant
	var batched []*grantClaim
	seen := map[string]bool{}
	for i, mp := range plan.Models {
		var cs []*grantClaim
		for gi, g := range mp.Grants {
			if g.Count <= 0 {
				continue
			}
			c := &grantClaim{model: i, index: gi, g: g}
			pk := queuePK(g.Queue)
			q, ok := read[pk]
			if ok && q.Backs == 0 && g.Count <= maxClaimJobs && !seen[pk] {
				c.q = q
				batched = append(batched, c)
			} else {
				c.slow = true
			}
			seen[pk] = true
			cs = append(cs, c)
		}
		claims = append(claims, cs)
	}
	s.claimBatched(ctx, plan.At, batched, inPlan)

	// 3. The rest, one queue at a time: several models at a time (a
	// model's claims move its own counters item, so they never meet
	// another model's), each model's grants in plan order.
	_ = parallel(ctx, len(claims), func(ctx context.Context, i int) error {
		for _, c := range claims[i] {
			if !c.slow || c.err != nil || c.remaining() <= 0 {
				continue
			}
			g := c.g
			g.Count = c.remaining()
			jobs, err := s.claim(ctx, g, plan.At)
			c.jobs = append(c.jobs, jobs...)
			if err != nil {
				c.err = fmt.Errorf("claim jobs of %s: %w", g.Queue, err)
				return nil // this model's later grants wait for the next pass
			}
		}
		return nil
	})
	var claimed []scheduler.Job
	var firstErr error
	for _, cs := range claims {
		for _, c := range cs {
			claimed = append(claimed, c.jobs...)
			if c.err != nil && firstErr == nil {
				firstErr = c.err
			}
		}
	}
	if firstErr != nil {
		if len(claimed) == 0 {
			return nil, firstErr
		}
		s.log().Warn("commit: claimed fewer jobs than granted", "claimed", len(claimed), "err", firstErr)
	}
	return claimed, nil
}

// commitStates writes the models' states, skipping a model whose state did
// not change and that acknowledges nothing.
//
// A model the last Snapshot read is written only if its version is still
// the one read — or if this store already wrote this very plan (a Commit
// retried after a failure: the write is then the same, acknowledged totals
// are absolute). A plan not made from this store's Snapshot (tests, tools)
// carries no version: its state is written as it is and its ack added.
func (s *Store) commitStates(ctx context.Context, plan scheduler.Plan) error {
	s.mu.Lock()
	seen := s.seen
	if !s.commitAt.Equal(plan.At) || s.commitID == "" {
		s.commitAt, s.commitID = plan.At, token()
	}
	commitID := s.commitID
	s.mu.Unlock()

	var items []types.TransactWriteItem
	for _, mp := range plan.Models {
		sm, known := seen[mp.Model]
		av, err := attributevalue.Marshal(mp.State)
		if err != nil {
			return fmt.Errorf("commit state of %s: %w", mp.Model, err)
		}
		if known && mp.Ack.OK == 0 && mp.Ack.ProviderFailed == 0 && sm.state != nil && reflect.DeepEqual(av, sm.state) {
			continue
		}
		u := expression.Set(name(attrModel), value(mp.Model)).
			Set(name("state"), value(av)).
			Set(name("plan_at"), value(stamp(plan.At))).
			Set(name("commit_id"), value(commitID))
		var cond expression.ConditionBuilder
		if known {
			u = u.Set(name("ver"), value(sm.ver+1)).
				Set(name("ok_acked"), value(sm.okAcked+int64(mp.Ack.OK))).
				Set(name("pf_acked"), value(sm.pfAcked+int64(mp.Ack.ProviderFailed)))
			was := name("ver").Equal(value(sm.ver))
			if sm.ver == 0 {
				was = name("ver").AttributeNotExists()
			}
			// Guard: a plan from a Snapshot older than another pass's commit writes
			// nothing (ErrStale), so two passes never admit on the same free slots;
			// the same plan retried may write again. Without it
			// TestStaleSnapshotCommitsNothing fails (make mutate: commit-state-version).
			cond = was.Or(name("ver").Equal(value(sm.ver + 1)).And(name("commit_id").Equal(value(commitID))))
		} else {
			u = u.Add(name("ver"), value(1)).
				Add(name("ok_acked"), value(mp.Ack.OK)).
				Add(name("pf_acked"), value(mp.Ack.ProviderFailed))
		}
		it, err := updateItem(s.tables.State, key(modelsPK(mp.Model), mp.Model), u, cond)
		if err != nil {
			return fmt.Errorf("commit state of %s: %w", mp.Model, err)
		}
		items = append(items, it)
	}
	for start := 0; start < len(items); start += transactMax {
		err := s.transact(ctx, items[start:min(start+transactMax, len(items))], token())
		if reasons := cancelReasons(err); reasons != nil {
			for _, r := range reasons {
				if r == "ConditionalCheckFailed" {
					return fmt.Errorf("commit state: %w", ErrStale)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("commit state: %w", err)
		}
	}
	return nil
}

// claim claims up to g.Count of the queue's oldest waiting jobs: retried
// jobs (back items, oldest position first), then the cursor's.
func (s *Store) claim(ctx context.Context, g scheduler.Grant, at time.Time) ([]scheduler.Job, error) {
	return s.take(ctx, g, at, false)
}

// take moves up to g.Count of the queue's oldest waiting jobs out of the
// queue: to CLAIMED (a pass's claim), or to CANCELLED (an operator's cancel;
// no slot is taken and nothing is returned).
func (s *Store) take(ctx context.Context, g scheduler.Grant, at time.Time, cancel bool) ([]scheduler.Job, error) {
	pk := queuePK(g.Queue)
	atKey := stamp(at)
	var out []scheduler.Job
	for conflicts := 0; len(out) < g.Count; {
		q, ok, err := s.readQueue(ctx, pk)
		if err != nil {
			return out, fmt.Errorf("read queue: %w", err)
		}
		if !ok {
			return out, nil
		}
		if q.Sampled && !cancel {
			// By stratum in Neyman proportions (release.go); a cancel
			// takes every waiting job, in any order.
			jobs, err := s.claimSampled(ctx, scheduler.Grant{Queue: g.Queue, Tier: g.Tier, Count: g.Count - len(out)}, at)
			return append(out, jobs...), err
		}

		// 1. Candidates.
		want := g.Count - len(out)
		var backs []backItem
		if q.Backs > 0 {
			if backs, err = s.readBacks(ctx, pk, min(want, maxClaimJobs/2)); err != nil {
				return out, err
			}
		}
		nf := max(0, min(int64(want-len(backs)), int64(maxClaimJobs-len(backs)), int64(transactMax-2-2*len(backs)), q.Size-q.Next))
		if len(backs) == 0 && nf == 0 {
			return out, nil // nothing waits
		}
		ids, err := s.idsAt(ctx, pk, q.Next, nf)
		if err != nil {
			return out, err
		}
		read := make([]string, 0, len(backs)+len(ids))
		for _, b := range backs {
			read = append(read, b.ID)
		}
		jobs, err := s.readJobs(ctx, append(read, ids...))
		if err != nil {
			return out, err
		}

		// 2. One transaction: jobs, back items, cursor, counters.
		tok := token()
		var items []types.TransactWriteItem
		var taken []jobItem
		take := func(j jobItem) error {
			u := expression.Set(name("state"), value(job.Claimed)).
				Set(name("tier"), value(g.Tier)).
				Set(name("claimed_at"), value(atKey)).
				Set(name(attrInflight), value(inflightShard(j.ID)))
			if cancel {
				u = s.expiry(expression.Set(name("state"), value(job.Cancelled)).
					Set(name("ended_at"), value(atKey)).
					Set(name("reason"), value(job.OperatorCancelReason)), at)
			}
			// Guard: the job is claimed (or cancelled) only if still WAITING at the
			// attempt read. Without it TestClaimSkipsAJobThatLeftWaitingAfterItWasRead
			// fails (make mutate: slow-claim-job).
			cond := name("state").Equal(value(job.Waiting)).And(name("attempt").Equal(value(j.Attempt)))
			it, err := updateItem(s.tables.State, key(j.PK, skJob), u, cond)
			if err != nil {
				return err
			}
			items = append(items, it)
			j.State, j.Tier, j.ClaimedAt = job.Claimed, g.Tier, atKey
			taken = append(taken, j)
			return nil
		}
		for _, b := range backs {
			// Guard: a back item is taken by one claim only, so the queue's count of
			// back items goes down once. Without it TestStaleBackItemIsTakenOnce fails
			// (make mutate: slow-claim-back-delete).
			it, err := deleteItem(s.tables.State, key(pk, b.SK), name(attrPK).AttributeExists())
			if err != nil {
				return out, err
			}
			items = append(items, it)
			// A back item whose job is not waiting at that place is stale:
			// it is deleted without a claim, never left to block the queue.
			if j, ok := jobs[b.ID]; ok && j.State == job.Waiting && j.Attempt == b.Attempt && j.Pos == b.Pos {
				if err := take(j); err != nil {
					return out, err
				}
			}
		}
		for i, id := range ids {
			// A job that is not waiting at its place was cancelled: the
			// cursor passes it.
			if j, ok := jobs[id]; ok && j.State == job.Waiting && j.Pos == q.Next+int64(i) {
				if err := take(j); err != nil {
					return out, err
				}
			}
		}
		k := int64(len(taken))
		u := expression.Set(name("next"), value(q.Next+nf)).
			Set(name("last_claim"), value(tok)).
			Add(name("waiting"), value(-k)).
			Add(name("backs"), value(-int64(len(backs))))
		if cancel {
			u = u.Add(name(outcomeAttr[job.Cancelled]), value(k))
		}
		// Guard: the cursor moves only from where this claim read it, never back
		// over another pass's claims. Without it
		// TestSlowClaimDoesNotWriteAStaleCursor fails (make mutate:
		// slow-claim-cursor).
		cond := name("next").Equal(value(q.Next))
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
			return out, err
		}
		items = append(items, it)
		if k > 0 && !cancel {
			cu := addTo(expression.Add(name("starting"), value(k)), pendingEntry(atKey), k)
			it, err := updateItem(s.tables.State, key(countersPK(g.Queue.Model), skCounters), cu, expression.ConditionBuilder{})
			if err != nil {
				return out, err
			}
			items = append(items, it)
		}

		applied, err := s.writeClaim(ctx, pk, items, tok, &conflicts)
		if err != nil {
			return out, err
		}
		if !applied {
			continue // read again
		}
		for _, j := range taken {
			out = append(out, j.schedulerJob())
		}
		if cancel && len(taken) == 0 && len(backs) == 0 && nf == 0 {
			return out, nil
		}
	}
	return out, nil
}

// readBacks returns up to n of a queue's back items, oldest position first.
func (s *Store) readBacks(ctx context.Context, pk string, n int) ([]backItem, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.State),
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :b)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":b":  &types.AttributeValueMemberS{Value: backPrefix},
		},
	}, n)
	if err != nil {
		return nil, fmt.Errorf("read retried jobs: %w", err)
	}
	var out []backItem
	if err := attributevalue.UnmarshalListOfMaps(items, &out); err != nil {
		return nil, fmt.Errorf("read retried jobs: %w", err)
	}
	return out, nil
}

// idsAt returns the ids of positions [from, from+n) of a queue.
func (s *Store) idsAt(ctx context.Context, pk string, from, n int64) ([]string, error) {
	ids := make([]string, 0, n)
	for pos := from; pos < from+n; {
		c, err := s.chunkAt(ctx, pk, pos)
		if err != nil {
			return nil, err
		}
		end := min(from+n, c.Start+int64(len(c.IDs)))
		ids = append(ids, c.IDs[pos-c.Start:end-c.Start]...)
		pos = end
	}
	return ids, nil
}

// chunkAt returns the chunk holding a registered position: the one with the
// greatest start at or below it.
func (s *Store) chunkAt(ctx context.Context, pk string, pos int64) (chunkItem, error) {
	s.mu.Lock()
	c, ok := s.chunks[pk]
	s.mu.Unlock()
	if ok && c.covers(pos) {
		return c, nil
	}
	items, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.State),
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":lo": &types.AttributeValueMemberS{Value: chunkSK(0)},
			":hi": &types.AttributeValueMemberS{Value: chunkSK(pos)},
		},
		ScanIndexForward: aws.Bool(false),
		Limit:            aws.Int32(1),
	})
	if err != nil {
		return c, fmt.Errorf("read queue order: %w", err)
	}
	if len(items.Items) == 1 {
		c = chunkItem{}
		if err := attributevalue.UnmarshalMap(items.Items[0], &c); err != nil {
			return c, fmt.Errorf("read queue order: %w", err)
		}
	}
	if !c.covers(pos) {
		return c, fmt.Errorf("read queue order: queue %s has no chunk for position %d", pk, pos)
	}
	s.mu.Lock()
	if len(s.chunks) >= maxCachedChunks {
		clear(s.chunks) // a cache: what it forgets is read again
	}
	s.chunks[pk] = c
	s.mu.Unlock()
	return c, nil
}

// readJobs reads job items by id.
func (s *Store) readJobs(ctx context.Context, ids []string) (map[string]jobItem, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = key(jobPK(id), skJob)
	}
	items, err := s.batchGet(ctx, s.tables.State, keys, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	out := make(map[string]jobItem, len(items))
	for _, it := range items {
		var j jobItem
		if err := attributevalue.UnmarshalMap(it, &j); err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
		out[j.ID] = j
	}
	return out, nil
}

// readJob reads one job item; ok is false when there is none.
func (s *Store) readJob(ctx context.Context, id string) (jobItem, bool, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(jobPK(id), skJob), ConsistentRead: aws.Bool(true),
	})
	if err != nil || len(res.Item) == 0 {
		return jobItem{}, false, err
	}
	var j jobItem
	err = attributevalue.UnmarshalMap(res.Item, &j)
	return j, err == nil, err
}

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
			jobs, err := s.take(ctx, scheduler.Grant{Queue: k, Count: cancelStep}, now, true)
			n += len(jobs)
			report(n)
			if err != nil {
				return n, fmt.Errorf("cancel %s: %w", k, err)
			}
			if len(jobs) < cancelStep {
				break
			}
		}
	}
	return n, nil
}

// writeClaim writes one queue's claim transaction, whose queue update sets
// last_claim to tok. applied false: another pass, an event or a cancel
// moved the queue or a job between the reads and the write, nothing was
// written, and the caller reads again after a random pause (so that racing
// writers do not meet again), up to maxConflicts times. A lost answer is
// settled by the queue item: its last_claim is tok if the write was applied.
func (s *Store) writeClaim(ctx context.Context, pk string, items []types.TransactWriteItem, tok string, conflicts *int) (bool, error) {
	err := s.transact(ctx, items, tok)
	if cancelReasons(err) != nil {
		if *conflicts++; *conflicts > maxConflicts {
			return false, fmt.Errorf("gave up after %d conflicting attempts: %w", *conflicts, err)
		}
		return false, jitter(ctx, time.Duration(*conflicts)*10*time.Millisecond)
	}
	if err != nil {
		if q, ok, rerr := s.readQueue(ctx, pk); rerr != nil || !ok || q.LastClaim != tok {
			return false, err
		}
	}
	return true, nil
}
