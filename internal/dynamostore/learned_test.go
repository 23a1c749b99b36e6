package dynamostore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// queuedDepths serves a datapoint of a queue standing with calls in
// service: the gateway's sign of a full provider.
type queuedDepths struct {
	depth, inService float64
}

func (q queuedDepths) Depths(_ context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	out := map[string]scheduler.Depth{}
	for _, m := range models {
		at := now.Add(-20 * time.Second)
		out[m] = scheduler.Depth{Value: q.depth, At: at, InService: q.inService, InServiceAt: at}
	}
	return out, nil
}

// TestTheLearnedConcurrencyIsTheStateItemsOwnAttributes: a pass that sees a
// queue standing with 7 calls in service keeps 7 and the time on the
// model's state item as learned_concurrency and learned_at, which the
// operator may edit, delete or break in the console; a malformed edit is
// skipped with a warning and the pass goes on; an edit made while the
// pass learned nothing new stays.
func TestTheLearnedConcurrencyIsTheStateItemsOwnAttributes(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	submit(t, st, batch("acme", "x", "b1", "m", -1, 40))
	clock := passfake.NewClock(t0)
	pass := func(d scheduler.DepthReader) scheduler.Report {
		t.Helper()
		sch := &scheduler.Scheduler{Store: st, Depths: d, Launcher: &passfake.Launcher{}, Clock: clock, Config: scheduler.DefaultConfig()}
		rep, err := sch.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.Add(10 * time.Second)
		return rep
	}
	itemKey := key(modelsPK("m"), "m")
	item := func() map[string]av {
		t.Helper()
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.tables.State), Key: itemKey, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	edit := func(expr string, values map[string]av) {
		t.Helper()
		in := &dynamodb.UpdateItemInput{TableName: aws.String(st.tables.State), Key: itemKey, UpdateExpression: aws.String(expr)}
		if len(values) > 0 {
			in.ExpressionAttributeValues = values
		}
		if _, err := client.UpdateItem(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	learnedOf := func() (float64, time.Time, []string) {
		t.Helper()
		snap := snapshot(t, st)
		for _, m := range snap.Models {
			if m.Config.Name == "m" {
				return m.State.Limit.Conc, m.State.Limit.ConcAt, snap.Warnings
			}
		}
		t.Fatal("model m is not in the snapshot")
		return 0, time.Time{}, nil
	}

	pass(passfake.Depths{"m": 0})
	learnedAt := clock.Now()
	pass(queuedDepths{depth: 5, inService: 7})
	it := item()
	if c, _ := it[attrLearnedConc].(*types.AttributeValueMemberN); c == nil || c.Value != "7" {
		t.Fatalf("state item's %s = %v, want the Number 7 (item %v)", attrLearnedConc, it[attrLearnedConc], it)
	}
	if a, _ := it[attrLearnedAt].(*types.AttributeValueMemberS); a == nil || a.Value != stamp(learnedAt) {
		t.Fatalf("state item's %s = %v, want %s", attrLearnedAt, it[attrLearnedAt], stamp(learnedAt))
	}
	if conc, at, _ := learnedOf(); conc != 7 || !at.Equal(learnedAt) {
		t.Fatalf("snapshot's learned concurrency %g at %v, want 7 at %v", conc, at, learnedAt)
	}

	// The operator's edit: the value and its time.
	edit("SET learned_concurrency = :c, learned_at = :a", map[string]av{":c": n("300"), ":a": s("2026-11-29T11:00:00Z")})
	if conc, at, warns := learnedOf(); conc != 300 || !at.Equal(time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)) || len(warns) != 0 {
		t.Fatalf("after the edit: %g at %v (warnings %q), want 300 at 11:00", conc, at, warns)
	}
	// A pass that learns nothing new (nothing queued) leaves it as edited.
	pass(passfake.Depths{"m": 0})
	if c, _ := item()[attrLearnedConc].(*types.AttributeValueMemberN); c == nil || c.Value != "300" {
		t.Fatalf("after a pass that learned nothing: %v, want the operator's 300", item()[attrLearnedConc])
	}
	// Deleted: none is learned.
	edit("REMOVE learned_concurrency, learned_at", nil)
	if conc, _, _ := learnedOf(); conc != 0 {
		t.Fatalf("after the delete: %g, want none", conc)
	}

	// Malformed edits: skipped with a warning naming the model and the
	// rule; the model and its pass go on.
	for _, c := range []struct {
		expr   string
		values map[string]av
		want   string
	}{
		{"SET learned_concurrency = :c REMOVE learned_at", map[string]av{":c": s("lots")}, `learned_concurrency is the String "lots", want a Number`},
		{"SET learned_concurrency = :c", map[string]av{":c": n("-4")}, "learned_concurrency -4 must be a number ≥ 0"},
		{"SET learned_concurrency = :c, learned_at = :a", map[string]av{":c": n("40"), ":a": s("yesterday")}, `learned_at "yesterday" is not an RFC 3339 time`},
		{"SET learned_at = :a REMOVE learned_concurrency", map[string]av{":a": s("2026-11-29T11:00:00Z")}, "learned_at without learned_concurrency"},
	} {
		edit(c.expr, c.values)
		conc, _, warns := learnedOf()
		if conc != 0 || len(warns) != 1 || !strings.Contains(warns[0], `model "m"`) || !strings.Contains(warns[0], c.want) {
			t.Errorf("%s: learned %g, warnings %q; want none learned and one warning with %q", c.expr, conc, warns, c.want)
		}
		rep := pass(passfake.Depths{"m": 0})
		if !strings.Contains(strings.Join(rep.Plan.Warnings, "\n"), c.want) {
			t.Errorf("%s: the pass's warnings %q lack %q", c.expr, rep.Plan.Warnings, c.want)
		}
	}
	// A value without its time is read (and is old to the controller).
	edit("SET learned_concurrency = :c REMOVE learned_at", map[string]av{":c": n("12")})
	if conc, at, warns := learnedOf(); conc != 12 || !at.IsZero() || len(warns) != 0 {
		t.Errorf("a value without its time: %g at %v (warnings %q), want 12 with no time", conc, at, warns)
	}
	check(t, st)
}
