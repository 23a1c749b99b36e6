package depthitem

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func tables(t *testing.T) (*Writer, *Reader) {
	t.Helper()
	ddb := localservers.DynamoDB(t)
	prefix := fmt.Sprintf("depth%d-", time.Now().UnixNano())
	dynamotest.Tables(t, ddb, prefix, scheduler.ModelConfig{})
	client, err := dynamostore.LocalClient(context.Background(), ddb)
	if err != nil {
		t.Fatal(err)
	}
	table := dynamostore.DefaultTables(prefix).State
	return &Writer{API: client, Table: table}, &Reader{API: client, Table: table}
}

// TestReadingsRoundTrip: what the writer puts, the reader returns, for the
// models asked; a model the bridge never saw is missing, a reading older
// than the lookback is dropped part by part.
func TestReadingsRoundTrip(t *testing.T) {
	ctx := context.Background()
	w, r := tables(t)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	fresh, old := now.Add(-10*time.Second), now.Add(-DefaultLookback-time.Second)
	in := map[string]scheduler.Depth{
		"gpt-5.5":  {Value: 37.5, At: fresh, InService: 120, InServiceAt: fresh, ErrorRate: 0.25, Calls: 80, ErrorAt: fresh},
		"claude":   {Value: 3, At: fresh, ErrorRate: 0.5, Calls: 4, ErrorAt: old}, // its error rate is stale
		"stale":    {Value: 9, At: old, InService: 1, InServiceAt: old},
		"unwanted": {Value: 1, At: fresh},
		"no-rate":  {Value: 0, At: fresh, InService: 2, InServiceAt: fresh.Add(-10 * time.Second)}, // in service of another period
	}
	if err := w.Put(ctx, now, in); err != nil {
		t.Fatal(err)
	}
	got, err := r.Depths(ctx, []string{"gpt-5.5", "claude", "stale", "no-rate", "never-seen"}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]scheduler.Depth{
		"gpt-5.5": in["gpt-5.5"],
		"claude":  {Value: 3, At: fresh},
		"no-rate": {Value: 0, At: fresh},
	}
	if len(got) != len(want) {
		t.Errorf("got %d models %v, want %d %v", len(got), got, len(want), want)
	}
	for m, w := range want {
		if g, ok := got[m]; !ok || !g.At.Equal(w.At) || g.Value != w.Value || g.InService != w.InService ||
			!g.InServiceAt.Equal(w.InServiceAt) || g.ErrorRate != w.ErrorRate || g.Calls != w.Calls || !g.ErrorAt.Equal(w.ErrorAt) {
			t.Errorf("%s: got %+v (present %v), want %+v", m, g, ok, w)
		}
	}
}

// TestNoItemIsNoReadings: before the bridge's first write the pass reads
// nothing, and no error (the limits hold on missing readings).
func TestNoItemIsNoReadings(t *testing.T) {
	_, r := tables(t)
	got, err := r.Depths(context.Background(), []string{"gpt-5.5"}, time.Now())
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v; want no readings, no error", got, err)
	}
}

// TestManyModelsShard: a fleet whose readings would pass the 400 KB item
// limit is split into shards DynamoDB accepts, and read back whole; a
// shard left over from an older, larger write yields only to newer
// readings.
func TestManyModelsShard(t *testing.T) {
	ctx := context.Background()
	w, r := tables(t)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	in := map[string]scheduler.Depth{}
	var names []string
	for i := range 3000 { // 128-byte names, the longest a model may have
		m := fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 123))
		in[m] = scheduler.Depth{Value: float64(i), At: now.Add(-5 * time.Second)}
		names = append(names, m)
	}
	if err := w.Put(ctx, now.Add(-20*time.Second), in); err != nil {
		t.Fatalf("put 3,000 models: %v", err)
	}
	got, err := r.Depths(ctx, names, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names) || got[names[2999]].Value != 2999 {
		t.Fatalf("read %d models back (the last %+v), want %d", len(got), got[names[2999]], len(names))
	}
	// A bridge restarted with one model writes shard 0 alone: the older
	// shards' readings stay until the lookback drops them.
	if err := w.Put(ctx, now, map[string]scheduler.Depth{names[0]: {Value: 99, At: now}}); err != nil {
		t.Fatal(err)
	}
	got, err = r.Depths(ctx, names, now)
	if err != nil {
		t.Fatal(err)
	}
	if d := got[names[0]]; d.Value != 99 || !d.At.Equal(now) {
		t.Errorf("the rewritten model: got %+v, want the newer reading 99", d)
	}
	if d := got[names[2999]]; d.Value != 2999 {
		t.Errorf("the last shard's model: got %+v, want its reading 2999 until the lookback", d)
	}
	later := now.Add(DefaultLookback - time.Second)
	got, err = r.Depths(ctx, names, later)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[names[0]]; len(got) != 1 || !ok {
		t.Errorf("%v later: got %d models, want only the rewritten one", later.Sub(now), len(got))
	}
}
