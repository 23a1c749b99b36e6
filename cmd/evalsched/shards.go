package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// shardView is one scheduler shard as the next pass would run it: its share
// of the account's caps, by the shards' last reported loads.
type shardView struct {
	Shard            int     `json:"shard"`
	Models           int     `json:"models"`
	Held             int     `json:"held"`
	GlobalMaxRunning int     `json:"global_max_running"`
	Launches         int     `json:"launches_per_pass"`
	LaunchRate       float64 `json:"launch_rate"`
	ReportAgeS       float64 `json:"report_age_s"` // -1: no report
}

// dryRun is the next pass's plan over every model. With the scheduler
// sharded — fresh load reports from more than one shard in the store — each
// shard's models are decided apart, with the share of the caps that shard's
// pass would take (scheduler.Sharing.ShareByLoad), and the plans merged; so
// NEXT PASS says what the shards would admit, not one scheduler with the
// whole cap.
func dryRun(ctx context.Context, loads scheduler.LoadStore, account scheduler.Caps, sc scheduler.Config,
	snap scheduler.Snapshot, depths map[string]scheduler.Depth, now time.Time, interval time.Duration) (scheduler.Plan, []shardView, error) {
	reports, err := loads.ShardLoads(ctx)
	if err != nil {
		return scheduler.Plan{}, nil, err
	}
	maxAge := 3 * interval
	n := 0
	for _, l := range reports {
		if now.Sub(l.At) <= maxAge {
			n = max(n, l.Shard+1)
		}
	}
	if n <= 1 {
		return scheduler.Decide(sc, snap, depths, now), nil, nil
	}
	merged := scheduler.Plan{At: now}
	var views []shardView
	for k := range n {
		sub := scheduler.Snapshot{Pins: snap.Pins, Warnings: snap.Warnings}
		for _, m := range snap.Models {
			if scheduler.ShardOf(m.Config.Name, n) == k {
				sub.Models = append(sub.Models, m)
			}
		}
		for _, q := range snap.Queues {
			if scheduler.ShardOf(q.Model, n) == k {
				sub.Queues = append(sub.Queues, q)
			}
		}
		own := scheduler.LoadNow(k, sub, now)
		share := scheduler.Sharing{Shard: k, Shards: n, Account: account, MaxAge: maxAge}.ShareByLoad(own, reports, now)
		cfg := sc
		cfg.GlobalMaxRunning, cfg.MaxLaunchesPerPass = share.GlobalMaxRunning, share.MaxLaunchesPerPass
		plan := scheduler.Decide(cfg, sub, depths, now)
		merged.Models = append(merged.Models, plan.Models...)
		merged.Warnings = append(merged.Warnings, plan.Warnings...)
		age := -1.0
		if i := slices.IndexFunc(reports, func(l scheduler.ShardLoad) bool { return l.Shard == k }); i >= 0 {
			age = now.Sub(reports[i].At).Seconds()
		}
		views = append(views, shardView{Shard: k, Models: len(sub.Models), Held: own.Held, GlobalMaxRunning: share.GlobalMaxRunning,
			Launches: share.MaxLaunchesPerPass, LaunchRate: share.LaunchRate, ReportAgeS: age})
	}
	slices.SortFunc(merged.Models, func(a, b scheduler.ModelPlan) int { return strings.Compare(a.Model, b.Model) })
	slices.Sort(merged.Warnings)
	merged.Warnings = slices.Compact(merged.Warnings) // the pins' warnings, once per shard
	return merged, views, nil
}
