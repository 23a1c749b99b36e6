package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/sampling"
)

// A sampled batch's items, beside its jobs (each job item carries its
// stratum):
//
//	SAMPLED#<a>#<p>#<b>  PARAMS            moe, confidence, min_per_stratum; stop_reason once stopped
//	  same pk            JOBS#<token>      strata: the jobs one registration registered, per stratum
//	  same pk            WAITS#<part>#<digest>  a message's wait items are written
//	  same pk            STRATUM#<name>    released: claims add, retries take back
//	  same pk            SEQ               the release log's counter and the sequence (sequence.go)
//	LOG#<a>#<p>#<b>      <place>           a released job that is done (sequence.go)
//	WAIT#<a>#<p>#<b>#<stratum>  <rank>#<key>  a waiting job, in release order (release.go)
//
// A JOBS# item is written in the transaction that registers its jobs, so
// a job counts once whatever part or message repeats it, and the strata's
// sizes are the sums over the JOBS# items (and the PART# items of the
// first release, which counted a repeated job twice). The released
// counts move in the claim's transaction and the retry's.
//
// A claim splits its grant over the strata by sampling.Sequence.Next and
// takes each stratum's lowest-ranked waiting jobs (release.go), as
// memstore does. Once the stop rule holds on the release log's completed
// prefix (sequence.go), the result that made it hold ends the batch's
// waiting jobs SKIPPED (stopIfDone).

const (
	sampledPrefix  = "SAMPLED#"
	skParams       = "PARAMS"
	partPrefix     = "PART#"  // sizes, as the first release wrote them: read, no longer written
	jobsPrefix     = "JOBS#"  // sizes: a registration's jobs per stratum
	waitsPrefix    = "WAITS#" // a message's wait items are written
	stratumPrefix  = "STRATUM#"
	attrStrataJobs = "strata"
	// attrStopReason on the PARAMS item is the stop's mark: the reason
	// its jobs were skipped with, written once, before the skip.
	attrStopReason = "stop_reason"
)

func sampledPK(batch string) string { return sampledPrefix + strings.ReplaceAll(batch, "/", "#") }

// sampledItems are a sampled registration's items, in the transaction
// that registers its jobs (submit.go): the batch's parameters (updates
// that set every attribute, not puts: the intake's role updates items and
// never puts one; a stop's mark stays) and the strata of the jobs it
// registers, under a key of its own (the Submit's lock token). A job
// registered once is counted once: a part or message that repeats it
// skips it and counts nothing for it, a redelivery after the registration
// registers and counts nothing, and one after a crash before it counts
// what it registers then.
func (s *Store) sampledItems(b job.BatchSpec, owner string, strata map[string]int) ([]types.TransactWriteItem, error) {
	pk := sampledPK(b.Account + "/" + b.Project + "/" + b.Batch)
	params, err := updateItem(s.tables.State, key(pk, skParams),
		expression.Set(name("moe"), value(b.Sampling.MOE)).
			Set(name("confidence"), value(b.Sampling.Confidence)).
			Set(name("min_per_stratum"), value(b.Sampling.MinPerStratum)).
			Set(name("window"), value(b.Sampling.Window)), expression.ConditionBuilder{})
	if err != nil {
		return nil, err
	}
	sizes, err := updateItem(s.tables.State, key(pk, jobsPrefix+owner),
		expression.Set(name(attrStrataJobs), value(strata)).Set(name("part"), value(b.Part)), expression.ConditionBuilder{})
	if err != nil {
		return nil, err
	}
	return []types.TransactWriteItem{params, sizes}, nil
}

// registerSampling writes a sampled message's wait items once its jobs
// are registered (they are claimable from then on), then the message's
// mark (its part and digest): a redelivery of a message whose mark exists
// writes nothing; one that crashed before it writes the wait items again
// (stale ones, of jobs claimed meanwhile, a claim deletes). The mark is
// per message, not per part: a batch without parts may take several
// messages, each with its own jobs to make claimable.
func (s *Store) registerSampling(ctx context.Context, b job.BatchSpec) error {
	pk := sampledPK(b.Account + "/" + b.Project + "/" + b.Batch)
	mark := key(pk, waitsPrefix+strconv.Itoa(b.Part)+"#"+b.PartSum())
	done, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: mark, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("register sampling: %w", err)
	}
	if len(done.Item) > 0 {
		return nil
	}
	if err := s.putWaits(ctx, b); err != nil {
		return fmt.Errorf("register sampling: write waiting jobs: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.State), Key: mark,
		UpdateExpression:          aws.String("SET jobs = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": number(int64(len(b.Jobs)))},
	})
	if err != nil {
		return fmt.Errorf("register sampling of %s/%s/%s part %d: %w", b.Account, b.Project, b.Batch, b.Part, err)
	}
	return nil
}

// sampledState is what one Query of a sampled batch's SAMPLED#
// partition reads: its parameters, stop mark, strata (sizes, released)
// and the SEQ item.
type sampledState struct {
	params sampling.Params
	stop   string // the stop's mark
	strata map[string]*sampling.Stratum
	seq    seqItem
}

func (sb sampledState) sizes() map[string]int {
	out := map[string]int{}
	for n, st := range sb.strata {
		if st.Jobs > 0 { // a stratum item before its registration's sizes
			out[n] = st.Jobs
		}
	}
	return out
}

// readSampled reads a sampled batch's SAMPLED# partition (found false: not
// sampled, or not registered yet).
func (s *Store) readSampled(ctx context.Context, batch string) (sampledState, bool, error) {
	sb := sampledState{strata: map[string]*sampling.Stratum{}, seq: seqItem{Hi: 1}}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.State),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: sampledPK(batch)}},
		ConsistentRead:            aws.Bool(true),
	}, 0)
	if err != nil {
		return sb, false, fmt.Errorf("read sampling of %s: %w", batch, err)
	}
	found := false
	stratum := func(n string) *sampling.Stratum {
		if sb.strata[n] == nil {
			sb.strata[n] = &sampling.Stratum{Name: n}
		}
		return sb.strata[n]
	}
	for _, it := range items {
		sk, _ := it["sk"].(*types.AttributeValueMemberS)
		if sk == nil {
			continue
		}
		var err error
		switch {
		case sk.Value == skParams:
			var v struct {
				MOE  float64 `dynamodbav:"moe"`
				Conf float64 `dynamodbav:"confidence"`
				Min  int     `dynamodbav:"min_per_stratum"`
				Win  int     `dynamodbav:"window"`
				Stop string  `dynamodbav:"stop_reason"`
			}
			err = attributevalue.UnmarshalMap(it, &v)
			sb.params, found = sampling.Params{MOE: v.MOE, Confidence: v.Conf, MinPerStratum: v.Min, Window: v.Win}, true
			sb.stop = v.Stop
		case sk.Value == skSeq:
			err = attributevalue.UnmarshalMap(it, &sb.seq)
			if _, has := it["ver"]; !has {
				sb.seq.Hi = 1 // claims wrote it, no advance yet
			}
		case strings.HasPrefix(sk.Value, jobsPrefix), strings.HasPrefix(sk.Value, partPrefix):
			var v struct {
				Strata map[string]int `dynamodbav:"strata"`
			}
			err = attributevalue.UnmarshalMap(it, &v)
			for name, jobs := range v.Strata {
				stratum(name).Jobs += jobs
			}
		case strings.HasPrefix(sk.Value, stratumPrefix):
			var v struct {
				Released int `dynamodbav:"released"`
			}
			err = attributevalue.UnmarshalMap(it, &v)
			stratum(strings.TrimPrefix(sk.Value, stratumPrefix)).Released = v.Released
		}
		if err != nil {
			return sb, false, fmt.Errorf("read sampling of %s: %w", batch, err)
		}
	}
	return sb, found, nil
}

// batch is the state as status shows it: the betting sequence's interval
// over the release log's counted prefix, the batch's and each stratum's
// alone; Results and Passes count the prefix's results. Stop holds when
// every stratum has min(min_per_stratum, N_h) results counted and the
// half-width is within moe (the caller checks that every part is in).
func (sb sampledState) batch(id string, st seqState) job.SampledBatch {
	out := job.SampledBatch{Batch: id, Params: sb.params, Stopped: sb.stop != "", Reason: sb.stop}
	estimate := func(q *sampling.Sequence, jobs int) sampling.Estimate {
		lo, hi := q.Bounds()
		return sampling.Estimate{Mean: (lo + hi) / 2, HalfWidth: (hi - lo) / 2, Lower: lo, Upper: hi, Results: q.Results(), Jobs: jobs}
	}
	short, total := false, 0
	for h, name := range st.names {
		c := *sb.strata[name]
		c.Results, c.Passes = st.seq.Counted(h), st.seq.Passes(h)
		total += c.Jobs
		short = short || c.Results < min(sb.params.MinPerStratum, c.Jobs)
		out.Strata = append(out.Strata, job.SampledStratum{Stratum: c, Estimate: estimate(st.own[h], c.Jobs)})
	}
	out.Estimate = estimate(st.seq, total)
	out.Estimate.Stop = !short && len(st.names) > 0 && out.Estimate.HalfWidth <= sb.params.MOE
	return out
}

// Sampled reads a sampled batch's state (account/project/batch): its
// parameters, the strata's sizes, released jobs and counted results, the
// betting sequence's interval of the batch and of each stratum, and
// whether the stop rule holds (every part arrived). ok is false for a
// batch that is not sampled. One Query (and the batch's parts).
func (s *Store) Sampled(ctx context.Context, batch string) (job.SampledBatch, bool, error) {
	sb, found, err := s.readSampled(ctx, batch)
	if err != nil || !found {
		return job.SampledBatch{}, false, err
	}
	st, err := s.current(ctx, batch, sb, time.Time{})
	if err != nil {
		return job.SampledBatch{}, false, err
	}
	return s.withParts(ctx, batch, sb.batch(batch, st))
}

// withParts clears out's stop while a part of the batch has not arrived:
// the strata's sizes are not all known yet.
func (s *Store) withParts(ctx context.Context, batch string, out job.SampledBatch) (job.SampledBatch, bool, error) {
	a, pr, b := splitBatch(batch)
	seen, total, err := s.BatchParts(ctx, a, pr, b)
	if err != nil {
		return job.SampledBatch{}, false, err
	}
	if total > 0 && len(seen) < total {
		out.Estimate.Stop = false
	}
	return out, true, nil
}

// splitBatch splits account/project/batch.
func splitBatch(id string) (string, string, string) {
	a, rest, _ := strings.Cut(id, "/")
	p, b, _ := strings.Cut(rest, "/")
	return a, p, b
}

// skipStep is how many queue positions skipRest reads at a time.
const skipStep = 1000

// stopIfDone ends the waiting jobs of j's sampled batch SKIPPED when its
// stop rule holds (every part in): after a counted result, the one event
// that moves the estimate. It first marks the stop on the batch's PARAMS
// item (the reason, kept from the first stop), then reads the queue: a
// retry that put a job back before the mark is among the jobs read and
// skipped; one after it is refused by the mark and skips its job itself
// (events.go). A sampled batch runs one model, so its waiting jobs are in
// one queue. Idempotent: run again (a redelivered result, a crash half
// way), it skips what is still waiting, with the marked reason.
func (s *Store) stopIfDone(ctx context.Context, j jobItem, now time.Time) error {
	batch := j.batchID()
	st, seq, err := s.advance(ctx, batch, now)
	if err != nil || len(st.strata) == 0 {
		return err
	}
	sb, _, err := s.withParts(ctx, batch, st.batch(batch, seq))
	if err != nil || !sb.Estimate.Stop && !sb.Stopped {
		return err
	}
	reason := sb.Reason
	if !sb.Stopped {
		e := sb.Estimate
		reason = fmt.Sprintf("sampling stopped: pass rate %.4f ± %.4f at %g%% confidence after %d of %d results",
			e.Mean, e.HalfWidth, sb.Params.Confidence*100, e.Results, e.Jobs)
		res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.tables.State), Key: key(sampledPK(batch), skParams),
			UpdateExpression:          aws.String("SET #r = if_not_exists(#r, :r)"),
			ExpressionAttributeNames:  map[string]string{"#r": attrStopReason},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: reason}},
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		if err != nil {
			return fmt.Errorf("mark the stop of %s: %w", batch, err)
		}
		reason = text(res.Attributes[attrStopReason]) // another stop's, if it marked first
	}
	q, ok, err := s.readQueue(ctx, j.Queue)
	if err != nil || !ok || q.Waiting == 0 {
		return err
	}
	return s.skipRest(ctx, q, reason, now)
}

// stopReason reads the stop mark of a sampled batch.
func (s *Store) stopReason(ctx context.Context, batch string) (string, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(sampledPK(batch), skParams), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#r"), ExpressionAttributeNames: map[string]string{"#r": attrStopReason},
	})
	if err != nil {
		return "", fmt.Errorf("read the stop of %s: %w", batch, err)
	}
	return text(res.Item[attrStopReason]), nil
}

// skipRest moves every waiting job of the queue, at or past its cursor and
// among its retried jobs, to SKIPPED with the reason: transactions of up to
// 99 jobs (each conditioned on WAITING and its attempt) with the queue's
// waiting counter and its skipped count. A claim that takes a job first
// wins: the transaction is cancelled and the step read again. The queue
// leaves the active index once nothing waits; the cursor passes the
// skipped jobs as it passes cancelled ones.
func (s *Store) skipRest(ctx context.Context, q queueItem, reason string, now time.Time) error {
	var ids []string
	backs, err := s.readBacks(ctx, q.PK, int(q.Backs))
	if err != nil {
		return err
	}
	backOf := map[string]backItem{}
	for _, b := range backs {
		ids = append(ids, b.ID)
		backOf[b.ID] = b
	}
	for pos := q.Next; pos < q.Size || len(ids) > 0; pos += skipStep {
		if pos < q.Size {
			more, err := s.idsAt(ctx, q.PK, pos, min(skipStep, q.Size-pos))
			if err != nil {
				return err
			}
			ids = append(ids, more...)
		}
		for tries := 0; len(ids) > 0; tries++ {
			jobs, err := s.readJobs(ctx, ids)
			if err != nil {
				return err
			}
			var waiting []jobItem
			for _, id := range ids {
				if j, ok := jobs[id]; ok && j.State == job.Waiting {
					waiting = append(waiting, j)
				}
			}
			err = s.skipJobs(ctx, q.PK, waiting, backOf, reason, now)
			if cancelReasons(err) != nil && tries < maxConflicts {
				continue // a claim took one of them: read the step again
			}
			if err != nil {
				return fmt.Errorf("skip the rest of %s: %w", q.PK, err)
			}
			ids = nil
		}
	}
	// Guard: the queue leaves the active index only while nothing waits in
	// it, else a job registered after the skip read (a new message of a
	// batch without parts) would wait where no pass looks. Without it
	// TestStopKeepsAQueueANewMessageCameTo fails (make mutate:
	// sampled-skip-emptying).
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.State), Key: key(q.PK, skQueue),
		UpdateExpression: aws.String("REMOVE #a"), ConditionExpression: aws.String("waiting = :z"),
		ExpressionAttributeNames: map[string]string{"#a": attrActive}, ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"}},
	})
	if err != nil && !isConditionFailed(err) { // a retried job came back meanwhile: it stays active
		return fmt.Errorf("skip the rest of %s: %w", q.PK, err)
	}
	return nil
}

// skipJobs writes the SKIPPED of jobs with the queue's counters, up to
// transactMax items at a time. A retried job's back item goes in the same
// transaction (and the queue's count of them down by one), so no back item
// outlives its job's wait to hold the batched claim off the queue; so does
// a sampled job's wait item, so claims after the stop (of a job retried
// since) do not wade through the skipped.
func (s *Store) skipJobs(ctx context.Context, pk string, jobs []jobItem, backOf map[string]backItem, reason string, now time.Time) error {
	for len(jobs) > 0 {
		var items []types.TransactWriteItem
		n, nb := 0, 0
		for _, j := range jobs {
			b, back := backOf[j.ID]
			back = back && b.Pos == j.Pos && b.Attempt == j.Attempt
			placed := j.Stratum != "" && j.ReleasePos != nil
			if len(items)+2+btoi(back)+btoi(placed) > transactMax-1 {
				break
			}
			c, err := judged(j, job.Skip, reason)
			if err != nil {
				return err
			}
			u := s.expiry(expression.Set(name("state"), value(c.To)).
				Set(name("ended_at"), value(stamp(now))).
				Set(name("reason"), value(c.Reason)), now)
			// Guard: a stop skips only a job still WAITING at the attempt it
			// read, never one a pass claimed (or an event moved) meanwhile;
			// the transaction is refused and the step read again. Without it
			// TestStopLeavesAJobClaimedMeanwhile fails (make mutate:
			// sampled-skip-job).
			it, err := updateItem(s.tables.State, key(j.PK, skJob), u,
				name("state").Equal(value(job.Waiting)).And(name("attempt").Equal(value(j.Attempt))))
			if err != nil {
				return err
			}
			items = append(items, it)
			if j.Stratum != "" {
				w := waitOf(j, j.Attempt)
				items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.tables.State), Key: key(w.PK, w.SK)}})
			}
			if placed {
				// A retried job with its place in the release log ends
				// unmeasured there, as a cancel's (cancel.go).
				it, err := s.logOutcome(j.batchID(), j.Stratum, *j.ReleasePos, outcomeNone)
				if err != nil {
					return err
				}
				items = append(items, it)
			}
			if back { // taken with its job: the job's condition makes it once
				items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.tables.State), Key: key(pk, b.SK)}})
				nb++
			}
			n++
		}
		it, err := updateItem(s.tables.State, key(pk, skQueue),
			expression.Add(name("waiting"), value(-n)).Add(name("skipped"), value(n)).Add(name("backs"), value(-nb)), expression.ConditionBuilder{})
		if err != nil {
			return err
		}
		if err := s.transact(ctx, append(items, it), token()); err != nil {
			return err
		}
		jobs = jobs[n:]
	}
	return nil
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
