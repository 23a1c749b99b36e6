package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// A pass grants a job or two to each of ~200 queues. Claimed one queue at a
// time that is 4 requests a queue (read the queue, its order, its jobs, one
// transaction). The batched claim below makes the same conditional writes
// for every queue at once:
//
//   - the cursor comes from the queue as the Snapshot just read it (from
//     the active index, a moment behind the table); the write is
//     conditioned on it, so a queue that moved since, or whose index entry
//     lagged, cancels its transaction and is claimed again the slow way
//     (claim.go, which reads the queue item strongly consistent);
//   - the queue order comes by BatchGetItem: chunks are aligned to
//     chunkSize positions, so the chunk of a position has a known key;
//   - the jobs come by one BatchGetItem across queues;
//   - the writes go in transactions of up to 100 items: the jobs and their
//     queues' cursors, nothing shared (a model's slots are counted from the
//     inflight index the jobs enter, by Snapshot).
//
// So 200 one-job grants cost ~2 chunk reads (none once cached), 2 job reads
// and ~7 transactions instead of ~800 requests.

// grantClaim is one grant of the plan and what has been claimed for it.
type grantClaim struct {
	model, index int // place in the plan: plan.Models[model].Grants[index]
	g            scheduler.Grant
	q            queueItem // as the Snapshot read it; zero PK if unknown
	jobs         []scheduler.Job
	err          error
	slow         bool // claimed by claim (claim.go): the batched path cannot or failed
}

func (c *grantClaim) remaining() int { return c.g.Count - len(c.jobs) }

// claimUnit is what one grant writes in a batched transaction.
type claimUnit struct {
	c     *grantClaim
	n     int64     // cursor positions passed: [q.Next, q.Next+n)
	taken []jobItem // the waiting jobs among them
}

// claimTxn is one batched transaction: units of several queues.
type claimTxn struct {
	units []claimUnit
	items int
}

// claimBatched claims the grants whose queue the Snapshot read and which
// wait only at the cursor (no retried job: those come first, by claim).
// A grant it could not serve whole is marked slow, for claim.
func (s *Store) claimBatched(ctx context.Context, at time.Time, claims []*grantClaim) {
	// 1. The cursor positions of each grant, and their ids.
	var units []claimUnit
	for _, c := range claims {
		n := min(int64(c.g.Count), c.q.Size-c.q.Next, maxClaimJobs)
		if n <= 0 {
			c.slow = true
			continue
		}
		units = append(units, claimUnit{c: c, n: n})
	}
	ids, err := s.idsOf(ctx, units)
	if err != nil {
		s.log().Warn("commit: batched claim: read queue order; claiming one queue at a time", "err", err)
		for _, u := range units {
			u.c.slow = true
		}
		return
	}
	var all []string
	for _, u := range units {
		all = append(all, ids[u.c.q.PK]...)
	}
	jobs, err := s.readJobs(ctx, all)
	if err != nil {
		s.log().Warn("commit: batched claim: read jobs; claiming one queue at a time", "err", err)
		for _, u := range units {
			u.c.slow = true
		}
		return
	}
	kept := units[:0]
	for _, u := range units {
		qids := ids[u.c.q.PK]
		if int64(len(qids)) != u.n {
			u.c.slow = true // an order this path cannot read (see idsOf)
			continue
		}
		if j, ok := jobs[qids[0]]; ok && j.Stratum != "" {
			u.c.slow = true // a sampled batch's: released by stratum, not by the cursor (release.go)
			continue
		}
		for i, id := range qids {
			// A job not waiting at its place was cancelled: the cursor
			// passes it, as takeFront does.
			if j, ok := jobs[id]; ok && j.State == job.Waiting && j.Pos == u.c.q.Next+int64(i) {
				u.taken = append(u.taken, j)
			}
		}
		kept = append(kept, u)
	}

	// 2. Transactions of up to 100 items: no item is shared between two
	// (a model's slots are counted from the inflight index, not kept in
	// a counters item), so they run side by side.
	var txns []*claimTxn
	cur := &claimTxn{}
	for _, u := range kept {
		need := 1 + len(u.taken)
		if cur.items+need > transactMax {
			txns = append(txns, cur)
			cur = &claimTxn{}
		}
		cur.items += need
		cur.units = append(cur.units, u)
	}
	if cur.items > 0 {
		txns = append(txns, cur)
	}

	// 3. Write, several transactions at a time.
	_ = parallel(ctx, len(txns), func(ctx context.Context, i int) error {
		s.writeClaimTxn(ctx, at, txns[i])
		return nil
	})
}

// writeClaimTxn writes one batched transaction and settles its grants:
// claimed, or marked slow (cancelled: a queue or job moved since the
// Snapshot), or failed (the answer was lost and the write not found).
func (s *Store) writeClaimTxn(ctx context.Context, at time.Time, t *claimTxn) {
	tok := token()
	atKey := stamp(at)
	var items []types.TransactWriteItem
	fail := func(err error) {
		for _, u := range t.units {
			u.c.err = err
		}
	}
	for _, u := range t.units {
		for i := range u.taken {
			j := &u.taken[i]
			j.ResultToken = s.resultToken()
			up, err := claimUpdate(j, u.c.g.Tier, atKey)
			if err != nil {
				fail(err)
				return
			}
			// Guard: the job is claimed only if still WAITING at the attempt
			// read, never one another writer moved between the read and this
			// write. Without it TestClaimSkipsAJobThatLeftWaitingAfterItWasRead
			// fails (make mutate: batched-claim-job); with the cursor's
			// condition also gone, two passes from one Snapshot claim a job
			// twice: TestBatchedClaimsFromOneSnapshot (make mutate:
			// batched-claim-job-and-cursor).
			it, err := updateItem(s.tables.State, key(j.PK, skJob), up,
				name("state").Equal(value(job.Waiting)).And(name("attempt").Equal(value(j.Attempt))))
			if err != nil {
				fail(err)
				return
			}
			items = append(items, it)
		}
		q, k := u.c.q, int64(len(u.taken))
		up := expression.Set(name("next"), value(q.Next+u.n)).
			Set(name("last_claim"), value(tok)).
			Add(name("waiting"), value(-k))
		// Guard: the cursor moves only from where the Snapshot saw it, else
		// a stale read writes it back over another pass's claims:
		// TestBatchedClaimFromAStaleSnapshotKeepsTheCursor (make mutate:
		// batched-claim-cursor); and only while no retried job waits, which
		// comes first: TestBatchedClaimTakesARetriedJobFirst (make mutate:
		// batched-claim-backs).
		cond := name("next").Equal(value(q.Next)).And(name("backs").Equal(value(0)))
		// Guard: as takeFront's (unmarked; make mutate: batched-claim-unmarked).
		// A marked queue cancels the transaction; claim then finds the mark.
		cond = cond.And(unmarked())
		if q.Waiting-k <= 0 {
			up = up.Remove(name(attrActive))
			// Guard: the queue leaves the active index only if no job was registered
			// or retried since the read, else its waiting jobs are never seen again
			// (TestClaimKeepsAQueueThatGrewActive, make mutate: batched-claim-emptying).
			cond = cond.And(name("waiting").Equal(value(q.Waiting)))
		}
		it, err := updateItem(s.tables.State, key(q.PK, skQueue), up, cond)
		if err != nil {
			fail(err)
			return
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return
	}
	// A lost answer is settled by a queue item of the transaction (every
	// unit's queue update sets last_claim to tok), as writeClaim's is.
	settleBy := t.units[0].c.q.PK
	err := s.transactClaim(ctx, settleBy, items, tok)
	switch {
	case err == nil:
		for _, u := range t.units {
			for _, j := range u.taken {
				u.c.jobs = append(u.c.jobs, j.schedulerJob())
			}
			// Jobs passed over (cancelled) leave the grant short: claim
			// reads on if the queue has more.
			if u.c.remaining() > 0 && u.c.q.Size > u.c.q.Next+u.n {
				u.c.slow = true
			}
		}
	case cancelReasons(err) != nil:
		// Something moved since the Snapshot (an intake registration on
		// an emptying queue, a retried job, another writer): nothing was
		// written; claim reads each queue again.
		for _, u := range t.units {
			u.c.slow = true
		}
	default:
		fail(fmt.Errorf("batched claim: %w", err))
	}
}

// idsOf returns the job ids at each unit's cursor positions, keyed by queue.
// Chunks are aligned to chunkSize positions (Submit writes them so), so the
// chunk of a position is read by key, 100 at a time, cached per queue. A
// queue whose chunk is not where alignment puts it gets fewer ids than its
// unit's n, and goes to claim (which finds any chunk by Query).
func (s *Store) idsOf(ctx context.Context, units []claimUnit) (map[string][]string, error) {
	type want struct {
		pk    string
		start int64
	}
	have := map[want]chunkItem{}
	var missing []want
	s.mu.Lock()
	for _, u := range units {
		pk := u.c.q.PK
		for start := u.c.q.Next / chunkSize * chunkSize; start < u.c.q.Next+u.n; start += chunkSize {
			w := want{pk, start}
			last := min(start+chunkSize, u.c.q.Next+u.n) - 1 // the last position needed from this chunk
			if c, ok := s.chunks[pk]; ok && c.Start == start && c.covers(last) {
				have[w] = c
			} else {
				missing = append(missing, w) // once: Commit batches one grant a queue
			}
		}
	}
	s.mu.Unlock()
	keys := make([]map[string]types.AttributeValue, len(missing))
	for i, w := range missing {
		keys[i] = key(w.pk, chunkSK(w.start))
	}
	chunks, err := batchGetItems[chunkItem](ctx, s, keys)
	if err != nil {
		return nil, fmt.Errorf("read queue order: %w", err)
	}
	for _, c := range chunks {
		have[want{c.PK, c.Start}] = c
	}
	out := make(map[string][]string, len(units))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range units {
		pk, end := u.c.q.PK, u.c.q.Next+u.n
		var ids []string
		for pos := u.c.q.Next; pos < end; {
			c, ok := have[want{pk, pos / chunkSize * chunkSize}]
			if !ok || !c.covers(pos) {
				break
			}
			stop := min(end, c.Start+int64(len(c.IDs)))
			ids = append(ids, c.IDs[pos-c.Start:stop-c.Start]...)
			pos = stop
			if len(s.chunks) >= maxCachedChunks {
				clear(s.chunks) // a cache: what it forgets is read again
			}
			s.chunks[pk] = c
		}
		out[pk] = ids
	}
	return out, nil
}
