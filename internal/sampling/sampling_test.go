package sampling

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func params() Params { return Params{MOE: 0.015, Confidence: 0.99, MinPerStratum: 30} }

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
		want string
	}{
		{"ok", params(), ""},
		{"moe zero", Params{MOE: 0, Confidence: 0.99, MinPerStratum: 1}, "moe: 0 is outside 0.001..0.5"},
		{"moe NaN", Params{MOE: math.NaN(), Confidence: 0.99, MinPerStratum: 1}, "moe: NaN is outside 0.001..0.5"},
		{"confidence 1", Params{MOE: 0.01, Confidence: 1, MinPerStratum: 1}, "confidence: 1 is outside 0.5..0.999"},
		{"min zero", Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 0}, "min_per_stratum: 0 is outside 1..10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := tc.p.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAllocateMinPerStratumFirst(t *testing.T) {
	p := Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 10}
	strata := []Stratum{
		{Name: "a", Jobs: 1000, Released: 10, Results: 10, Passes: 5},
		{Name: "b", Jobs: 1000, Released: 3},
		{Name: "c", Jobs: 4, Released: 0},
	}
	got := Allocate(p, strata, 11)
	// b needs 7 more, c all 4 of its jobs (min capped at N_h): 11, none to a.
	if want := []int{0, 7, 4}; !slices.Equal(got, want) {
		t.Errorf("Allocate = %v, want %v", got, want)
	}
}

func TestAllocateNeymanProportions(t *testing.T) {
	p := Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 1}
	// Same size; pass rates 0.5, 0.9, 0.99 measured on 1,000 results each
	// (released counted apart, to see the shares of the next claims).
	strata := []Stratum{
		{Name: "half", Jobs: 1_000_000, Released: 1, Results: 1000, Passes: 500},
		{Name: "ninety", Jobs: 1_000_000, Released: 1, Results: 1000, Passes: 900},
		{Name: "ninety-nine", Jobs: 1_000_000, Released: 1, Results: 1000, Passes: 990},
	}
	got := Allocate(p, strata, 10_000)
	sum := 0.0
	for _, s := range strata {
		sum += s.spread()
	}
	for i, s := range strata {
		want := 10_000 * s.spread() / sum
		if math.Abs(float64(got[i])-want) > 2 {
			t.Errorf("stratum %s got %d claims, want ≈ %.0f (∝ S_h)", s.Name, got[i], want)
		}
	}
}

func TestAllocateUnseenStratumGetsTheMostBudget(t *testing.T) {
	p := Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 1}
	strata := []Stratum{
		{Name: "seen", Jobs: 1000, Released: 50, Results: 50, Passes: 25},
		{Name: "unseen-yet", Jobs: 1000, Released: 50}, // in flight, no results
	}
	got := Allocate(p, strata, 20)
	if got[1] < got[0] {
		t.Errorf("Allocate = %v: the stratum without results (prior p = 0.5) got less than a measured p = 0.5", got)
	}
}

func TestAllocateRunsOut(t *testing.T) {
	strata := []Stratum{{Name: "a", Jobs: 3, Released: 1}, {Name: "b", Jobs: 2, Released: 2}}
	if got := Allocate(params(), strata, 10); !slices.Equal(got, []int{2, 0}) {
		t.Errorf("Allocate = %v, want [2 0]", got)
	}
}

func TestRank(t *testing.T) {
	if Rank("a/p/b", "k1") != Rank("a/p/b", "k1") {
		t.Fatal("Rank is not deterministic")
	}
	if Rank("a/p/b", "k1") == Rank("a/p/b2", "k1") {
		t.Error("Rank does not depend on the batch")
	}
	// The keyed order is not the submitter's: of 1,000 keys in order,
	// about half of the neighbouring pairs must come out reversed.
	reversed := 0
	for i := range 999 {
		if Rank("a/p/b", fmt.Sprintf("q%04d", i)) > Rank("a/p/b", fmt.Sprintf("q%04d", i+1)) {
			reversed++
		}
	}
	if reversed < 400 || reversed > 600 {
		t.Errorf("%d of 999 neighbouring keys reversed, want about 500", reversed)
	}
}

func TestHalfWidth(t *testing.T) {
	r, err := NewRule(params())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.HalfWidth(0); got != 1 {
		t.Errorf("HalfWidth(0) = %v, want 1", got)
	}
	if got := r.HalfWidth(math.Inf(1)); got != 0 {
		t.Errorf("HalfWidth(+Inf) = %v, want 0", got)
	}
	// Wider than the fixed-sample interval z·s at every information, and
	// tuned: where it reaches moe it is within 40 % of it.
	z := 2.5758 // 99 %
	for _, tau := range []float64{100, 1e4, 1e5, 1e6} {
		if hw, fixed := r.HalfWidth(tau), z/math.Sqrt(tau); hw <= fixed {
			t.Errorf("HalfWidth(%g) = %v, not wider than the fixed-sample %v", tau, hw, fixed)
		}
	}
	tau := r.reach(0.015)
	if fixed := z / math.Sqrt(tau); fixed < 0.015/1.4 {
		t.Errorf("the sequence reaches moe at τ = %.0f, where the fixed-sample half-width is %v: more than 40 %% wider", tau, fixed)
	}
}

func TestEstimate(t *testing.T) {
	r, _ := NewRule(Params{MOE: 0.05, Confidence: 0.9, MinPerStratum: 2})
	for _, tc := range []struct {
		name   string
		strata []Stratum
		mean   float64
		hwIs   float64 // -1: between 0 and 1
		stop   bool
	}{
		{"nothing", nil, 0, 1, false},
		{"unseen stratum", []Stratum{{Jobs: 10, Results: 5, Passes: 5}, {Jobs: 10}}, 0.75, 1, false},
		{"all run", []Stratum{{Jobs: 10, Results: 10, Passes: 3}, {Jobs: 30, Results: 30, Passes: 30}}, 0.825, 0, true},
		{"short of min", []Stratum{{Jobs: 10, Results: 10, Passes: 3}, {Jobs: 1000, Results: 1, Passes: 1}}, 0.3*10/1010 + 1000.0/1010, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := r.Estimate(tc.strata)
			if math.Abs(e.Mean-tc.mean) > 1e-3 {
				t.Errorf("Mean = %v, want %v", e.Mean, tc.mean)
			}
			if tc.hwIs >= 0 && e.HalfWidth != tc.hwIs || tc.hwIs < 0 && !(e.HalfWidth > 0 && e.HalfWidth <= 1) {
				t.Errorf("HalfWidth = %v, want %v", e.HalfWidth, tc.hwIs)
			}
			if e.Stop != tc.stop {
				t.Errorf("Stop = %v, want %v", e.Stop, tc.stop)
			}
		})
	}
}

func FuzzAllocate(f *testing.F) {
	f.Add(uint16(100), uint16(3), uint16(0), uint16(0), uint16(50), uint16(7), uint16(5), uint8(10), uint16(30))
	f.Fuzz(func(t *testing.T, n1, r1, res1, pass1, n2, r2, res2 uint16, minPer uint8, k uint16) {
		mk := func(n, r, res, pass uint16) Stratum {
			s := Stratum{Jobs: int(n), Released: min(int(r), int(n))}
			s.Results = min(int(res), s.Released)
			s.Passes = min(int(pass), s.Results)
			return s
		}
		strata := []Stratum{mk(n1, r1, res1, pass1), mk(n2, r2, res2, res2/2)}
		p := Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: max(1, int(minPer))}
		got := Allocate(p, strata, int(k))
		free, sum := 0, 0
		for i, s := range strata {
			if got[i] < 0 || s.Released+got[i] > s.Jobs {
				t.Fatalf("stratum %d: %d claims with %d of %d released", i, got[i], s.Released, s.Jobs)
			}
			free += s.Jobs - s.Released
			sum += got[i]
		}
		if sum != min(int(k), free) {
			t.Fatalf("%d claims of %d granted with %d free", sum, k, free)
		}
		// Neither stratum is topped up past its minimum while the other
		// is still short of its own.
		for i, s := range strata {
			o := strata[1-i]
			oMin := min(p.MinPerStratum, o.Jobs)
			if got[i] > 0 && s.Released+got[i] > min(p.MinPerStratum, s.Jobs) && o.Released+got[1-i] < oMin {
				t.Fatalf("stratum %d past its minimum while %d is short: %v %v", i, 1-i, strata, got)
			}
		}
		r, _ := NewRule(p)
		e := r.Estimate(strata)
		if !(e.Mean >= 0 && e.Mean <= 1 && e.HalfWidth >= 0 && e.HalfWidth <= 1) {
			t.Fatalf("Estimate = %+v out of range", e)
		}
	})
}

// TestExpectedResultsFindsTheEarlyStop: from the first few hundred
// results, the guess of where the stop rule will hold lands near where it
// does hold, far short of the batch's every job.
func TestExpectedResultsFindsTheEarlyStop(t *testing.T) {
	r, err := NewRule(Params{MOE: 0.02, Confidence: 0.95, MinPerStratum: 20})
	if err != nil {
		t.Fatal(err)
	}
	rates := []float64{0.5, 0.8}
	at := func(n int) []Stratum { // n results per stratum, passing at its rate
		var ss []Stratum
		for i, p := range rates {
			ss = append(ss, Stratum{Name: string(rune('a' + i)), Jobs: 20000, Released: n, Results: n, Passes: int(p * float64(n))})
		}
		return ss
	}
	stop := 0
	for n := 1; n <= 20000; n++ {
		if r.Estimate(at(n)).Stop {
			stop = 2 * n
			break
		}
	}
	if stop == 0 || stop > 20000 {
		t.Fatalf("the rule stops at %d results: the test needs an early stop", stop)
	}
	for _, early := range []int{200, 1000} {
		ss := at(early / 2)
		got := r.ExpectedResults(r.Estimate(ss), ss)
		if got < stop*3/4 || got > stop*5/4 {
			t.Errorf("from %d results: expected the stop at %d, it holds at %d", early, got, stop)
		}
	}
	if got := r.ExpectedResults(r.Estimate(at(0)), at(0)); got != -1 {
		t.Errorf("with no results: got %d, want -1 (unknown)", got)
	}
}
