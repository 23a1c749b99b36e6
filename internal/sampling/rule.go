package sampling

import (
	"math"
)

// Rule is the asymptotic stop rule the DynamoDB store still reads from
// its per-stratum counters (package doc, "The asymptotic rule"): its
// Params and the mixture parameter ρ² of Robbins' normal-mixture boundary
// in information time 1/s². It undercovers near 0 and 1; Sequence is the
// rule that holds in finite samples.
type Rule struct {
	p     Params
	alpha float64
	rho2  float64
}

// NewRule checks p and tunes the boundary to be tightest where its
// half-width reaches p.MOE. WS&R's choice of ρ for a target information τ*
// is ρ² = (−2·log α + log(1 − 2·log α))/τ*; τ* itself is where the
// boundary so tuned reaches moe, found by a few rounds of fixed point.
func NewRule(p Params) (Rule, error) {
	if err := p.Validate(); err != nil {
		return Rule{}, err
	}
	r := Rule{p: p, alpha: 1 - p.Confidence}
	la := math.Log(r.alpha)
	g := -2*la + math.Log(1-2*la)
	tau := -2 * la / (p.MOE * p.MOE) // the fixed-sample information, a start
	for range 8 {
		r.rho2 = g / tau
		tau = r.reach(p.MOE)
	}
	r.rho2 = g / tau
	return r, nil
}

// Params returns the rule's parameters.
func (r Rule) Params() Params { return r.p }

// HalfWidth is the confidence sequence's half-width at information τ
// (1/variance of the estimate), at most 1: an interval that wide around a
// rate holds every rate.
func (r Rule) HalfWidth(tau float64) float64 {
	if math.IsInf(tau, 1) {
		return 0
	}
	if !(tau > 0) {
		return 1
	}
	v := tau*r.rho2 + 1
	hw := math.Sqrt(2 * v / (tau * tau * r.rho2) * math.Log(math.Sqrt(v)/r.alpha))
	return min(hw, 1)
}

// reach returns the least information at which HalfWidth ≤ hw, by
// bisection on a log scale (HalfWidth falls with τ past its first few
// units, which is all that matters for hw ≤ 0.5).
func (r Rule) reach(hw float64) float64 {
	lo, hi := 1.0, 1.0
	for r.HalfWidth(hi) > hw {
		lo, hi = hi, hi*2
	}
	for range 60 {
		mid := math.Sqrt(lo * hi)
		if r.HalfWidth(mid) > hw {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// Estimate is the pass rate of a batch (or one stratum) from the results
// so far.
type Estimate struct {
	Mean      float64 `json:"estimate"`
	HalfWidth float64 `json:"half_width"` // 1 until every stratum has a result
	// Lower and Upper are the interval when it is not Mean ± HalfWidth
	// (the asymptotic Rule leaves them 0): a Sequence's, which may sit
	// off-centre near 0 and 1 — there Mean is its midpoint.
	Lower   float64 `json:"lower,omitempty"`
	Upper   float64 `json:"upper,omitempty"`
	Results int     `json:"results"`
	Jobs    int     `json:"jobs"`
	// Stop: every stratum has min(min_per_stratum, N_h) results and the
	// half-width is ≤ moe.
	Stop bool `json:"stop"`
}

// Estimate is the stratified estimate over strata and whether the batch
// may stop. A stratum without results counts at p̃ = 0.5 in the mean and
// holds the half-width at 1.
func (r Rule) Estimate(strata []Stratum) Estimate {
	var e Estimate
	for _, s := range strata {
		e.Jobs += s.Jobs
		e.Results += s.Results
	}
	if e.Jobs == 0 {
		return Estimate{HalfWidth: 1}
	}
	variance, unseen, short := 0.0, false, false
	for _, s := range strata {
		if s.Jobs == 0 {
			continue
		}
		w := float64(s.Jobs) / float64(e.Jobs)
		if s.Results < min(r.p.MinPerStratum, s.Jobs) {
			short = true
		}
		if s.Results == 0 {
			unseen = true
			e.Mean += w * 0.5
			continue
		}
		n := float64(min(s.Results, s.Jobs))
		e.Mean += w * float64(s.Passes) / float64(s.Results)
		p := s.smoothed()
		variance += w * w * (1 - n/float64(s.Jobs)) * p * (1 - p) / n
	}
	e.Mean = min(max(e.Mean, 0), 1) // the weights' rounding
	switch {
	case unseen:
		e.HalfWidth = 1
	case variance == 0:
		e.HalfWidth = 0
	default:
		e.HalfWidth = r.HalfWidth(1 / variance)
	}
	e.Stop = !short && e.HalfWidth <= r.p.MOE
	return e
}

// ExpectedResults is the results at which the stop rule is expected to
// hold, from the estimate so far: the information the half-width moe needs
// grows as the results do (τ ∝ n, the finite-population correction
// ignored, so the guess errs long), so n* = n · reach(moe) / reach(hw),
// at least each stratum's minimum, at most every job. It returns the
// results so far once the rule holds, and −1 while a stratum has no
// result (no variance to scale from).
func (r Rule) ExpectedResults(e Estimate, strata []Stratum) int {
	if e.Stop {
		return e.Results
	}
	if e.Results == 0 || e.HalfWidth >= 1 {
		return -1
	}
	floor := 0
	for _, s := range strata {
		floor += min(r.p.MinPerStratum, s.Jobs)
	}
	n := float64(e.Results)
	if e.HalfWidth > r.p.MOE {
		n *= r.reach(r.p.MOE) / r.reach(e.HalfWidth)
	}
	return min(e.Jobs, max(floor, int(math.Ceil(n))))
}
