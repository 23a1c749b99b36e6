package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// The twin bound is, for a lane whose provider's capacity drops, the best
// a policy could do that cannot foresee the drop. The oracle (oracle.go)
// knows the whole run in advance: its one fixed cap is chosen knowing the
// drop will come. A real policy cannot tell the lane from its twin, the
// same lane without the drop (and without its recovery), until the first
// gateway depth datapoint that can show the drop, so up to then it must
// run the lane exactly as it runs the twin; whatever it does there must
// also serve the twin, where a cap held low only costs jobs.
//
// The bound sweeps the simplest such policies, policy static with its caps
// stepped (Options.CapSteps), the caps as multiples of the twin oracle's
// caps on each dropped model (the other models keep the twin oracle's):
//
//   - before the drop is seen, one cap, × f1 (twinPreDrop);
//   - at the first datapoint that can show it, SeenAtS (the drop's time +
//     the metric delay + one depth period, at least one pass interval),
//     any lower cap, × f2 (twinAfterDrop), with every task still starting
//     beyond it stopped (CapStep.Yield); running containers run on;
//   - after the recovery, if the drop has one, × f3 ∈ {f1, 1}.
//
// For each f1 the twin runs × f1 and, at SeenAtS, the twin oracle's caps
// (on the twin nothing shows, and the best fixed cap in hindsight is the
// most it could gain from there); the lane runs every (f2, f3). A row
// keeps the lane run with the lowest blocked share among those with at
// least laneMinThroughput × the lane oracle's jobs. The bound of the lane
// is the lowest such blocked share over the f1 that keep the twin at
// laneMinThroughput × the twin oracle's jobs, and the lane meets in the
// bound when it is at most laneMaxBlocked: some policy that cannot see
// the drop coming meets the lane's bar on both the lane and its twin.
//
// It is a bound of a policy class, not of every policy: a policy that
// changes its operating point over time before the drop (say, high early
// and lower later), or one that evicts running containers at the drop,
// is outside it and could do better.
var (
	twinPreDrop   = []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1}
	twinAfterDrop = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1}
)

// Drop is a capacity drop of one model's provider: a change that sets its
// concurrency below the starting one, and its recovery, the next change of
// the same model that sets it back to at least the starting one.
type Drop struct {
	Model int     `json:"model"`
	AtS   float64 `json:"at_s"`
	// SeenAtS is the time of the first datapoint that can show the drop:
	// AtS + the metric delay + the depth period (at least a pass interval).
	SeenAtS    float64 `json:"seen_at_s"`
	RecoverAtS float64 `json:"recover_at_s"` // 0: no recovery
}

// seenDelay is how long after a change the first datapoint that can show
// it is read: the metric delay (as the engine reads it: 0 is none) and one
// depth period (the engine's default when unset), and the period at least
// one pass interval, as a pass acts at its own times only.
func seenDelay(sc *scenario.Scenario) float64 {
	period := max(cmp.Or(sc.DepthPeriodS, scenario.DefaultDepthPeriodS), cmp.Or(sc.PassIntervalS, scenario.DefaultPassIntervalS))
	return sc.MetricDelayS + float64(period)
}

// twinOf is sc's twin: sc without its capacity drops and their recoveries,
// every other change (rises, error bursts) and model as it was, named
// NAME-twin. A drop's or recovery's change that also changes the error
// rate keeps that. sc is not changed. It also returns the drops, by model
// and time.
func twinOf(sc *scenario.Scenario) (*scenario.Scenario, []Drop) {
	tw := *sc
	tw.Name = sc.Name + "-twin"
	tw.Models = slices.Clone(sc.Models)
	var drops []Drop
	for mi := range tw.Models {
		m := &tw.Models[mi]
		start := m.ProviderConcurrency
		var keep []scenario.Change
		open := -1 // index in drops of the model's drop not yet recovered
		for _, c := range m.Changes {
			pc := c.ProviderConcurrency
			switch {
			case pc != nil && open < 0 && *pc < start:
				drops = append(drops, Drop{Model: mi, AtS: c.AtS, SeenAtS: c.AtS + seenDelay(sc)})
				open = len(drops) - 1
			case pc != nil && open >= 0 && *pc >= start:
				drops[open].RecoverAtS = c.AtS
				open = -1
			case pc != nil && open >= 0:
				// Lower again while dropped: part of the same drop.
			default:
				keep = append(keep, c)
				continue
			}
			if c.ErrorRate != nil || c.ErrorCallS != nil {
				c.ProviderConcurrency = nil
				keep = append(keep, c)
			}
		}
		if len(keep) != len(m.Changes) {
			m.Changes = keep
		}
	}
	return &tw, drops
}

// TwinRow is one pre-drop cap of the twin bound.
type TwinRow struct {
	// PreDrop is f1: the dropped models' caps before the drop is seen, ×
	// the twin oracle's.
	PreDrop float64 `json:"pre_drop"`
	// The twin's run: f1, then the twin oracle's caps from SeenAtS;
	// throughput is work (Result.Work) / the twin oracle's.
	TwinThroughput float64 `json:"twin_throughput"`
	TwinBlocked    float64 `json:"twin_blocked"`
	// The best lane run of this f1: the lowest blocked share among the
	// runs with at least laneMinThroughput × the lane oracle's jobs
	// (LaneThroughputOK), else the lowest of all (LaneThroughputOK false).
	LaneBlocked      float64 `json:"lane_blocked"`
	LaneThroughput   float64 `json:"lane_throughput"` // work / the lane oracle's
	LaneThroughputOK bool    `json:"lane_throughput_ok"`
	AfterDrop        float64 `json:"after_drop"`     // its f2
	AfterRecovery    float64 `json:"after_recovery"` // its f3 (f1 without a recovery)
}

// TwinResult is one lane's twin bound.
type TwinResult struct {
	Lane     int    `json:"lane"`
	Scenario string `json:"scenario"`
	Drops    []Drop `json:"drops"` // empty: no drop, no bound
	// The twin oracle: its caps are the rows' 1×; and the lane oracle's jobs.
	TwinOracleCaps []int `json:"twin_oracle_caps,omitempty"`
	TwinOracleJobs int   `json:"twin_oracle_succeeded"`
	LaneOracleJobs int   `json:"lane_oracle_succeeded"`
	// Policy dynamic on the lane (blocked, throughput / the lane oracle's)
	// and on the twin (throughput / the twin oracle's, blocked).
	DynamicBlocked        float64   `json:"dynamic_blocked"`
	DynamicThroughput     float64   `json:"dynamic_throughput"`
	DynamicTwinThroughput float64   `json:"dynamic_twin_throughput"`
	DynamicTwinBlocked    float64   `json:"dynamic_twin_blocked"`
	Rows                  []TwinRow `json:"rows,omitempty"` // in f1 order
	// Best is the lowest LaneBlocked over the rows whose twin kept
	// laneMinThroughput × the twin oracle's jobs and whose lane run kept
	// its own; -1 when no row did.
	Best    float64 `json:"best_blocked"`
	BestPre float64 `json:"best_pre_drop"` // the f1 of Best; 0 without one
	Meets   bool    `json:"meets"`         // 0 ≤ Best ≤ laneMaxBlocked
	Runs    int     `json:"runs"`          // simulations
	WallS   float64 `json:"wall_s"`
}

// twinEvent is one dropped model's cap change in a stepped run.
type twinEvent struct {
	at    float64
	model int
	f     float64 // × the twin oracle's cap
	yield bool
}

// capSteps merges the dropped models' events in time order into
// cumulative steps: each step carries every model's cap, the dropped ones
// at their latest multiple (f1 before their first event).
func capSteps(base []int, drops []Drop, f1 float64, ev []twinEvent) []CapStep {
	slices.SortStableFunc(ev, func(a, b twinEvent) int { return cmp.Compare(a.at, b.at) })
	f := preDrop(len(base), drops, f1)
	var steps []CapStep
	for _, e := range ev {
		f[e.model] = e.f
		steps = append(steps, CapStep{AtS: e.at, Caps: scaledCaps(base, f), Yield: e.yield})
	}
	return steps
}

// preDrop is the multiples of the twin oracle's caps before any drop is
// seen: f1 on the dropped models, 1 on the others.
func preDrop(models int, drops []Drop, f1 float64) []float64 {
	f := make([]float64, models)
	for i := range f {
		f[i] = 1
	}
	for _, d := range drops {
		f[d.Model] = f1
	}
	return f
}

// scaledCaps is base × f per model, rounded, at least 1.
func scaledCaps(base []int, f []float64) []int {
	out := make([]int, len(base))
	for i, c := range base {
		out[i] = max(1, int(math.Round(float64(c)*f[i])))
	}
	return out
}

// TwinBound measures lane sc's twin bound (the comment above). A lane
// without a capacity drop has no bound: no rows, Best -1, no error.
func TwinBound(sc *scenario.Scenario, k int) (TwinResult, error) {
	return twinBound(sc, k, nil)
}

// twinBound is TwinBound with the lane's oracle given (nil: swept here).
// Throughput is work (Result.Work), as the family's judge counts it.
func twinBound(sc *scenario.Scenario, k int, lane *oracleFit) (TwinResult, error) {
	tr := TwinResult{Lane: k, Scenario: sc.Name, Best: -1}
	tw, drops := twinOf(sc)
	tr.Drops = drops
	if len(drops) == 0 {
		return tr, nil
	}
	fail := func(err error) (TwinResult, error) {
		return TwinResult{}, fmt.Errorf("lane %d: twin bound: %w", k, err)
	}
	// The twin's oracle gives the rows' caps: the best within the lane's
	// bar, by work, refined at that bar only.
	ot, err := findOracle(tw, false, sweepRule{bars: []float64{laneMaxBlocked}, measure: workOf})
	if err != nil {
		return fail(err)
	}
	ol := lane
	if ol == nil {
		if ol, err = findOracle(sc, false, familyRule); err != nil {
			return fail(err)
		}
		tr.Runs += len(ol.Points)
	}
	tr.Runs += len(ot.Points)
	base := ot.Caps
	tr.TwinOracleCaps = slices.Clone(base)
	tr.TwinOracleJobs, tr.LaneOracleJobs = ot.Best.Totals.Succeeded, ol.Best.Totals.Succeeded
	twinWork, laneWork := ot.Best.Work, ol.Best.Work
	dyn, err := runPolicy(sc, Dynamic, Options{})
	if err != nil {
		return fail(err)
	}
	dynT, err := runPolicy(tw, Dynamic, Options{})
	if err != nil {
		return fail(err)
	}
	tr.Runs += 2
	tr.DynamicBlocked, tr.DynamicThroughput = round(laneBlocked(dyn), 4), workRatio(dyn.Work, laneWork)
	tr.DynamicTwinThroughput, tr.DynamicTwinBlocked = workRatio(dynT.Work, twinWork), round(laneBlocked(dynT), 4)

	// enough: work of at least laneMinThroughput × the bar's.
	enough := func(work, bar float64) bool { return work >= laneMinThroughput*bar }
	recovers := slices.ContainsFunc(drops, func(d Drop) bool { return d.RecoverAtS > 0 })
	for _, f1 := range twinPreDrop {
		caps := scaledCaps(base, preDrop(len(base), drops, f1))
		var tev []twinEvent
		for _, d := range drops {
			tev = append(tev, twinEvent{at: d.SeenAtS, model: d.Model, f: 1})
		}
		rt, err := runPolicy(tw, Static, Options{StaticCaps: caps, CapSteps: capSteps(base, drops, f1, tev)})
		if err != nil {
			return fail(err)
		}
		tr.Runs++
		row := TwinRow{PreDrop: f1, TwinThroughput: workRatio(rt.Work, twinWork), TwinBlocked: round(laneBlocked(rt), 4)}
		f3s := []float64{f1}
		if recovers && f1 != 1 {
			f3s = append(f3s, 1)
		}
		first := true
		for _, f2 := range twinAfterDrop {
			for _, f3 := range f3s {
				var ev []twinEvent
				for _, d := range drops {
					ev = append(ev, twinEvent{at: d.SeenAtS, model: d.Model, f: f2, yield: true})
					if d.RecoverAtS > 0 {
						ev = append(ev, twinEvent{at: d.RecoverAtS, model: d.Model, f: f3})
					}
				}
				rl, err := runPolicy(sc, Static, Options{StaticCaps: caps, CapSteps: capSteps(base, drops, f1, ev)})
				if err != nil {
					return fail(err)
				}
				tr.Runs++
				bl, ok := laneBlocked(rl), enough(rl.Work, laneWork)
				// A run with the throughput beats one without; then the
				// lower blocked share (the first of equals, in grid order).
				if first || ok && !row.LaneThroughputOK || ok == row.LaneThroughputOK && round(bl, 4) < row.LaneBlocked {
					row.LaneBlocked, row.LaneThroughputOK = round(bl, 4), ok
					row.LaneThroughput = workRatio(rl.Work, laneWork)
					row.AfterDrop, row.AfterRecovery = f2, f3
					first = false
				}
			}
		}
		eligible := enough(rt.Work, twinWork) && row.LaneThroughputOK
		if eligible && (tr.Best < 0 || row.LaneBlocked < tr.Best) {
			tr.Best, tr.BestPre = row.LaneBlocked, f1
		}
		tr.Rows = append(tr.Rows, row)
	}
	tr.Meets = tr.Best >= 0 && tr.Best <= laneMaxBlocked
	return tr, nil
}

// RunTwins measures the lanes' twin bounds (lane numbers ks, scenarios
// lanes) on at most workers goroutines, as RunFamily runs lanes; progress,
// when set, is called after each lane with the lanes done. Results come in
// lane order.
func RunTwins(lanes []*scenario.Scenario, ks []int, workers int, progress func(done int, r TwinResult)) ([]TwinResult, error) {
	return eachLane(lanes, ks, workers, func(sc *scenario.Scenario, k int) (TwinResult, error) {
		start := time.Now()
		r, err := TwinBound(sc, k)
		r.WallS = round(time.Since(start).Seconds(), 2)
		return r, err
	}, progress)
}
