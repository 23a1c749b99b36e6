package status

import (
	"context"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Status shows each shard's share as scheduler.DryRun found it, and -1 for
// the age of a shard that never reported (shard 1 of 3 here: shard 2's
// fresh report makes the scheduler three shards).
func TestStatusShowsTheShardsShares(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := memstore.New(scheduler.ModelConfig{})
	for _, l := range []scheduler.ShardLoad{{Shard: 0, Held: 4, At: now.Add(-5 * time.Second)}, {Shard: 2, Held: 2, At: now.Add(-7 * time.Second)}} {
		if err := st.PutShardLoad(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	account := scheduler.Caps{GlobalMaxRunning: 10, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}
	_, views, err := dryRun(ctx, st, account, scheduler.DefaultConfig(), scheduler.Snapshot{}, nil, now, 10*time.Second)
	if err != nil || len(views) != 3 {
		t.Fatalf("got %+v, %v; want three shards", views, err)
	}
	if views[0].ReportAgeS != 5 || views[1].ReportAgeS != -1 || views[2].ReportAgeS != 7 || views[1].Shard != 1 {
		t.Errorf("report ages: got %+v, want 5, -1 (none), 7", views)
	}
	_, runs, _ := scheduler.DryRun(ctx, st, account, scheduler.DefaultConfig(), scheduler.Snapshot{}, nil, now, 10*time.Second)
	for k, v := range views {
		r := runs[k]
		if v.Shard != r.Shard || v.Models != r.Models || v.Held != r.Held || v.GlobalMaxRunning != r.Share.GlobalMaxRunning ||
			v.Launches != r.Share.MaxLaunchesPerPass || v.LaunchRate != r.Share.LaunchRate {
			t.Errorf("shard %d: shown %+v, the dry run's %+v", k, v, r)
		}
	}
}
