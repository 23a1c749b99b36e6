package sim

import (
	"fmt"
	"math"
	"slices"
)

// The oracle is the best fixed cap in hindsight: policy static run again
// and again with the caps swept, the best of them kept. It is the bar a
// competent operator could reach by trying caps on this very scenario,
// which no operator can do in advance; dynamic is measured against it.

// oracleGrid multiplies each model's starting cap (BusyCaps: the jobs that
// keep its provider just busy) in the first sweep: a geometric grid of
// ratio √2.
var oracleGrid = []float64{0.25, 0.35, 0.5, 0.71, 1, 1.41, 2, 2.83, 4}

// oracleRefine are the steps tried around the best point, on every model's
// cap at once and then on each model's alone.
var oracleRefine = []float64{0.84, 1.19}

// OracleTie is the throughput within which two caps tie; the tie goes to
// the lower blocked share.
const OracleTie = 0.01

// Sweep is one static run of the oracle's sweep.
type Sweep struct {
	Caps         []int   `json:"caps"`
	Succeeded    int     `json:"succeeded"`
	BlockedShare float64 `json:"blocked_share"`
}

// Oracle is the best of the sweep, and every point tried.
type Oracle struct {
	Best   *Result `json:"-"`
	Caps   []int   `json:"caps"`
	Points []Sweep `json:"points"`
}

// better reports whether a beats b: more throughput beyond the tie, or a
// tie with a lower blocked share (then fewer jobs held, for determinism).
func better(a, b Sweep) bool {
	top := math.Max(float64(a.Succeeded), float64(b.Succeeded))
	if math.Abs(float64(a.Succeeded-b.Succeeded)) > OracleTie*top {
		return a.Succeeded > b.Succeeded
	}
	if a.BlockedShare != b.BlockedShare {
		return a.BlockedShare < b.BlockedShare
	}
	return sum(a.Caps) < sum(b.Caps)
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// LaneBlocked pools the blocked share of every model of a run: blocked
// container-seconds over running container-seconds.
func LaneBlocked(r *Result) float64 {
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

// FindOracle sweeps the static caps of sc: the grid on every model's cap at
// once, then refinement steps around the best, on all caps and then on each
// model's (coordinate descent, one round). Runs are sequential: the caller
// parallelises across scenarios.
func FindOracle(sc *Scenario) (*Oracle, error) {
	o := &Oracle{}
	var best Sweep
	tried := map[string]bool{}
	try := func(caps []int) error {
		key := fmt.Sprint(caps)
		if tried[key] {
			return nil
		}
		tried[key] = true
		r, err := Run(sc, Static, Options{StaticCaps: caps})
		if err != nil {
			return err
		}
		s := Sweep{Caps: slices.Clone(caps), Succeeded: r.Totals.Succeeded, BlockedShare: round(LaneBlocked(r), 4)}
		o.Points = append(o.Points, s)
		if o.Best == nil || better(s, best) {
			best, o.Best = s, r
		}
		return nil
	}
	scaled := func(base []int, f float64, only int) []int {
		out := slices.Clone(base)
		for i := range out {
			if only < 0 || i == only {
				out[i] = max(1, int(math.Round(float64(base[i])*f)))
			}
		}
		return out
	}
	start := BusyCaps(sc)
	for _, f := range oracleGrid {
		if err := try(scaled(start, f, -1)); err != nil {
			return nil, err
		}
	}
	for only := -1; only < len(sc.Models); only++ {
		if only == 0 && len(sc.Models) == 1 {
			break // one model: the joint step was that model's
		}
		base := best.Caps
		for _, f := range oracleRefine {
			if err := try(scaled(base, f, only)); err != nil {
				return nil, err
			}
		}
	}
	o.Caps = best.Caps
	return o, nil
}

// BusyCaps estimates, per model, the jobs that keep its provider just busy
// at its peak concurrency: concurrency × (call + think) / call, with the
// means of call_s and of its batches' think_s (weighted by jobs). It is
// what an operator who knows the workload would set, and where the
// oracle's sweep starts.
func BusyCaps(sc *Scenario) []int {
	caps := make([]int, len(sc.Models))
	for i, m := range sc.Models {
		peak := m.ProviderConcurrency
		for _, c := range m.Changes {
			if c.ProviderConcurrency != nil {
				peak = max(peak, *c.ProviderConcurrency)
			}
		}
		var think, jobs float64
		for _, b := range sc.Batches {
			if b.Model == m.Name {
				think += float64(b.Jobs) * mean(b.ThinkS)
				jobs += float64(b.Jobs)
			}
		}
		if jobs > 0 {
			think /= jobs
		}
		call := math.Max(mean(m.CallS), 1e-3)
		caps[i] = max(1, int(math.Round(float64(peak)*(call+think)/call)))
	}
	return caps
}
