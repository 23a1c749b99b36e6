package scheduler

import (
	"context"
	"slices"
	"strings"
	"time"
)

// ShardRun is one shard's part of a DryRun: the share of the account's caps
// its next pass would take, by the shards' last reported loads.
type ShardRun struct {
	Shard  int
	Models int  // the shard's models in the snapshot
	Held   int  // slots they hold now
	Share  Caps // what the shard's pass would take
	// ReportAge is how old the shard's last load report is, if Reported.
	ReportAge time.Duration
	Reported  bool
}

// DryRun is the next pass's plan over every model, for status. With the
// scheduler sharded — fresh load reports (within 3 pass intervals) from more
// than one shard in the store — each shard's models are decided apart, with
// the share of the caps that shard's pass would take (Sharing.ShareByLoad),
// and the plans merged by model name; so it says what the shards would
// admit, not one scheduler with the whole cap. Unsharded, it is Decide and
// the shards are nil. Nothing is written.
func DryRun(ctx context.Context, loads LoadStore, account Caps, sc Config,
	snap Snapshot, depths map[string]Depth, now time.Time, interval time.Duration) (Plan, []ShardRun, error) {
	reports, err := loads.ShardLoads(ctx)
	if err != nil {
		return Plan{}, nil, err
	}
	maxAge := 3 * interval
	n := 0
	for _, l := range reports {
		if now.Sub(l.At) <= maxAge {
			n = max(n, l.Shard+1)
		}
	}
	if n <= 1 {
		return Decide(sc, snap, depths, now), nil, nil
	}
	merged := Plan{At: now}
	var runs []ShardRun
	for k := range n {
		sub := Snapshot{Pins: snap.Pins, Warnings: snap.Warnings}
		for _, m := range snap.Models {
			if ShardOf(m.Config.Name, n) == k {
				sub.Models = append(sub.Models, m)
			}
		}
		for _, q := range snap.Queues {
			if ShardOf(q.Model, n) == k {
				sub.Queues = append(sub.Queues, q)
			}
		}
		own := LoadNow(k, sub, now)
		share := Sharing{Shard: k, Shards: n, Account: account, MaxAge: maxAge}.ShareByLoad(own, reports, now)
		cfg := sc
		cfg.GlobalMaxRunning, cfg.MaxLaunchesPerPass = share.GlobalMaxRunning, share.MaxLaunchesPerPass
		plan := Decide(cfg, sub, depths, now)
		merged.Models = append(merged.Models, plan.Models...)
		merged.Warnings = append(merged.Warnings, plan.Warnings...)
		run := ShardRun{Shard: k, Models: len(sub.Models), Held: own.Held, Share: share}
		if i := slices.IndexFunc(reports, func(l ShardLoad) bool { return l.Shard == k }); i >= 0 {
			run.ReportAge, run.Reported = now.Sub(reports[i].At), true
		}
		runs = append(runs, run)
	}
	slices.SortFunc(merged.Models, func(a, b ModelPlan) int { return strings.Compare(a.Model, b.Model) })
	slices.Sort(merged.Warnings)
	merged.Warnings = slices.Compact(merged.Warnings) // the pins' warnings, once per shard
	return merged, runs, nil
}
