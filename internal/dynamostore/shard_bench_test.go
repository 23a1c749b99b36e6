package dynamostore

// Issue #8, "Beyond one scheduler": one shard's pass of the 2,000-model
// shape that one scheduler cannot do in its slot (BenchmarkPassLimits), next
// to the unsharded pass over the same tables (numbers in BENCHMARKS.md,
// "Sharded passes"). It reuses scale_bench_test.go's meter, population and
// report.
//
//	EVALSCHED_BENCH_SCALE=1 go test -run '^$' -bench ShardPass -benchtime 3x -benchmem -timeout 60m ./internal/dynamostore/

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/memstore"
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
// already populated: the real scheduler.Pass once per iteration, metered by
// phase; between passes (untimed) the launched tasks start and end through
// the store, so each pass admits its budget again.
func shardPasses(b *testing.B, tables Tables, sc scale, shards, shard int, cfg scheduler.Config) passResult {
	ctx := context.Background()
	m := newMeter(dynamoDB(b))
	store := New(m, tables, defaults())
	if shards > 1 {
		store.Owns = func(model string) bool { return scheduler.ShardOf(model, shards) == shard }
	}
	em := newMeter(dynamoDB(b))
	events := New(em, tables, defaults()) // the task-events function's work, metered apart

	at := depths{}
	for i := range sc.Models {
		at[sc.model(i)] = 40 // at the target: the limits hold
	}
	p := &phased{Store: store, m: m, wall: map[string]time.Duration{}}
	l := &instant{}
	// Each case starts a minute after the last: its passes see the
	// previous case's jobs ended, as later passes would.
	clk := &clock{now: t0.Add(time.Duration(shards*10+shard) * time.Minute)}
	sched := &scheduler.Scheduler{Store: p, Depths: at, Launcher: l, Clock: clk, Config: cfg}

	res := passResult{Phases: map[string]time.Duration{}, Use: map[string]usage{}}
	runtime.GC()
	res.BaseHeap = readMetric(heapMetricName)
	m.take()
	for b.Loop() {
		b.StopTimer()
		clk.now = clk.now.Add(10 * time.Second)
		stop := samplePeak()
		b.StartTimer()

		cpu0 := cpuTime()
		start := time.Now()
		var rep scheduler.Report
		var err error
		pprof.Do(ctx, pprof.Labels("pass", "1"), func(ctx context.Context) { rep, err = sched.Pass(ctx) })
		wall := time.Since(start)
		res.CPU += cpuTime() - cpu0

		b.StopTimer()
		res.PeakHeap = max(res.PeakHeap, stop())
		if err != nil {
			b.Fatal(err)
		}
		granted := rep.Plan.Total()
		if rep.Claimed != granted || rep.Launched != rep.Claimed || granted == 0 {
			b.Fatalf("pass %d: granted %d, claimed %d, launched %d: want all granted claimed and launched", res.Passes+1, granted, rep.Claimed, rep.Launched)
		}
		for _, mp := range rep.Plan.Models {
			if scheduler.ShardOf(mp.Model, shards) != shard {
				b.Fatalf("shard %d of %d planned model %s, shard %d's", shard, shards, mp.Model, scheduler.ShardOf(mp.Model, shards))
			}
			res.Grants += len(mp.Grants)
		}
		res.Passes++
		res.Wall += wall
		res.Claimed += rep.Claimed
		for ph, u := range m.take() {
			x := res.Use[ph]
			x.add(u)
			res.Use[ph] = x
			res.All.add(u)
		}
		if res.Passes == 1 {
			res.Models = len(rep.Plan.Models)
		}
		res.EMFBytes, res.LogBytes = logSizes(b, rep)
		results := slices.Clone(l.last)
		err = parallel(ctx, len(results), func(ctx context.Context, i int) error {
			r := results[i]
			if err := events.TaskStarted(ctx, r.JobID, r.Attempt, clk.now.Add(2*time.Second)); err != nil {
				return err
			}
			return events.TaskStopped(ctx, r.JobID, r.Attempt, memstore.Exit{}, clk.now.Add(5*time.Second))
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range em.take() {
			res.Events.add(u)
		}
		b.StartTimer()
	}
	for ph, d := range p.wall {
		res.Phases[ph] = d
	}
	store.mu.Lock()
	res.ChunksCached = len(store.chunks)
	store.mu.Unlock()
	scoped := New(dynamoDB(b), tables, defaults())
	scoped.Owns = store.Owns
	snap, err := scoped.Snapshot(ctx, clk.now)
	if err != nil {
		b.Fatal(err)
	}
	res.Queues = len(snap.Queues)
	runtime.GC()
	res.HeapAfter = readMetric(heapMetricName)
	runtime.KeepAlive(store)
	return res
}
