package dynamostore

// Beyond one scheduler: one shard's pass of the 2,000-model
// shape that one scheduler cannot do in its slot (BenchmarkPassLimits), next
// to the unsharded pass over the same tables (numbers in BENCHMARKS.md,
// "Sharded passes"). It reuses scale_bench_test.go's meter, population and
// report.
//
//	EVALSCHED_BENCH_SCALE=1 go test -run '^$' -bench ShardPass -benchtime 3x -benchmem -timeout 60m ./internal/dynamostore/

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// shardClaimable is how many jobs of each queue the population writes: the
// cases share one population, and a queue may be granted in each of them
// (its model is in one shard, and in the unsharded case); 8 covers up to 4
// passes a case.
const shardClaimable = 8

// BenchmarkShardPass runs the real pass of shard k of 4 — its store sees its
// ~500 models and ~5,000 of the 20,000 active queues, its configuration a
// quarter of the global cap and of the launch budget — and, first, the one
// scheduler's pass over all of them, as BenchmarkPassLimits's 2,000-model
// case (cap lifted, so the budget binds: 200 a pass, 50 a shard). Every case
// reports what scale_bench_test.go's report does, per pass.
func BenchmarkShardPass(b *testing.B) {
	if os.Getenv(scaleEnv) == "" {
		b.Skipf("populates 20,000 queues and runs 2,000-model passes, ~15 minutes: set %s=1 (make bench-scale)", scaleEnv)
	}
	sc := scale{Models: 2_000, Batches: 20_000, Projects: 4_000, PerQueue: 100}
	account := scheduler.Caps{GlobalMaxRunning: 1_000_000, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}

	tables := newTables(b)
	plain := New(dynamoDB(b), tables, defaults())
	putModels(b, plain, sc)
	took := populateDirect(b, plain, sc, shardClaimable)
	b.Logf("%d models, %d batches in %d projects, %d waiting: populated in %v", sc.Models, sc.Batches, sc.Projects, sc.waiting(), took.Round(time.Second))

	cases := []struct{ shards, shard int }{{1, 0}, {4, 0}, {4, 1}, {4, 2}, {4, 3}}
	for _, c := range cases {
		b.Run(fmt.Sprintf("shards=%d/shard=%d", c.shards, c.shard), func(b *testing.B) {
			share := account.Share(c.shard, c.shards)
			cfg := scheduler.DefaultConfig()
			cfg.GlobalMaxRunning, cfg.MaxLaunchesPerPass = share.GlobalMaxRunning, share.MaxLaunchesPerPass
			owned := ownedScale(sc, c.shards, c.shard)
			b.ReportAllocs()
			r := shardPasses(b, tables, sc, c.shards, c.shard, cfg)
			r.report(b, owned, cfg)
			b.ReportMetric(float64(owned.Models), "models")
			b.ReportMetric(float64(owned.Batches), "active-batches")
		})
	}
}

// ownedScale is the part of sc that shard owns: its models and their batches
// (the report's request target is computed from it).
func ownedScale(sc scale, shards, shard int) scale {
	owned := sc
	owned.Models, owned.Batches = 0, 0
	for i := range sc.Models {
		if scheduler.ShardOf(sc.model(i), shards) == shard {
			owned.Models++
		}
	}
	for i := range sc.Batches {
		if scheduler.ShardOf(sc.model(i%sc.Models), shards) == shard {
			owned.Batches++
		}
	}
	return owned
}

// shardPasses is benchPasses for a store scoped to one shard, over tables
// already populated. Each case starts a minute after the last: its passes
// see the previous case's jobs ended, as later passes would.
func shardPasses(b *testing.B, tables Tables, sc scale, shards, shard int, cfg scheduler.Config) passResult {
	return runPasses(b, tables, sc, cfg, passSetup{shards: shards, shard: shard, start: t0.Add(time.Duration(shards*10+shard) * time.Minute)})
}
