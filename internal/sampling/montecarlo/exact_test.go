package montecarlo

import (
	"math"
	"testing"

	"github.com/evalsched/evalsched/internal/sampling"
)

// logChoose is log C(n, k).
func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// hyperTail is P(X ≥ k) (upper) or P(X ≤ k) for X hypergeometric: n
// draws without replacement from N items of which M pass.
func hyperTail(N, M, n, k int, upper bool) float64 {
	lo, hi := max(0, n-(N-M)), min(n, M)
	from, to := k, hi
	if !upper {
		from, to = lo, k
	}
	from, to = max(from, lo), min(to, hi)
	if from > to {
		return 0
	}
	norm := logChoose(N, n)
	sum := 0.0
	for x := from; x <= to; x++ {
		sum += math.Exp(logChoose(M, x) + logChoose(N-M, n-x) - norm)
	}
	return sum
}

// exactHalfWidth is the half-width of the exact (Clopper-Pearson-style,
// hypergeometric) two-sided interval for the pass rate of N items after
// n draws with k passes: α/2 in each tail.
func exactHalfWidth(N, n, k int, alpha float64) float64 {
	// Lower: the least M with P(X ≥ k | M) > α/2 (P rises with M).
	lo, hi := 0, N
	for lo < hi {
		m := (lo + hi) / 2
		if hyperTail(N, m, n, k, true) > alpha/2 {
			hi = m
		} else {
			lo = m + 1
		}
	}
	lower := lo
	// Upper: the greatest M with P(X ≤ k | M) > α/2 (P falls with M).
	lo, hi = 0, N
	for lo < hi {
		m := (lo + hi + 1) / 2
		if hyperTail(N, m, n, k, false) > alpha/2 {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return float64(lo-lower) / float64(2*N)
}

// TestExactFixedSample: the fixed sample a batch of 100,000 at p = 0.5
// needs for ±0.015 at 99 % with the exact hypergeometric interval (not
// the normal approximation FixedSample uses) is within 1 % of
// FixedSample's: the "fixed" column of BENCHMARKS.md is the exact
// interval's size, not a flattering approximation.
func TestExactFixedSample(t *testing.T) {
	p := sampling.Params{MOE: 0.015, Confidence: 0.99, MinPerStratum: 30}
	const N = 100_000
	lo, hi := 1000, 20_000
	for lo < hi {
		n := (lo + hi) / 2
		if exactHalfWidth(N, n, n/2, 1-p.Confidence) <= p.MOE {
			hi = n
		} else {
			lo = n + 1
		}
	}
	fixed := FixedSample(p, N)
	t.Logf("exact fixed sample %d, normal-theory %d", lo, fixed)
	if math.Abs(float64(lo-fixed)) > 0.01*float64(fixed) {
		t.Errorf("exact fixed sample %d; normal-theory %d: more than 1 %% apart", lo, fixed)
	}
}
