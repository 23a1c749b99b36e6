package dynamostore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/sampling"
)

// A sampled batch's stop, as memstore's: on its release log's completed
// prefix, with the betting confidence sequence (sampling.Sequence).
//
//	job item                       release_pos   its place in the batch's release log, set by its first claim
//	SAMPLED#<a>#<p>#<b>  SEQ       log, logged   positions handed out (per stratum in logged), by claims;
//	                               prefix, ver, strata, a, b, lo, hi: the sequence over log[:prefix]
//	LOG#<a>#<p>#<b>      <pos, 12 digits>  stratum, outcome  a released job that is done: pass, fail,
//	                                                         or none (ended without a result)
//	                                       ended             a job that succeeded: its end, for its
//	                                                         result grace (no outcome yet: waited for)
//
// A claim gives each job it takes for the first time the next position
// (conditioned on the log counter it read, as on the job's state), so the
// release order is durable and a retry keeps its place. A result, or a
// job's end without one, writes its position's LOG item; then advance
// counts every LOG item from the prefix on, up to the first position
// still running, into the sequence and writes it back (conditioned on
// its version: two advances racing, one wins and the other reads again).
// A result past an unfinished position waits in its LOG item: a job that
// runs longer because of its outcome holds the stop, it cannot bias it.
//
// Size: the SEQ item holds O(strata) numbers (per stratum: its size, n_h,
// S_h, D_h, the entries passed, and its own one-stratum sequence), never a
// per-job list; per-job facts live in one LOG item per released job. A
// batch of 50,000 jobs in one stratum has a SEQ item of one stratum.
const (
	skSeq          = "SEQ"
	logPrefix      = "LOG#"
	attrReleasePos = "release_pos"
	outcomePass    = "pass"
	outcomeFail    = "fail"
	outcomeNone    = "none"
)

// maxAdvances bounds the re-reads of an advance that lost its race: each
// loss is another advance's progress, so only heavy contention gets there;
// the error then makes the result's delivery repeat (RecordResult).
const maxAdvances = 64

func logPK(batch string) string { return logPrefix + strings.ReplaceAll(batch, "/", "#") }

func logSK(pos int64) string { return fmt.Sprintf("%012d", pos) }

// seqStratum is one stratum's part of the SEQ item.
type seqStratum struct {
	Jobs   int     `dynamodbav:"jobs"` // N_h the sums below were built for
	Seen   int     `dynamodbav:"seen"`
	Pass   int     `dynamodbav:"pass"`
	D      float64 `dynamodbav:"d"`
	Passed int     `dynamodbav:"passed"` // its LOG entries in the prefix, counted or passed over
	// Its own one-stratum sequence (status's per-stratum interval).
	OwnD  float64 `dynamodbav:"own_d"`
	OwnA  float64 `dynamodbav:"own_a"`
	OwnB  float64 `dynamodbav:"own_b"`
	OwnLo float64 `dynamodbav:"own_lo"`
	OwnHi float64 `dynamodbav:"own_hi"`
}

// seqItem is the SEQ item.
type seqItem struct {
	Log    int64                 `dynamodbav:"log"`
	Logged map[string]int64      `dynamodbav:"logged"`
	Ver    int64                 `dynamodbav:"ver"`
	Prefix int64                 `dynamodbav:"prefix"`
	Strata map[string]seqStratum `dynamodbav:"strata"`
	A      float64               `dynamodbav:"a"`
	B      float64               `dynamodbav:"b"`
	Lo     float64               `dynamodbav:"lo"`
	Hi     float64               `dynamodbav:"hi"`
}

// seqState is the sequence of a batch rebuilt from its SEQ item for the
// strata's sizes now (names sorted: the sequence's order). fresh is true
// when the item was built for other sizes (a part came since) or never
// written: the sequence starts over from position 0, as memstore's does.
type seqState struct {
	names  []string
	index  map[string]int
	seq    *sampling.Sequence
	own    []*sampling.Sequence
	passed []int
	prefix int64
	fresh  bool
}

func restoreSeq(p sampling.Params, sizes map[string]int, it seqItem) seqState {
	st := seqState{names: slices.Sorted(maps.Keys(sizes)), index: map[string]int{}}
	n := make([]int, len(st.names))
	for h, name := range st.names {
		n[h], st.index[name] = sizes[name], h
	}
	st.passed, st.own = make([]int, len(n)), make([]*sampling.Sequence, len(n))
	whole := sampling.SequenceState{Seen: make([]int, len(n)), Pass: make([]int, len(n)), D: make([]float64, len(n)), A: it.A, B: it.B, Lo: it.Lo, Hi: it.Hi}
	ok := len(it.Strata) == len(n)
	for h, name := range st.names {
		ss, found := it.Strata[name]
		if !found || ss.Jobs != n[h] {
			ok = false
			break
		}
		whole.Seen[h], whole.Pass[h], whole.D[h], st.passed[h] = ss.Seen, ss.Pass, ss.D, ss.Passed
		one := sampling.SequenceState{Seen: []int{ss.Seen}, Pass: []int{ss.Pass}, D: []float64{ss.OwnD}, A: ss.OwnA, B: ss.OwnB, Lo: ss.OwnLo, Hi: ss.OwnHi}
		if st.own[h], ok = sampling.RestoreSequence(p, []int{n[h]}, one); !ok {
			break
		}
	}
	if ok {
		st.seq, ok = sampling.RestoreSequence(p, n, whole)
	}
	if ok && len(n) > 0 {
		st.prefix = it.Prefix
		return st
	}
	st.seq, st.prefix, st.fresh = sampling.NewSequence(p, n), 0, true
	clear(st.passed)
	for h := range st.own {
		st.own[h] = sampling.NewSequence(p, []int{n[h]})
	}
	return st
}

// item is the state's part of the SEQ item (not log, logged: the claims').
func (st seqState) item(ver int64) seqItem {
	whole := st.seq.State()
	it := seqItem{Ver: ver, Prefix: st.prefix, Strata: map[string]seqStratum{}, A: whole.A, B: whole.B, Lo: whole.Lo, Hi: whole.Hi}
	for h, name := range st.names {
		one := st.own[h].State()
		it.Strata[name] = seqStratum{
			Jobs: st.seq.Size(h), Seen: whole.Seen[h], Pass: whole.Pass[h], D: whole.D[h], Passed: st.passed[h],
			OwnD: one.D[0], OwnA: one.A, OwnB: one.B, OwnLo: one.Lo, OwnHi: one.Hi,
		}
	}
	return it
}

// logEntry is a LOG item.
type logEntry struct {
	SK      string `dynamodbav:"sk"`
	Stratum string `dynamodbav:"stratum"`
	Outcome string `dynamodbav:"outcome"`
	Ended   string `dynamodbav:"ended"` // a job that succeeded: its end (stamp)
}

// done reports whether the entry's place may be counted or passed over at
// now: it has an outcome, or its job succeeded and has not reported
// within the result grace (sampling.Unreported; a zero now waits).
func (e logEntry) done(now time.Time, grace time.Duration) bool {
	if e.Outcome != "" {
		return true
	}
	ended, err := parseStamp(e.Ended)
	return err == nil && sampling.Unreported(ended, now, grace)
}

// logEnded is the update of a succeeded job's LOG item: its end, from
// which the result grace runs (its verdict, before or after, sets the
// outcome).
func (s *Store) logEnded(batch, stratum string, pos int64, now time.Time) (types.TransactWriteItem, error) {
	u := expression.Set(name("stratum"), value(stratum)).Set(name("ended"), value(stamp(now)))
	return updateItem(s.tables.State, key(logPK(batch), logSK(pos)), u, expression.ConditionBuilder{})
}

// logOutcome is the update of a released job's LOG item: its verdict
// (over a none written first: a result after the job's end, before the
// prefix passed it, counts), or none unless a verdict is in.
func (s *Store) logOutcome(batch, stratum string, pos int64, outcome string) (types.TransactWriteItem, error) {
	u := expression.Set(name("stratum"), value(stratum))
	if outcome == outcomeNone {
		u = u.Set(name("outcome"), expression.IfNotExists(name("outcome"), value(outcome)))
	} else {
		u = u.Set(name("outcome"), value(outcome))
	}
	return updateItem(s.tables.State, key(logPK(batch), logSK(pos)), u, expression.ConditionBuilder{})
}

// writeLog writes a LOG item on its own (logOutcome).
func (s *Store) writeLog(ctx context.Context, batch, stratum string, pos int64, outcome string) error {
	it, err := s.logOutcome(batch, stratum, pos, outcome)
	if err != nil {
		return err
	}
	u := it.Update
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
	})
	if err != nil {
		return fmt.Errorf("log the outcome of %s position %d: %w", batch, pos, err)
	}
	return nil
}

// readLog reads the LOG items from position from on, in order.
func (s *Store) readLog(ctx context.Context, batch string, from int64) ([]logEntry, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.State), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk >= :from"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: logPK(batch)}, ":from": &types.AttributeValueMemberS{Value: logSK(from)},
		},
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("read the release log of %s: %w", batch, err)
	}
	var out []logEntry
	if err := attributevalue.UnmarshalListOfMaps(items, &out); err != nil {
		return nil, fmt.Errorf("read the release log of %s: %w", batch, err)
	}
	return out, nil
}

// count adds the log entries from the state's prefix on, up to the first
// position not done at now (logEntry.done), to the sequence; moved
// reports whether the prefix moved.
func (st *seqState) count(batch string, log []logEntry, now time.Time, grace time.Duration) (moved bool, err error) {
	for _, e := range log {
		// Guard: the prefix moves only over consecutive positions: a
		// result past one still running waits for it. Without it
		// TestSampledStopWaitsForTheSlowPrefix fails (make mutate:
		// sampled-prefix).
		if e.SK != logSK(st.prefix) {
			break
		}
		// Guard: a job that succeeded is waited for until its grace is
		// out: its verdict often comes after its end. Without it
		// TestSampledUnreportedSuccessPassedAfterGrace fails (make
		// mutate: sampled-result-grace).
		if !e.done(now, grace) {
			break
		}
		h, ok := st.index[e.Stratum]
		if !ok {
			return moved, fmt.Errorf("release log of %s: position %s names stratum %q, not in the batch", batch, e.SK, e.Stratum)
		}
		if e.Outcome == outcomePass || e.Outcome == outcomeFail {
			st.seq.Add(h, e.Outcome == outcomePass)
			st.own[h].Add(0, e.Outcome == outcomePass)
		}
		st.passed[h]++
		st.prefix++
		moved = true
	}
	return moved, nil
}

// current is the batch's sequence for the strata's sizes now: as its SEQ
// item holds it, or, when a part came since it was written, counted anew
// from the release log at now (a read: the next advance writes it).
func (s *Store) current(ctx context.Context, batch string, sb sampledState, now time.Time) (seqState, error) {
	st := restoreSeq(sb.params, sb.sizes(), sb.seq)
	if !st.fresh || sb.seq.Log == 0 {
		return st, nil
	}
	log, err := s.readLog(ctx, batch, 0)
	if err == nil {
		_, err = st.count(batch, log, now, s.ResultGrace)
	}
	return st, err
}

// advance counts the batch's release log from its prefix on, up to the
// first position not done at now, into its sequence, and returns the
// batch's state as written. A position whose outcome is none (or whose
// job succeeded and did not report within its grace) is passed over:
// nothing is known of it, and the sequence keeps it unmeasured.
func (s *Store) advance(ctx context.Context, batch string, now time.Time) (sampledState, seqState, error) {
	for tries := 0; ; tries++ {
		sb, found, err := s.readSampled(ctx, batch)
		if err != nil || !found {
			return sb, seqState{}, err
		}
		st := restoreSeq(sb.params, sb.sizes(), sb.seq)
		log, err := s.readLog(ctx, batch, st.prefix)
		if err != nil {
			return sb, st, err
		}
		moved, err := st.count(batch, log, now, s.ResultGrace)
		if err != nil {
			return sb, st, err
		}
		moved = moved || st.fresh && sb.seq.Strata != nil // rebuilt: write it even if nothing is done yet
		if !moved {
			return sb, st, nil
		}
		next := st.item(sb.seq.Ver + 1)
		u := expression.Set(name("ver"), value(next.Ver)).Set(name("prefix"), value(next.Prefix)).
			Set(name("strata"), value(next.Strata)).
			Set(name("a"), value(next.A)).Set(name("b"), value(next.B)).Set(name("lo"), value(next.Lo)).Set(name("hi"), value(next.Hi))
		// Guard: the sequence is written only over the version read, so an
		// advance never writes back a sequence older than another's (which
		// loses the positions that one counted). Without it
		// TestRacingAdvancesCountEachResult fails (make mutate:
		// sampled-seq-version).
		cond := name("ver").Equal(value(sb.seq.Ver))
		if sb.seq.Ver == 0 {
			cond = expression.Or(name("ver").AttributeNotExists(), cond)
		}
		e, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
		if err != nil {
			return sb, st, err
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.tables.State), Key: key(sampledPK(batch), skSeq),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
		if isConditionFailed(err) && tries < maxAdvances {
			continue // another advance wrote first: read again
		}
		if err != nil {
			return sb, st, fmt.Errorf("advance the sequence of %s: %w", batch, err)
		}
		next.Log, next.Logged = sb.seq.Log, sb.seq.Logged
		sb.seq = next
		return sb, st, nil
	}
}
