package scenariotest

import "github.com/evalsched/evalsched/internal/sim/scenario"

// Tiny is a one-model scenario with fixed distributions whose numbers can
// be worked out by hand: conc 1, every job one 10-s call, containers start
// in 5 s. Options change it.
func Tiny(jobs int, opts ...func(*scenario.Scenario)) *scenario.Scenario {
	sc := &scenario.Scenario{
		Name: "tiny", Seed: 1, DurationS: 100, PassIntervalS: 10, GlobalMaxRunning: 10,
		LaunchRatePerS: 20, LaunchBurst: 100, ContainerStartS: scenario.FixedDist(5), MetricDelayS: 20,
		Tiers: 3, TierWeight: 0.8, DefaultTier: 2,
		Models: []scenario.Model{{Name: "m", ProviderConcurrency: 1, CallS: scenario.FixedDist(10), TargetDepth: 1,
			MinLimit: 1, MaxLimit: 10000, InitialLimit: 10, StaticCap: 10}},
		Batches: []scenario.Batch{{Account: "a", Project: "p", Batch: "b", Model: "m", Jobs: jobs, Tier: -1,
			Calls: scenario.FixedDist(1), ThinkS: scenario.FixedDist(0)}},
	}
	for _, o := range opts {
		o(sc)
	}
	return sc
}
