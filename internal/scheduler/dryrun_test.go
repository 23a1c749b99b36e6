package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// With two shards reporting, status's dry run decides each shard's models with the
// share its pass would take: shard 1 holds 8 of the 10 slots, so shard 0's
// model may take only the 2 free ones — one scheduler with the whole cap
// would hand it 5.
func TestDryRunDecidesEachShardWithItsShare(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := memstore.New(scheduler.ModelConfig{})
	a, b := "claude-opus-4.8", "gpt-5.5" // shards 0 and 1 of 2 (scheduler.TestShardOfIsStable)
	if scheduler.ShardOf(a, 2) != 0 || scheduler.ShardOf(b, 2) != 1 {
		t.Fatal("the models are not in the shards this test assumes")
	}
	for _, m := range []string{a, b} {
		if err := st.PutModel(ctx, scheduler.ModelConfig{Name: m, Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 20, InitialLimit: 50}); err != nil {
			t.Fatal(err)
		}
		spec := job.BatchSpec{Account: "acme", Project: "p", Batch: m, Model: m, Tier: -1}
		for i := range 20 {
			spec.Jobs = append(spec.Jobs, job.JobSpec{Key: string(rune('a' + i))})
		}
		if _, err := st.Submit(ctx, spec, now); err != nil {
			t.Fatal(err)
		}
	}
	sc := scheduler.DefaultConfig()
	sc.GlobalMaxRunning = 10
	account := scheduler.Caps{GlobalMaxRunning: 10, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}
	snap, err := st.Snapshot(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(plan scheduler.Plan) map[string]int {
		out := map[string]int{}
		for _, mp := range plan.Models {
			out[mp.Model] = mp.Admitted
		}
		return out
	}

	// No reports: one scheduler, the whole cap split 5/5.
	plan, shards, err := scheduler.DryRun(ctx, st, account, sc, snap, nil, now, 10*time.Second)
	if err != nil || shards != nil || admitted(plan)[a] != 5 || admitted(plan)[b] != 5 {
		t.Fatalf("unsharded: got %v, shards %v, err %v; want 5 and 5", admitted(plan), shards, err)
	}

	for _, l := range []scheduler.ShardLoad{{Shard: 0, Held: 0, Demand: 20, At: now.Add(-5 * time.Second)}, {Shard: 1, Held: 8, Demand: 20, At: now.Add(-5 * time.Second)}} {
		if err := st.PutShardLoad(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	plan, shards, err = scheduler.DryRun(ctx, st, account, sc, snap, nil, now, 10*time.Second)
	if err != nil || len(shards) != 2 {
		t.Fatalf("sharded: shards %+v, err %v", shards, err)
	}
	if got := admitted(plan); got[a] != 2 {
		t.Errorf("shard 0's model: next pass admits %d, want the 2 free slots (got %v)", got[a], got)
	}
	if shards[0].Share.GlobalMaxRunning != 2 || shards[0].Models != 1 || shards[1].Models != 1 || shards[0].ReportAge != 5*time.Second || !shards[0].Reported {
		t.Errorf("got shards %+v", shards)
	}
	if len(plan.Models) != 2 || plan.Models[0].Model != a {
		t.Errorf("merged plan: %+v, want both models by name", plan.Models)
	}
}
