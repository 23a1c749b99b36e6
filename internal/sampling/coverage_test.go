package sampling

import (
	"math"
	"math/rand/v2"
	"testing"
)

// run samples one finite batch, one result at a time, in Allocate's
// proportions, looking after every result once each stratum has its
// minimum. It reports whether the interval ever excluded the batch's true
// pass rate at a look, whether the reported interval at the stop covered
// it, and how many results it took. fixed replaces the sequence with the
// fixed-sample interval μ̂ ± z·s (the rule a z-test re-checked every pass
// would use).
func run(rng *rand.Rand, r Rule, sizes []int, rates []float64, fixed bool) (everMissed, coveredAtStop bool, results int) {
	const z90 = 1.6449
	outcomes := make([][]bool, len(sizes)) // each stratum's jobs in release order
	strata := make([]Stratum, len(sizes))
	passes, total := 0, 0
	for h, n := range sizes {
		strata[h] = Stratum{Jobs: n}
		for range n {
			pass := rng.Float64() < rates[h]
			outcomes[h] = append(outcomes[h], pass)
			if pass {
				passes++
			}
		}
		total += n
	}
	truth := float64(passes) / float64(total)
	for {
		a := Allocate(r.p, strata, 1)
		h := -1
		for i, n := range a {
			if n > 0 {
				h = i
			}
		}
		if h < 0 {
			return everMissed, true, results // the whole batch ran: exact
		}
		s := &strata[h]
		if outcomes[h][s.Released] {
			s.Passes++
		}
		s.Released++
		s.Results++
		results++
		e := r.Estimate(strata)
		hw := e.HalfWidth
		if fixed {
			hw = z90 * math.Sqrt(variance(strata))
		}
		short := false
		for _, s := range strata {
			short = short || s.Results < min(r.p.MinPerStratum, s.Jobs)
		}
		if short {
			continue
		}
		miss := math.Abs(e.Mean-truth) > hw
		everMissed = everMissed || miss
		if hw <= r.p.MOE {
			return everMissed, !miss, results
		}
	}
}

// variance is the s² of Estimate, for the fixed-sample rule.
func variance(strata []Stratum) float64 {
	total := 0
	for _, s := range strata {
		total += s.Jobs
	}
	v := 0.0
	for _, s := range strata {
		w, n := float64(s.Jobs)/float64(total), float64(s.Results)
		p := s.smoothed()
		v += w * w * (1 - n/float64(s.Jobs)) * p * (1 - p) / n
	}
	return v
}

// TestCoverageUnderRepeatedLooks: at 90 % confidence, over 400 batches,
// the confidence sequence excludes the truth at any look (after every
// result) in at most 10 % of batches, and so its interval at the stop
// covers in at least 90 %; the fixed-sample interval, looked at as often,
// excludes the truth at some look in far more. The bound allows the
// binomial noise of 400 batches (3σ = 4.5 points) only in the direction
// that makes the test harder to pass for the sequence: it must stay ≤ 10 %.
func TestCoverageUnderRepeatedLooks(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 800 batches")
	}
	r, err := NewRule(Params{MOE: 0.04, Confidence: 0.9, MinPerStratum: 20})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{3000, 2000, 1500, 500}
	rates := []float64{0.5, 0.85, 0.3, 0.97}
	const batches = 400
	rng := rand.New(rand.NewPCG(16, 1))
	var seqMissed, seqCovered, fixedMissed, seqResults int
	for range batches {
		ever, covered, n := run(rng, r, sizes, rates, false)
		if ever {
			seqMissed++
		}
		if covered {
			seqCovered++
		}
		seqResults += n
		if ever, _, _ := run(rng, r, sizes, rates, true); ever {
			fixedMissed++
		}
	}
	t.Logf("sequence: missed at some look %d/%d, covered at stop %d/%d, %.0f results of 7000 on average; fixed-sample: missed at some look %d/%d",
		seqMissed, batches, seqCovered, batches, float64(seqResults)/batches, fixedMissed, batches)
	if float64(seqMissed) > 0.10*batches {
		t.Errorf("the confidence sequence excluded the truth at some look in %d of %d batches, more than 10 %%", seqMissed, batches)
	}
	if float64(seqCovered) < 0.90*batches {
		t.Errorf("the interval at the stop covered in %d of %d batches, less than 90 %%", seqCovered, batches)
	}
	if float64(fixedMissed) < 0.15*batches {
		t.Errorf("the fixed-sample interval missed at some look in only %d of %d batches: the test cannot tell a sequence from it", fixedMissed, batches)
	}
	if seqResults >= batches*7000 {
		t.Errorf("sampling ran every job")
	}
}
