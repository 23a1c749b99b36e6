package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Snapshot implements scheduler.Store. It reads, whatever the number of
// waiting jobs: the models and pins tables (one Scan each), the model state
// items (one Query), the counters of each model (BatchGetItem) and the
// active index (one Query, a page per ~4,000 active queues), which projects
// the queue items' attributes a pass uses. Its Versions (*versions) are
// what Commit conditions its writes on.
func (s *Store) Snapshot(ctx context.Context, _ time.Time) (scheduler.Snapshot, error) {
	var snap scheduler.Snapshot

	// 1. The operator's items: a malformed model item is skipped with a
	// warning; pins keep their raw text for the priority package to judge.
	configs, warnings, skipped, err := s.readModelConfigs(ctx)
	if err != nil {
		return snap, err
	}
	snap.Warnings = warnings
	for name, reason := range skipped {
		if s.owns(name) {
			if snap.Skipped == nil {
				snap.Skipped = map[string]string{}
			}
			snap.Skipped[name] = reason
		}
	}
	pins, legacy, pinWarnings, err := s.readPins(ctx)
	if err != nil {
		return snap, err
	}
	snap.Pins = pins
	snap.Warnings = append(snap.Warnings, pinWarnings...)
	// Pauses are their own items; a pause an older version kept on a pin
	// item still holds (legacy) until pause or resume moves it.
	pauses, err := s.readPauses(ctx)
	if err != nil {
		return snap, err
	}
	for _, p := range legacy {
		if !slices.ContainsFunc(pauses, func(q scheduler.Pause) bool { return q.Scope == p.Scope }) {
			pauses = append(pauses, p)
		}
	}
	slices.SortFunc(pauses, func(a, b scheduler.Pause) int { return strings.Compare(a.Scope, b.Scope) })
	snap.Pauses = pauses

	// 2. Model state and counters. Every model the store has seen a job of
	// has a state item; one with an operator item but no jobs yet has none.
	states, err := s.readStates(ctx)
	if err != nil {
		return snap, err
	}
	for _, name := range slices.Sorted(maps.Keys(states)) {
		if w := states[name].learnedWarning; w != "" && s.owns(name) {
			snap.Warnings = append(snap.Warnings, w)
		}
	}
	names := map[string]bool{}
	for name, c := range configs {
		names[name] = c != nil
	}
	for name := range states {
		if _, ok := names[name]; !ok {
			names[name] = true
		}
	}
	var models []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		// false: a malformed item, skipped; not owned: another shard's.
		if names[name] && s.owns(name) {
			models = append(models, name)
		}
	}
	counters, err := s.readCounters(ctx, models)
	if err != nil {
		return snap, err
	}
	slots, err := s.readSlots(ctx)
	if err != nil {
		return snap, err
	}
	read := &versions{token: token(), models: map[string]seenModel{}}
	snap.Versions = read
	for _, name := range models {
		cfg := s.defaults
		if c := configs[name]; c != nil {
			cfg = *c
		}
		cfg.Name = name
		st := states[name]
		c := counters[name]
		if st.learned.set {
			st.item.State.Limit.Conc, st.item.State.Limit.ConcAt = st.learned.conc, st.learned.at
		}
		read.models[name] = seenModel{ver: st.item.Ver, okAcked: st.item.OKAcked, pfAcked: st.item.PFAcked, state: st.raw,
			learned: learned{conc: st.item.State.Limit.Conc, at: st.item.State.Limit.ConcAt}}
		// Guard: the counters are read eventually consistent, so a total
		// may be behind the acknowledged one: it counts no outcome, never a
		// negative one. Without it TestAStaleOutcomeTotalCountsNothing
		// fails (make mutate: outcomes-stale-clamp).
		m := scheduler.Model{
			Config:   cfg,
			State:    st.item.State.ModelState,
			Outcomes: breaker.Outcomes{OK: int(max(0, c.OKTotal-st.item.OKAcked)), ProviderFailed: int(max(0, c.PFTotal-st.item.PFAcked))},
		}
		// PendingRaise: the starting jobs claimed at or before the last
		// raise's mark (all of them while it has none).
		mark := m.State.Limit.Mark()
		for _, f := range slots[name] {
			switch job.State(f.State) {
			case job.Running:
				m.Running++
			case job.Claimed, job.Launched:
				m.Starting++
				if mark.IsZero() || !f.ClaimedAt.After(mark) {
					m.PendingRaise++
				}
			}
		}
		snap.Models = append(snap.Models, m)
	}

	// 3. Queues with waiting jobs, oldest first (this shard's only).
	queues, err := s.readActiveQueues(ctx, true)
	if err != nil {
		return snap, err
	}
	read.queues = make(map[string]queueItem, len(queues))
	for _, q := range queues {
		read.queues[q.PK] = q
	}
	for _, q := range queues {
		if q.Waiting <= 0 {
			continue
		}
		snap.Queues = append(snap.Queues, scheduler.Queue{
			Account: q.Account, Project: q.Project, Batch: q.Batch, Model: q.Model,
			SubmittedTier: q.Tier, Seq: q.Seq, Waiting: int(q.Waiting), Registered: int(q.Size),
		})
	}
	return snap, nil
}

type readState struct {
	item stateItem
	raw  types.AttributeValue // the state attribute as stored: Commit skips unchanged writes
	// learned is the item's learned_concurrency and learned_at (set: the
	// attributes are there and well formed); learnedWarning says why an
	// edit of them was skipped.
	learned        learned
	learnedWarning string
}

// readStates reads the model state items: one Query of each "MODELS#<b>"
// partition (the shard's buckets only, when scoped).
func (s *Store) readStates(ctx context.Context) (map[string]readState, error) {
	items, err := s.queryBuckets(ctx, s.bucketsToRead(true), func(b string) *dynamodb.QueryInput {
		return &dynamodb.QueryInput{
			TableName:                 aws.String(s.tables.State),
			ConsistentRead:            aws.Bool(true),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pkModels + "#" + b}},
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read model states: %w", err)
	}
	out := make(map[string]readState, len(items))
	for _, it := range items {
		var st stateItem
		if err := attributevalue.UnmarshalMap(it, &st); err != nil {
			return nil, fmt.Errorf("read model states: item %v: %w", it[attrSK], err)
		}
		rs := readState{item: st, raw: it["state"]}
		rs.learned, rs.learnedWarning = decodeLearned(st.Model, it)
		out[st.Model] = rs
	}
	return out, nil
}

// readSlots lists the jobs holding a slot by model, from the inflight
// index (eventually consistent, like the active index: a job that started
// or ended a moment ago may show as it was). Counting them here, rather
// than in a counters item each claim and task event would write, makes a
// start one write of the job alone; the read grows with the jobs in flight,
// never with the jobs waiting.
func (s *Store) readSlots(ctx context.Context) (map[string][]scheduler.InFlight, error) {
	all, err := s.inflight(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]scheduler.InFlight{}
	for _, f := range all {
		out[f.Model] = append(out[f.Model], f)
	}
	return out, nil
}

// readCounters reads the counters items of the models: their outcome
// totals, eventually consistent (half the units of 241 items a pass). A
// stale total only delays outcomes a pass: Snapshot counts total − acked,
// never below 0, and Commit acknowledges at most what it was given, so the
// acknowledged total never passes the true one and no outcome is counted
// twice.
func (s *Store) readCounters(ctx context.Context, models []string) (map[string]countersItem, error) {
	keys := make([]map[string]types.AttributeValue, len(models))
	for i, m := range models {
		keys[i] = key(countersPK(m), skCounters)
	}
	items, err := s.batchGetAs(ctx, keys, false)
	if err != nil {
		return nil, fmt.Errorf("read model counters: %w", err)
	}
	out := make(map[string]countersItem, len(items))
	for _, it := range items {
		var c countersItem
		if err := attributevalue.UnmarshalMap(it, &c); err != nil {
			return nil, fmt.Errorf("read model counters: item %s: %w", text(it[attrPK]), err)
		}
		out[c.Model] = c
	}
	return out, nil
}

// readActiveQueues reads the queue items the active index lists, sorted by
// age. The index lags the table by a moment (well under a second; a pass
// comes every 10 s): a queue activated just now shows up a pass later, one
// drained just now shows with nothing waiting, a cursor moved just now shows
// where it was — Commit's claims are conditioned on it, so that costs a
// refused transaction and a fresh read, never a wrong claim.
//
// Scoped, it reads the store's shard's queues only: the index is
// partitioned by the models' buckets, so it queries only the shard's; and a
// queue's key names its model (queueModel), so the entries of models it
// does not own (another shard's sharing a bucket, when N does not divide
// the bucket count) are dropped before they are decoded. Cancel reads
// unscoped: an operator's cancel spans every model.
func (s *Store) readActiveQueues(ctx context.Context, scoped bool) ([]queueItem, error) {
	refs, err := s.queryBuckets(ctx, s.bucketsToRead(scoped), func(b string) *dynamodb.QueryInput {
		return &dynamodb.QueryInput{
			TableName:                 aws.String(s.tables.State),
			IndexName:                 aws.String(ActiveIndex),
			KeyConditionExpression:    aws.String("#a = :a"),
			ExpressionAttributeNames:  map[string]string{"#a": attrActive},
			ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: activeValue + "#" + b}},
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read active queues: %w", err)
	}
	// The index projects what Snapshot, Commit's claims and Cancel use
	// (ActiveProjection): no queue item is read from the table.
	out := make([]queueItem, 0, len(refs))
	for _, it := range refs {
		if scoped && !s.owns(queueModel(text(it[attrPK]))) {
			continue
		}
		var q queueItem
		if err := attributevalue.UnmarshalMap(it, &q); err != nil {
			return nil, fmt.Errorf("read active queues: item %v: %w", it[attrPK], err)
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b queueItem) int { return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.PK, b.PK)) })
	return out, nil
}
