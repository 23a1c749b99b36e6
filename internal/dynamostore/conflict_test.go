package dynamostore

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/sampling"
)

// TestSubmitRefusesConflicts: against DynamoDB Local, a message that
// disagrees with its stored batch — a changed env or model, other terms,
// inconsistent parts — is refused whole with a reason naming the field,
// and the state table is as it was (bar the lock, taken and released);
// the batch's own messages stay an idempotent no-op.
func TestSubmitRefusesConflicts(t *testing.T) {
	parted := func(part, parts int, keys ...string) job.BatchSpec {
		b := job.BatchSpec{Account: "lab", Project: "sweep", Batch: "p", Model: "gpt", Tier: -1, Part: part, Parts: parts}
		for _, k := range keys {
			b.Jobs = append(b.Jobs, job.JobSpec{Key: k})
		}
		return b
	}
	sampled := func(part int, moe float64, keys ...string) job.BatchSpec {
		b := parted(part, 2, keys...)
		b.Sampling = &sampling.Params{MOE: moe, Confidence: 0.99, MinPerStratum: 5}
		for i := range b.Jobs {
			b.Jobs[i].Stratum = "s"
		}
		return b
	}
	base := batch("lab", "sweep", "b", "gpt", 1, 5)
	with := func(f func(*job.BatchSpec)) job.BatchSpec {
		b := batch("lab", "sweep", "b", "gpt", 1, 6)
		f(&b)
		return b
	}
	for _, tc := range []struct {
		name   string
		stored []job.BatchSpec
		msg    job.BatchSpec
		reason string
	}{
		{"env", []job.BatchSpec{base}, with(func(b *job.BatchSpec) { b.Jobs[2].Env = map[string]string{"I": "x", "NEW": "1"} }),
			`jobs[2].env: differs from the stored job "b-0002" in I, NEW`},
		{"model", []job.BatchSpec{base}, with(func(b *job.BatchSpec) { b.Jobs[1].Model = "claude" }),
			`jobs[1].model: "claude", but the stored job "b-0001" runs "gpt"`},
		{"tier", []job.BatchSpec{base}, with(func(b *job.BatchSpec) { b.Tier = -1 }),
			"tier: none (the default tier), but the batch was stored with 1"},
		{"timeout", []job.BatchSpec{base}, with(func(b *job.BatchSpec) { b.TimeoutSeconds = 600 }),
			"timeout_seconds: 600, but the batch was stored with 0 (0: none)"},
		{"max attempts", []job.BatchSpec{base}, with(func(b *job.BatchSpec) { b.MaxAttempts = 5 }),
			"max_attempts: 5, but the batch was stored with 3"},
		{"part 2 of 3 into 2 parts", []job.BatchSpec{parted(1, 2, "a")}, parted(2, 3, "b"),
			"parts: 3, but the batch was stored in 2 parts"},
		{"two different part 2s", []job.BatchSpec{parted(1, 2, "a"), parted(2, 2, "b")}, parted(2, 2, "c"),
			"part: part 2 of this batch was stored with other jobs; a part sent again must be the same"},
		{"part-less into parts", []job.BatchSpec{parted(1, 2, "a")}, parted(0, 0, "z"),
			"parts: missing, but the batch was stored in 2 parts; a message without part and parts cannot join it"},
		{"part into part-less", []job.BatchSpec{parted(0, 0, "a")}, parted(1, 2, "z"),
			"parts: 2, but the batch was stored from messages without part and parts"},
		{"part 2 with another moe", []job.BatchSpec{sampled(1, 0.015, "a")}, sampled(2, 0.02, "b"),
			"sampling.moe: 0.02, but the batch was stored with 0.015"},
		{"sampled part 2 of a full batch", []job.BatchSpec{parted(1, 2, "a")}, sampled(2, 0.015, "b"),
			"sampling: moe 0.015, confidence 0.99, min_per_stratum 5, but the batch was stored without sampling"},
		{"full part 2 of a sampled batch", []job.BatchSpec{sampled(1, 0.015, "a")}, parted(2, 2, "b"),
			"sampling: missing, but the batch was stored with moe 0.015, confidence 0.99, min_per_stratum 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := newStore(t)
			for _, b := range tc.stored {
				if _, err := s.Submit(ctx, b, t0); err != nil {
					t.Fatal(err)
				}
			}
			before := stateItems(t, s)
			n, err := s.Submit(ctx, tc.msg, t0)
			var ce *job.ConflictError
			if n != 0 || !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || !slices.Contains(ce.Reasons, tc.reason) {
				t.Fatalf("got %d created, %v; want none and a conflict %q", n, err, tc.reason)
			}
			if after := stateItems(t, s); !reflect.DeepEqual(after, before) {
				t.Errorf("the conflicting message changed the state table:\nbefore %v\nafter  %v", before, after)
			}
			for _, b := range tc.stored {
				if n, err := s.Submit(ctx, b, t0); n != 0 || err != nil {
					t.Errorf("stored message again: got %d, %v; want 0, nil", n, err)
				}
			}
			check(t, s)
		})
	}
}

// stateItems reads the whole state table, by "pk sk", without the batch
// lock's attributes.
func stateItems(t testing.TB, s *Store) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{TableName: aws.String(s.tables.State), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			it = maps.Clone(it)
			delete(it, "lock_owner")
			delete(it, "lock_until")
			out[text(it[attrPK])+" "+text(it[attrSK])] = it
		}
	}
	return out
}
