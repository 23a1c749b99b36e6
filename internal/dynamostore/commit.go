package dynamostore

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// Commit implements scheduler.Store.
//
//  1. state   every model's new state and acknowledged outcomes, one
//     conditional write a model (several at a time), each conditioned on
//     the version the Snapshot read (Committed.Stale if another pass wrote
//     since)
//  2. batch   the grants whose queue the Snapshot read, batched across
//     queues (batchclaim.go): transactions of up to 100 items moving cursors
//     (conditioned on the values read) and jobs together
//  3. claim   the rest one queue at a time (claim.go) (a queue with retried jobs, a
//     grant of more than 90 jobs, a queue that moved since the Snapshot):
//     transactions of up to 90 jobs after reading the queue afresh; a
//     model's grants in plan order, several models at a time
//
// read is the Snapshot's Versions; nil (a plan not made from a Snapshot:
// tests, tools) writes the states unconditioned and claims every grant the
// slow way. The same read may be given again: a retried Commit of the same
// plan passes its own state condition, and a queue it already moved fails
// its batched condition and is claimed the slow way.
//
// A failure after some jobs were claimed returns those jobs and no error:
// the pass launches them and the rest waits for the next pass. The jobs are
// returned in plan order.
func (s *Store) Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error) {
	v, ok := read.(*versions)
	if !ok && read != nil {
		return scheduler.Committed{}, fmt.Errorf("commit: versions of type %T are not a DynamoDB store's Snapshot's", read)
	}
	if v == nil {
		v = &versions{}
	}

	// 1. State.
	stale, err := s.commitStates(ctx, plan, v)
	if err != nil || len(stale) > 0 {
		return scheduler.Committed{Stale: stale}, err
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
			q, ok := v.queues[pk]
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
	s.claimBatched(ctx, plan.At, batched)

	// 3. The rest, one queue at a time: several models at a time, each
	// model's grants in plan order.
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
			return scheduler.Committed{}, firstErr
		}
		s.log().Warn("commit: claimed fewer jobs than granted", "claimed", len(claimed), "err", firstErr)
	}
	return scheduler.Committed{Claimed: claimed}, nil
}

// commitStates writes the models' states, skipping a model whose state did
// not change and that acknowledges nothing. It returns the models another
// pass wrote since v was read (theirs are not written; the others' are,
// and Commit claims nothing).
//
// A model v read is written only if its version is still the one read — or
// if a Commit with the same v already wrote it (a Commit retried after a
// failure: the write is then the same, acknowledged totals are absolute). A
// model v did not read is written as it is and its ack added.
func (s *Store) commitStates(ctx context.Context, plan scheduler.Plan, v *versions) ([]string, error) {
	commitID := v.token
	if commitID == "" {
		commitID = token()
	}
	var items []types.TransactWriteItem
	var models []string // of each item
	for _, mp := range plan.Models {
		sm, known := v.models[mp.Model]
		// The learned concurrency is the item's own attributes, which
		// the operator may edit (decodeLearned), not part of the state.
		state := mp.State
		lc, la := state.Limit.Conc, state.Limit.ConcAt
		state.Limit.Conc, state.Limit.ConcAt = 0, time.Time{}
		av, err := packedState{state}.MarshalDynamoDBAttributeValue()
		if err != nil {
			return nil, fmt.Errorf("commit state of %s: %w", mp.Model, err)
		}
		learnedSame := known && lc == sm.learned.conc && la.Equal(sm.learned.at)
		if known && mp.Ack.OK == 0 && mp.Ack.ProviderFailed == 0 && sm.state != nil && reflect.DeepEqual(av, sm.state) && learnedSame {
			continue
		}
		u := expression.Set(name(attrModel), value(mp.Model)).
			Set(name("state"), value(av)).
			Set(name("plan_at"), value(stamp(plan.At))).
			Set(name("commit_id"), value(commitID))
		switch {
		case learnedSame: // as read: an operator's edit since stays
		case lc > 0:
			u = u.Set(name(attrLearnedConc), value(lc))
			if la.IsZero() {
				u = u.Remove(name(attrLearnedAt))
			} else {
				u = u.Set(name(attrLearnedAt), value(stamp(la)))
			}
		default:
			u = u.Remove(name(attrLearnedConc)).Remove(name(attrLearnedAt))
		}
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
			// nothing (Committed.Stale), so two passes never admit on the same free
			// slots; the same plan retried may write again. Without it
			// TestStaleSnapshotCommitsNothing fails (make mutate: commit-state-version).
			cond = was.Or(name("ver").Equal(value(sm.ver + 1)).And(name("commit_id").Equal(value(commitID))))
		} else {
			u = u.Add(name("ver"), value(1)).
				Add(name("ok_acked"), value(mp.Ack.OK)).
				Add(name("pf_acked"), value(mp.Ack.ProviderFailed))
		}
		it, err := updateItem(s.tables.State, key(modelsPK(mp.Model), mp.Model), u, cond)
		if err != nil {
			return nil, fmt.Errorf("commit state of %s: %w", mp.Model, err)
		}
		items = append(items, it)
		models = append(models, mp.Model)
	}
	// Each model's write alone, several at a time: a single write bills 1
	// unit a KB where a transaction bills 2, and nothing ties two models'
	// states together (a transaction of 100 never made 241 models atomic).
	refused := make([]bool, len(items))
	err := parallel(ctx, len(items), func(ctx context.Context, i int) error {
		ok, err := s.writeOne(ctx, items[i].Update)
		refused[i] = err == nil && !ok
		return err
	})
	var stale []string
	for i, r := range refused {
		if r {
			stale = append(stale, models[i])
		}
	}
	if len(stale) > 0 {
		return stale, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commit state: %w", err)
	}
	return nil, nil
}
