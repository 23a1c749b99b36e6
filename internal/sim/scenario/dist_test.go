package scenario

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func draws(d Dist, n int) []float64 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]float64, n)
	for i := range out {
		out[i] = d.Sample(r)
	}
	slices.Sort(out)
	return out
}

func TestLognormalCalibration(t *testing.T) {
	d := LognormalDist(8, 30)
	mu, sigma := d.Params()
	if want := math.Log(8); math.Abs(mu-want) > 1e-12 {
		t.Errorf("μ = %v, want ln 8 = %v", mu, want)
	}
	if want := math.Log(30.0/8) / 1.2816; math.Abs(sigma-want) > 1e-12 {
		t.Errorf("σ = %v, want ln(30/8)/1.2816 = %v", sigma, want)
	}
	x := draws(d, 200_000)
	if got := percentile(x, 0.5); math.Abs(got-8)/8 > 0.02 {
		t.Errorf("sample median = %.3f, want 8 ± 2%%", got)
	}
	if got := percentile(x, 0.9); math.Abs(got-30)/30 > 0.02 {
		t.Errorf("sample p90 = %.3f, want 30 ± 2%%", got)
	}
}

func TestLognormalDegenerate(t *testing.T) {
	// p90 = median: σ = 0, every draw is the median.
	for _, v := range draws(LognormalDist(4, 4), 100) {
		if math.Abs(v-4) > 1e-9 {
			t.Fatalf("draw %v, want 4", v)
		}
	}
}

func TestUniform(t *testing.T) {
	x := draws(UniformDist(2, 6), 100_000)
	if x[0] < 2 || x[len(x)-1] >= 6 {
		t.Errorf("range [%v, %v], want within [2, 6)", x[0], x[len(x)-1])
	}
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	if mean := sum / float64(len(x)); math.Abs(mean-4) > 0.02 {
		t.Errorf("mean %.3f, want 4", mean)
	}
}

func TestFixed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	if got := FixedDist(2.5).Sample(r); got != 2.5 {
		t.Errorf("fixed 2.5 drew %v", got)
	}
	if got := FixedDist(2.5).Duration(r); got.Seconds() != 2.5 {
		t.Errorf("fixed 2.5 s = %v", got)
	}
	// A fixed draw consumes nothing, the same under every policy.
	after := rand.New(rand.NewPCG(1, 2)).Uint64()
	if r.Uint64() != after {
		t.Error("a fixed draw consumed randomness")
	}
}

func TestCountRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		d    Dist
		want int
	}{
		{FixedDist(0), 1},
		{FixedDist(0.4), 1},
		{FixedDist(2.5), 3},
		{FixedDist(2.49), 2},
		{FixedDist(7), 7},
	} {
		if got := c.d.Count(r); got != c.want {
			t.Errorf("%v: count %d, want %d", c.d, got, c.want)
		}
	}
	for range 10_000 {
		if n := UniformDist(0, 1.4).Count(r); n != 1 {
			t.Fatalf("uniform 0..1.4 counted %d, want 1 (rounded, at least 1)", n)
		}
	}
}

// percentile is the nearest-rank percentile of sorted values (the
// simulator's metrics use the same rule).
func percentile(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
