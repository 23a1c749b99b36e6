package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// DistKind names the shape of a distribution.
type DistKind uint8

// The distribution shapes of the scenario format.
const (
	Fixed     DistKind = iota + 1 // {"fixed": x}
	Lognormal                     // {"median": m, "p90": p}
	Uniform                       // {"min": a, "max": b}
)

// z90 is the standard normal's 90th percentile: a lognormal with median m and
// 90th percentile p has σ = ln(p/m)/z90 and μ = ln m.
const z90 = 1.2816

// maxDraw bounds every draw (seconds, or calls) so a wild lognormal tail
// cannot overflow a time.Duration.
const maxDraw = 1e8

// Dist is one DIST of the scenario format.
type Dist struct {
	Kind     DistKind
	Fixed    float64 // Fixed
	Median   float64 // Lognormal
	P90      float64 // Lognormal
	Min, Max float64 // Uniform
	mu, sig  float64
}

// FixedDist returns {"fixed": x}.
func FixedDist(x float64) Dist { return Dist{Kind: Fixed, Fixed: x} }

// LognormalDist returns {"median": m, "p90": p}: σ = ln(p/m)/1.2816, μ = ln m.
func LognormalDist(median, p90 float64) Dist {
	return Dist{Kind: Lognormal, Median: median, P90: p90, mu: math.Log(median), sig: math.Log(p90/median) / z90}
}

// UniformDist returns {"min": a, "max": b}.
func UniformDist(lo, hi float64) Dist { return Dist{Kind: Uniform, Min: lo, Max: hi} }

// Params returns μ and σ of a lognormal (zero for the other shapes).
func (d Dist) Params() (mu, sigma float64) { return d.mu, d.sig }

// Sample draws one value. Fixed draws consume no randomness; that is the same
// for every policy, so it does not break the alignment of the streams.
func (d Dist) Sample(r *rand.Rand) float64 {
	var x float64
	switch d.Kind {
	case Fixed:
		x = d.Fixed
	case Lognormal:
		x = math.Exp(d.mu + d.sig*r.NormFloat64())
	case Uniform:
		x = d.Min + (d.Max-d.Min)*r.Float64()
	}
	return min(max(x, 0), maxDraw)
}

// Count draws a count (calls of a job): rounded to the nearest integer, at least 1.
func (d Dist) Count(r *rand.Rand) int {
	return max(1, int(math.Round(d.Sample(r))))
}

// Duration draws a duration in seconds, rounded to the nanosecond.
func (d Dist) Duration(r *rand.Rand) time.Duration {
	return seconds(d.Sample(r))
}

func (d Dist) String() string {
	switch d.Kind {
	case Fixed:
		return fmt.Sprintf("fixed %g", d.Fixed)
	case Lognormal:
		return fmt.Sprintf("lognormal median %g p90 %g", d.Median, d.P90)
	case Uniform:
		return fmt.Sprintf("uniform %g..%g", d.Min, d.Max)
	}
	return "none"
}

// seconds converts seconds to a duration, rounded to the nanosecond.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}
