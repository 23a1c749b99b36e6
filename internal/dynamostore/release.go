package dynamostore

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// A sampled batch's jobs are released per stratum in Neyman proportions,
// as memstore releases them, not through its queue's cursor. Each waiting
// job of a sampled batch has a wait item in its stratum's partition,
// sorted by the job's keyed rank (sampling.Rank):
//
//	WAIT#<a>#<p>#<b>#<stratum>  <rank, 16 hex>#<key>   id, attempt
//
// so a Query of a stratum's partition with Limit n returns its n
// lowest-ranked waiting jobs, whatever part of the batch brought them: a
// batch sent in several parts is released in one random order per
// stratum. The queue item stays what the pass sees (size, waiting,
// active): a Grant{Queue, Count} is split across strata here, by
// sampling.Sequence.Next over the release log's counted prefix
// (sequence.go), retried jobs first.
//
// Wait items are an index, not the claim's guard: the job's own condition
// (WAITING at the attempt read) makes a claim once. So they are written
// without conditions — after the registration that makes their jobs
// waiting (registerSampling), again on a retry (events.go) — and an item
// whose job is no longer waiting is stale: a cancel (which walks the
// cursor) leaves them, as does a redelivered message. A claim that meets
// one deletes it, conditioned on the attempt it read.
//
// Both claim paths see a sampled queue: the batched one (batchclaim.go) finds
// a stratum on the jobs at the cursor and hands the grant to take, which
// reads the queue item (its "sampled" flag) and comes here. One path, so
// the allocation is computed once per grant from one read of the counts;
// sampled batches are few beside the ~200 queues a pass batches.

const (
	waitPrefix   = "WAIT#"
	attrSampledQ = "sampled" // on a sampled batch's queue item: claims come here
	attrReleased = "released"
	// maxSampledClaim bounds the jobs of one sampled claim transaction:
	// per job its item and its wait item, plus the queue, the counters
	// and a stratum item per stratum claimed from (≤ 2·32+32+2 ≤ 100).
	maxSampledClaim = 32
)

// waitItem is a waiting job of a sampled batch in its stratum's order.
type waitItem struct {
	PK      string `dynamodbav:"pk"`
	SK      string `dynamodbav:"sk"`
	ID      string `dynamodbav:"id"`
	Attempt int    `dynamodbav:"attempt"`
}

func waitPK(batch, stratum string) string {
	return waitPrefix + strings.ReplaceAll(batch, "/", "#") + "#" + stratum
}

func waitSK(batch, key string) string { return fmt.Sprintf("%016x#%s", sampling.Rank(batch, key), key) }

// waitOf is the wait item of a job at an attempt.
func waitOf(j jobItem, attempt int) waitItem {
	b := j.batchID()
	return waitItem{PK: waitPK(b, j.Stratum), SK: waitSK(b, j.Key), ID: j.ID, Attempt: attempt}
}

func (j jobItem) batchID() string { return j.Account + "/" + j.Project + "/" + j.Batch }

// putWaits writes the wait items of a sampled message's jobs at attempt 1
// (registerSampling, after the jobs are registered). A job claimed since
// an earlier delivery wrote its item gets a stale one, which a claim
// deletes.
func (s *Store) putWaits(ctx context.Context, b job.BatchSpec) error {
	batch := b.Account + "/" + b.Project + "/" + b.Batch
	reqs := make([]types.WriteRequest, 0, len(b.Jobs))
	for _, js := range b.Jobs {
		w := waitItem{PK: waitPK(batch, js.Stratum), SK: waitSK(batch, js.Key), ID: job.JobID(b.Account, b.Project, b.Batch, js.Key), Attempt: 1}
		item, err := attributevalue.MarshalMap(w)
		if err != nil {
			return err
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	return s.batchWrite(ctx, s.tables.State, reqs)
}

// readWaits returns up to n of a stratum's wait items, lowest rank first.
func (s *Store) readWaits(ctx context.Context, batch, stratum string, n int) ([]waitItem, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.State),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: waitPK(batch, stratum)}},
	}, n)
	if err != nil {
		return nil, fmt.Errorf("read waiting jobs of stratum %q: %w", stratum, err)
	}
	var out []waitItem
	if err := attributevalue.UnmarshalListOfMaps(items, &out); err != nil {
		return nil, fmt.Errorf("read waiting jobs of stratum %q: %w", stratum, err)
	}
	return out, nil
}

// dropStaleWait deletes a wait item whose job is no longer waiting.
func (s *Store) dropStaleWait(ctx context.Context, w waitItem) error {
	// Guard: a stale wait item is deleted only as it was read, never the
	// one a retry put back meanwhile (same key, the next attempt), which
	// would leave the retried job waiting where no claim looks. Without it
	// TestStaleWaitItemKeepsARetryPutBackMeanwhile fails (make mutate:
	// sampled-stale-wait).
	it, err := deleteItem(s.tables.State, key(w.PK, w.SK), name("attempt").Equal(value(w.Attempt)))
	if err != nil {
		return err
	}
	d := it.Delete
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: d.TableName, Key: d.Key, ConditionExpression: d.ConditionExpression,
		ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues,
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("delete a stale wait item: %w", err)
	}
	return nil
}

// passUnreported moves the counted prefix of a sampled batch past a job
// at its head that succeeded without reporting and whose result grace is
// out at now, and stops the batch if that completes its rule
// (stopIfDone): no result or end comes to move it then, so the claims,
// which come every pass, look. One read of the log item at the prefix;
// passed reports whether it moved.
func (s *Store) passUnreported(ctx context.Context, batch, queuePK string, sb sampledState, now time.Time) (passed bool, err error) {
	if sb.seq.Prefix >= sb.seq.Log {
		return false, nil
	}
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(logPK(batch), logSK(sb.seq.Prefix)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("read the release log of %s: %w", batch, err)
	}
	var e logEntry
	if len(res.Item) == 0 || attributevalue.UnmarshalMap(res.Item, &e) != nil || e.Outcome != "" || !e.done(now, s.ResultGrace) {
		return false, nil
	}
	a, p, b := splitBatch(batch)
	if err := s.stopIfDone(ctx, jobItem{Account: a, Project: p, Batch: b, Queue: queuePK}, now); err != nil {
		return false, fmt.Errorf("pass an unreported job of %s: %w", batch, err)
	}
	return true, nil
}

// claimSampled claims up to g.Count jobs of a sampled batch's queue: per
// round (≤ maxSampledClaim jobs), allocate splits the round over the
// strata from the sequence as read now, each stratum gives its
// lowest-ranked wait items, and one transaction claims their jobs with
// the queue's waiting count, the model's counters, the strata's released
// counts and (for jobs claimed the first time) their places in the
// release log. A stratum that has fewer wait items than allocated is
// out of waiting jobs for this claim (its size may count a part not yet
// registered) and gets no more.
func (s *Store) claimSampled(ctx context.Context, g scheduler.Grant, at time.Time) ([]scheduler.Job, error) {
	pk := queuePK(g.Queue)
	batch := g.Queue.Account + "/" + g.Queue.Project + "/" + g.Queue.Batch
	atKey := stamp(at)
	var out []scheduler.Job
	empty := map[string]bool{}
	looked := false // passUnreported, once per claim
	for conflicts := 0; len(out) < g.Count; {
		q, ok, err := s.readQueue(ctx, pk)
		if err != nil {
			return out, fmt.Errorf("read queue: %w", err)
		}
		if !ok || q.Waiting <= 0 || q.Cancelling != "" {
			return out, nil
		}
		sb, found, err := s.readSampled(ctx, batch)
		if err != nil || !found {
			return out, err // not found: its sampling is not registered yet; the next pass
		}
		if !looked {
			looked = true
			if passed, err := s.passUnreported(ctx, batch, pk, sb, at); err != nil || passed {
				if err != nil {
					return out, err
				}
				continue // the prefix moved, and the batch may have stopped: read again
			}
		}
		st, err := s.current(ctx, batch, sb, at)
		if err != nil {
			return out, err
		}
		room := min(g.Count-len(out), maxSampledClaim)
		if w := sb.params.Window; w > 0 {
			// At most Window places past the counted prefix, as memstore:
			// retried jobs (their places are in the log) come back first
			// whatever the window.
			room = min(room, w-int(sb.seq.Log-st.prefix)+backs(sb, st))
		}
		order := allocate(sb, st, empty, max(room, 0))
		alloc := make([]int, len(st.names))
		if len(order) == 0 && sb.params.Window > 0 {
			return out, nil // the window is full: a slow job holds the prefix
		}
		for _, h := range order {
			alloc[h]++
		}
		byStratum := make([][]waitItem, len(st.names))
		for i, a := range alloc {
			if a == 0 {
				continue
			}
			if byStratum[i], err = s.readWaits(ctx, batch, st.names[i], a); err != nil {
				return out, err
			}
			if len(byStratum[i]) < a {
				empty[st.names[i]] = true
			}
		}
		// In the order allocate picked the strata: the release order.
		var waits []waitItem
		for _, h := range order {
			if len(byStratum[h]) > 0 {
				waits, byStratum[h] = append(waits, byStratum[h][0]), byStratum[h][1:]
			}
		}
		if len(order) == 0 {
			return out, nil // every stratum released in full
		}
		ids := make([]string, len(waits))
		for i, w := range waits {
			ids[i] = w.ID
		}
		jobs, err := s.readJobs(ctx, ids)
		if err != nil {
			return out, err
		}

		tok := token()
		var items []types.TransactWriteItem
		var taken []jobItem
		log, logged := sb.seq.Log, maps.Clone(sb.seq.Logged)
		if logged == nil {
			logged = map[string]int64{}
		}
		per := map[string]int64{}
		for _, w := range waits {
			j, ok := jobs[w.ID]
			if !ok || j.State != job.Waiting {
				if err := s.dropStaleWait(ctx, w); err != nil {
					return out, err
				}
				continue
			}
			// Guard: the job is claimed only if still WAITING at the
			// attempt read: of two claims that read the same wait item,
			// the second's transaction is refused and it reads again (a new
			// place's counter refuses it too; a retried job takes none).
			// Without it TestRacingSampledClaimsTakeARetriedJobOnce fails (make
			// mutate: sampled-claim-job).
			j.ResultToken = s.resultToken()
			u, err := claimUpdate(&j, g.Tier, atKey)
			if err != nil {
				return out, err
			}
			cond := name("state").Equal(value(job.Waiting)).And(name("attempt").Equal(value(j.Attempt)))
			if j.ReleasePos == nil { // its first claim: the next place in the release log
				u = u.Set(name(attrReleasePos), value(log))
				// Guard: a job's place is never overwritten: a job claimed,
				// given a place and sent back to waiting by a provider retry
				// since this read keeps the place it had. That race also
				// moves the job's attempt and the log counter, whose
				// conditions refuse it first; this one holds if either goes
				// (a path back to waiting at the same attempt). Without the
				// three TestSampledClaimRacingAProviderRetryKeepsItsPlace
				// fails; with this one alone it passes (make mutate:
				// sampled-claim-place).
				cond = cond.And(name(attrReleasePos).AttributeNotExists())
				logged[j.Stratum]++
				log++
			}
			it, err := updateItem(s.tables.State, key(j.PK, skJob), u, cond)
			if err != nil {
				return out, err
			}
			// The wait item goes with the claim (whatever attempt it
			// names: the job's condition makes the pair once).
			items = append(items, it, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.tables.State), Key: key(w.PK, w.SK)}})
			taken = append(taken, j)
			per[j.Stratum]++
		}
		if len(taken) == 0 {
			continue // only stale items (now deleted), or strata found empty: allocate again
		}
		k := int64(len(taken))
		qu := expression.Set(name("last_claim"), value(tok)).Add(name("waiting"), value(-k))
		// Guard: as takeFront's (unmarked; make mutate: sampled-claim-unmarked).
		cond := unmarked()
		if q.Waiting-k <= 0 {
			// Guard: the queue leaves the active index only if no job was
			// registered or retried since the read, else that job waits
			// where no pass looks. Without it
			// TestSampledClaimKeepsAQueueARetryCameBackTo fails (make
			// mutate: sampled-claim-emptying).
			qu = qu.Remove(name(attrActive))
			cond = cond.And(name("waiting").Equal(value(q.Waiting)))
		}
		it, err := updateItem(s.tables.State, key(pk, skQueue), qu, cond)
		if err != nil {
			return out, err
		}
		items = append(items, it)
		for st, n := range per {
			if it, err = updateItem(s.tables.State, key(sampledPK(batch), stratumPrefix+st), expression.Add(name(attrReleased), value(n)), expression.ConditionBuilder{}); err != nil {
				return out, err
			}
			items = append(items, it)
		}

		if log > sb.seq.Log {
			// Guard: positions are handed out from the log counter as read:
			// of two claims that read it, the second is refused and reads
			// again, so no two jobs share a place. Without it
			// TestRacingSampledClaimsTakeTheirOwnPlaces fails (make mutate:
			// sampled-claim-log).
			cond := name("log").Equal(value(sb.seq.Log))
			if sb.seq.Log == 0 {
				cond = expression.Or(name("log").AttributeNotExists(), cond)
			}
			if it, err = updateItem(s.tables.State, key(sampledPK(batch), skSeq),
				expression.Set(name("log"), value(log)).Set(name("logged"), value(logged)), cond); err != nil {
				return out, err
			}
			items = append(items, it)
		}

		applied, err := s.writeClaim(ctx, pk, items, tok, &conflicts)
		if err != nil {
			return out, err
		}
		if !applied {
			clear(empty) // a retry may have refilled a stratum
			continue
		}
		for _, j := range taken {
			out = append(out, j.schedulerJob())
		}
	}
	return out, nil
}

// backs is the batch's jobs that hold a place in the release log and wait
// again (retried): logged, not released.
func backs(sb sampledState, st seqState) int {
	n := 0
	for _, name := range st.names {
		n += max(0, int(sb.seq.Logged[name])-sb.strata[name].Released)
	}
	return n
}

// allocate splits k claims over a sampled batch's strata as memstore's
// take does: first the jobs that hold a place in the release log and wait
// again (a retry: logged, not released), then one at a time by
// sampling.Sequence.Next on the counted prefix, with each stratum's
// claims past the prefix pending. It returns the stratum of each claim,
// in order: the order the claims take their places in the release log. A stratum in empty has no wait item
// left for this claim and gets nothing new.
func allocate(sb sampledState, st seqState, empty map[string]bool, k int) (order []int) {
	pending := make([]int, len(st.names))
	for h, n := range st.names {
		logged := int(sb.seq.Logged[n])
		pending[h] = logged - st.passed[h]
		back := min(max(0, logged-sb.strata[n].Released), k)
		if empty[n] {
			back = 0
		}
		for range back {
			order = append(order, h)
		}
		k -= back
		if empty[n] {
			pending[h] = st.seq.Size(h) - st.seq.Counted(h)
		}
	}
	for ; k > 0; k-- {
		h := st.seq.Next(pending)
		if h < 0 {
			break
		}
		order = append(order, h)
		pending[h]++
	}
	return order
}
