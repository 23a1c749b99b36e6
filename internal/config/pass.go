package config

import (
	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// The pass's configuration is built here and nowhere else: the scheduler
// Lambda, status's dry run, the local mode and the simulator all call Pass,
// so what status predicts is what the pass does with the same settings.

// Caps are the account-wide caps the settings give: the global cap, the
// launch rate and burst, and the launches a pass may issue — the launch
// rate over one pass interval (20/s × 10 s = 200), since the launcher's
// bucket refills at that rate between passes.
func (c Config) Caps() scheduler.Caps {
	return scheduler.Caps{
		GlobalMaxRunning:   c.GlobalMaxRunning,
		MaxLaunchesPerPass: max(1, int(c.LaunchRate*c.PassInterval.Seconds())),
		LaunchRate:         c.LaunchRate,
		LaunchBurst:        c.LaunchBurst,
	}
}

// ShardCaps is shard k's static share of Caps over c.Shards (all of them
// with one shard).
func (c Config) ShardCaps(shard int) scheduler.Caps {
	return c.Caps().Share(shard, c.Shards)
}

// Pass is the pass configuration of shard k of c.Shards: the tiers and the
// shard's share of the caps; the limits' and the breaker's defaults, the
// breaker reading the gateway's error rate when the gateway publishes one.
// It is not validated: the caller says whose configuration a failure is
// (scheduler.Config.Validate).
func (c Config) Pass(shard int) scheduler.Config {
	share := c.ShardCaps(shard)
	sc := scheduler.DefaultConfig()
	sc.Tiers, sc.TierWeight, sc.DefaultTier = c.Tiers, c.TierWeight, c.DefaultTier
	sc.GlobalMaxRunning, sc.MaxLaunchesPerPass = share.GlobalMaxRunning, share.MaxLaunchesPerPass
	if c.ErrorMetricName != "" {
		// The gateway publishes its error rate: the breaker closes on it.
		sc.Breaker.GatewayThreshold = breaker.DefaultGatewayThreshold
	}
	return sc
}

// Sharing is how shard k shares the account's caps with the other shards:
// by their loads, reported every pass; a report older than 3 passes is a
// shard that stopped (it keeps its static share). Nil with one shard.
func (c Config) Sharing(shard int) *scheduler.Sharing {
	if c.Shards <= 1 {
		return nil
	}
	return &scheduler.Sharing{Shard: shard, Shards: c.Shards, Account: c.Caps(), MaxAge: 3 * c.PassInterval}
}
