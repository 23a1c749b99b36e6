package status

import (
	"context"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// ShardView is one scheduler shard as the next pass would run it: its share
// of the account's caps, by the shards' last reported loads.
type ShardView struct {
	Shard            int     `json:"shard"`
	Models           int     `json:"models"`
	Held             int     `json:"held"`
	GlobalMaxRunning int     `json:"global_max_running"`
	Launches         int     `json:"launches_per_pass"`
	LaunchRate       float64 `json:"launch_rate"`
	ReportAgeS       float64 `json:"report_age_s"` // -1: no report
}

// dryRun is the next pass's plan over every model, each shard's with its
// share of the caps (scheduler.DryRun), and the shards as status shows them.
func dryRun(ctx context.Context, loads scheduler.LoadStore, account scheduler.Caps, sc scheduler.Config,
	snap scheduler.Snapshot, depths map[string]scheduler.Depth, now time.Time, interval time.Duration) (scheduler.Plan, []ShardView, error) {
	plan, runs, err := scheduler.DryRun(ctx, loads, account, sc, snap, depths, now, interval)
	if err != nil {
		return plan, nil, err
	}
	var views []ShardView
	for _, r := range runs {
		age := -1.0
		if r.Reported {
			age = r.ReportAge.Seconds()
		}
		views = append(views, ShardView{Shard: r.Shard, Models: r.Models, Held: r.Held, GlobalMaxRunning: r.Share.GlobalMaxRunning,
			Launches: r.Share.MaxLaunchesPerPass, LaunchRate: r.Share.LaunchRate, ReportAgeS: age})
	}
	return plan, views, nil
}
