package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// The oracle is the best fixed cap in hindsight: policy static run again
// and again with the caps swept, the best of them kept. It is the bar a
// competent operator could reach by trying caps on this very scenario,
// which no operator can do in advance; dynamic is measured against it.
//
// "Best" is judged by the promise dynamic is held to: keep the provider
// busy without containers waiting at the gateway. A cap whose containers
// spend more of their time queued there than a bar is one the operator
// would lower (it pays for idle containers to gain a few per cent of
// jobs), so the oracle is the most work among the caps within the bar.
// The family's judge holds the oracle to dynamic's own bar: the blocked
// share dynamic reached on the lane, at least oracleFloor (familyrun.go,
// laneOracleAt), so no fixed cap beats dynamic by blocking more than it
// did. The sweep of a family lane therefore refines around the best cap
// within each bar the judge may ask for (familyRule: oracleFloor and
// laneMaxBlocked, work as the measure), and the judge picks among all the
// points it ran. policy oracle of `sim --scenario` (make run) keeps its
// rule: the most succeeded jobs within laneMaxBlocked (runRule). The most
// of any cap, whatever it blocks, is kept beside it (AnyCap) and reported,
// so that what the bar costs in throughput stays visible.

// oracleGrid multiplies each model's starting cap (BusyCaps: the jobs that
// keep its provider just busy) in the first sweep: a geometric grid of
// ratio √2; oracleCoarse is the grid of `sim --scenario` (make run), ratio
// √2 over 0.5-2.
var (
	oracleGrid   = []float64{0.25, 0.35, 0.5, 0.71, 1, 1.41, 2, 2.83, 4}
	oracleCoarse = []float64{0.5, 0.71, 1, 1.41, 2}
)

// oracleRefine are the steps tried around the best point.
var oracleRefine = []float64{0.84, 1.19}

// oracleCoord are the steps of the coordinate sweep of a lane with several
// models: one model's cap moved, the others held at the best so far. Under
// a binding global cap the best fixed caps are far from proportional (a
// model of long jobs held low leaves slots to one of short jobs), which
// neither the joint grid nor each model's own best finds.
var oracleCoord = []float64{0.25, 0.5, 0.71, 1.41, 2}

// oracleTie is the throughput within which two caps tie; the tie goes to
// the lower blocked share.
const oracleTie = 0.01

// oracleFloor is the lowest bar the family's judge holds the oracle to:
// dynamic steers to half the lane's bar (limits.Config.MaxBlocked), and a
// fixed cap may block as much.
const oracleFloor = 0.05

// sweep is one static run of the oracle's sweep.
type sweep struct {
	Caps         []int   `json:"caps"`
	Succeeded    int     `json:"succeeded"`
	Work         float64 `json:"work"` // Result.Work
	BlockedShare float64 `json:"blocked_share"`
	models       []sweep // each model's own numbers in this run
}

// jobsOf and workOf are a point's throughput: succeeded jobs (the old
// judge's and make run's), or its work (Result.Work, the family's judge).
func jobsOf(p sweep) float64 { return float64(p.Succeeded) }
func workOf(p sweep) float64 { return p.Work }

// sweepRule is what a sweep refines toward: the best point within each
// bar, by the measure.
type sweepRule struct {
	bars    []float64
	measure func(sweep) float64
}

var (
	// runRule is policy oracle's in `sim --scenario` (make run).
	runRule = sweepRule{bars: []float64{laneMaxBlocked}, measure: jobsOf}
	// familyRule is the family's: the judge's oracle bar lies between
	// oracleFloor and laneMaxBlocked for a lane it can pass (its dynamic
	// blocks at most that), and the old judge's is laneMaxBlocked.
	familyRule = sweepRule{bars: []float64{laneMaxBlocked, oracleFloor}, measure: workOf}
)

// oracleFit is the best of the sweep, and every point tried.
type oracleFit struct {
	Best   *Result `json:"-"`
	Caps   []int   `json:"caps"`
	Points []sweep `json:"points"`
	// AnyCap is the point with the most jobs whatever its blocked share
	// (mostJobs over every point); the same run as Best when the most
	// jobs are within the bar.
	AnyCap sweep `json:"any_cap"`
}

// pick is the cap an operator would keep among points by the old rule:
// pickAt laneMaxBlocked by succeeded jobs.
func pick(points []sweep) int { return pickAt(points, laneMaxBlocked, jobsOf) }

// pickAt is the cap an operator would keep among points: the points within
// the blocked bar (all of them when none is: a provider failing under
// every cap, where the most is the hardest bar for dynamic); then mostBy
// the measure. It returns the chosen point's index, -1 for no points.
func pickAt(points []sweep, bar float64, measure func(sweep) float64) int {
	in := func(p sweep) bool { return p.BlockedShare <= bar }
	if !slices.ContainsFunc(points, in) {
		in = func(sweep) bool { return true }
	}
	return mostBy(points, in, measure)
}

// withinBar: the point's containers waited at the gateway no longer than
// the lane's bar allows.
func withinBar(p sweep) bool { return p.BlockedShare <= laneMaxBlocked }

// mostJobs is mostBy succeeded jobs.
func mostJobs(points []sweep, ok func(sweep) bool) int { return mostBy(points, ok, jobsOf) }

// mostBy is the index of the point with the most of measure among those ok
// takes, on throughput alone: of the points within the tie of the most,
// the lowest blocked share, then the smallest caps (for determinism).
// Choosing from the whole set at once keeps the tie rule transitive. -1
// when ok takes none.
func mostBy(points []sweep, ok func(sweep) bool, measure func(sweep) float64) int {
	top, any := 0.0, false
	for _, p := range points {
		if ok(p) && (!any || measure(p) > top) {
			top, any = measure(p), true
		}
	}
	best := -1
	for i, p := range points {
		if !ok(p) || top-measure(p) > oracleTie*top {
			continue
		}
		if best < 0 || p.BlockedShare < points[best].BlockedShare ||
			p.BlockedShare == points[best].BlockedShare && sum(p.Caps) < sum(points[best].Caps) {
			best = i
		}
	}
	return best
}

// scaled is every cap of base × f, rounded, at least 1: a point of the
// sweep's grid.
func scaled(base []int, f float64) []int {
	out := slices.Clone(base)
	for i := range out {
		out[i] = max(1, int(math.Round(float64(base[i])*f)))
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// laneBlocked pools the blocked share of every model of a run: blocked
// container-seconds over running container-seconds.
func laneBlocked(r *Result) float64 {
	var b, run float64
	for _, m := range r.Models {
		b += m.BlockedS
		run += m.RunningS
	}
	if run == 0 {
		return 0
	}
	return b / run
}

// findOracle sweeps the static caps of sc: the grid on every model's cap
// at once; then, for each bar of the rule, the caps that were best for
// each model on its own (lanes of policy static interact only through the
// global cap and the launch bucket, so one run checks the combination);
// then steps around the best point, and again each model's best; with
// several models, two rounds of coordinate steps, model by model. The best
// run within the rule's first bar is o.Best. Runs are sequential: the
// caller parallelises across scenarios. coarse takes the smaller grid.
func findOracle(sc *scenario.Scenario, coarse bool, rule sweepRule) (*oracleFit, error) {
	o := &oracleFit{}
	var runs []*Result // o.Points' runs
	tried := map[string]bool{}
	try := func(caps []int) error {
		key := fmt.Sprint(caps)
		if tried[key] {
			return nil
		}
		tried[key] = true
		r, err := runPolicy(sc, Static, Options{StaticCaps: caps})
		if err != nil {
			return err
		}
		s := sweep{Caps: slices.Clone(caps), Succeeded: r.Totals.Succeeded, Work: round(r.Work, 2), BlockedShare: round(laneBlocked(r), 4)}
		for i, m := range sc.Models {
			mr := r.Models[m.Name]
			s.models = append(s.models, sweep{Caps: caps[i : i+1], Succeeded: mr.Succeeded, Work: float64(mr.Succeeded), BlockedShare: mr.BlockedShare})
		}
		o.Points, runs = append(o.Points, s), append(runs, r)
		return nil
	}
	best := func(bar float64) []int { return o.Points[pickAt(o.Points, bar, rule.measure)].Caps }
	// eachBest combines, per model, its cap of the run that was best for it.
	eachBest := func(bar float64) []int {
		caps := make([]int, len(sc.Models))
		own := make([]sweep, len(o.Points))
		for i := range caps {
			for k, p := range o.Points {
				own[k] = p.models[i]
			}
			caps[i] = own[pickAt(own, bar, rule.measure)].Caps[0]
		}
		return caps
	}
	grid := oracleGrid
	if coarse {
		grid = oracleCoarse
	}
	start := scenario.BusyCaps(sc)
	for _, f := range grid {
		if err := try(scaled(start, f)); err != nil {
			return nil, err
		}
	}
	// Where even the grid's lowest caps block beyond the bar, lower caps
	// may not: an operator would go on lowering, not keep the most jobs
	// of caps that idle their containers at the gateway. Seed 1's lane
	// 150 (a provider of 19 dropping to 5 for 70 % of the run): 0.25 ×
	// its busy caps, 33 jobs, blocked 0.116, and the oracle was the most
	// jobs of any cap, 1,897 at 0.76 blocked, while 27 jobs keep 0.047
	// (849 jobs). The grid's ratio on down, until a point is within the
	// lowest bar or every cap is 1 (a provider that fails under every cap).
	lowest := slices.Min(rule.bars)
	within := func(p sweep) bool { return p.BlockedShare <= lowest }
	for low := scaled(start, grid[0]); !slices.ContainsFunc(o.Points, within) && slices.ContainsFunc(low, func(c int) bool { return c > 1 }); {
		low = scaled(low, 1/math.Sqrt2)
		if err := try(low); err != nil {
			return nil, err
		}
	}
	for _, bar := range rule.bars {
		if err := try(eachBest(bar)); err != nil {
			return nil, err
		}
		base := best(bar)
		for _, f := range oracleRefine {
			if err := try(scaled(base, f)); err != nil {
				return nil, err
			}
		}
		if err := try(eachBest(bar)); err != nil {
			return nil, err
		}
		// Two rounds: a model held low in the first round frees slots
		// that another can take in the second.
		// The coarse sweep (make run) stops before them.
		for round := 0; round < 2 && len(sc.Models) > 1 && !coarse; round++ {
			for i := range sc.Models {
				base := best(bar)
				for _, f := range oracleCoord {
					caps := slices.Clone(base)
					caps[i] = max(1, int(math.Round(float64(base[i])*f)))
					if err := try(caps); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	k := pickAt(o.Points, rule.bars[0], rule.measure)
	o.Caps, o.Best = o.Points[k].Caps, runs[k]
	o.AnyCap = o.Points[mostBy(o.Points, func(sweep) bool { return true }, rule.measure)]
	return o, nil
}
