package montecarlo

import (
	"cmp"
	"container/heap"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/evalsched/evalsched/internal/sampling"
)

// Case is one sampled batch to replicate.
type Case struct {
	Name   string
	Params sampling.Params
	Sizes  []int     // N_h
	Rates  []float64 // each stratum's chance that a job passes
	Slots  int       // jobs in flight at once (≥ 1)
	// Duration draws a passing job's time (any unit; nil: every job 1).
	Duration func(*rand.Rand) float64
	// Window caps the claims beyond the counted prefix (0: no cap): a
	// slow job then holds back new claims instead of letting the batch
	// claim jobs whose results could not count before it ends.
	Window int
	// ArrivalOrder counts each result as it arrives, as the stop did
	// before it read results in release order: a comparison, never the
	// rule.
	ArrivalOrder bool
	// FailFactor multiplies a failing job's time (0 or 1: time
	// independent of the outcome).
	FailFactor float64
}

// Run is one replication's outcome.
type Run struct {
	Truth     float64 // the batch's true pass rate (its own jobs, not the Rates)
	Lower     float64 // the interval at the stop
	Upper     float64
	Ran       int  // jobs claimed: results in the prefix, beyond it, and in flight
	Prefix    int  // results counted at the stop (the prefix in release order)
	MissStop  bool // the interval at the stop excludes Truth
	MissEver  bool // the interval after some result excludes Truth
	RanInFull bool // the batch ran to its end without stopping
}

// Report sums the replications of a case.
type Report struct {
	Case          string  `json:"case"`
	Jobs          int     `json:"jobs"`
	Replications  int     `json:"replications"`
	FirstSeed     uint64  `json:"first_seed"`
	MissStop      int     `json:"miss_at_stop"`
	MissEver      int     `json:"miss_at_any_look"`
	MeanRan       float64 `json:"mean_ran"`
	SDRan         float64 `json:"sd_ran"`
	MeanPrefix    float64 `json:"mean_prefix"`
	MeanHalfWidth float64 `json:"mean_half_width"`
	FixedSample   int     `json:"fixed_sample"` // simple random sample sized for p = 0.5
	RanInFull     int     `json:"ran_in_full"`
	TruePassRate  float64 `json:"true_pass_rate"` // Σ N_h·rate_h / N
}

// MissRate is a count over the replications as a share, with its
// Monte-Carlo standard error sqrt(p(1−p)/R).
func (r Report) MissRate(count int) (float64, float64) {
	p := float64(count) / float64(r.Replications)
	return p, math.Sqrt(p * (1 - p) / float64(r.Replications))
}

// FixedSample is the size of a simple random sample whose normal-theory
// interval has half-width moe at the confidence whatever the rate:
// n₀ = z²/(4·moe²), shrunk by the finite-population correction
// n = n₀/(1 + (n₀−1)/N).
func FixedSample(p sampling.Params, jobs int) int {
	z := normalQuantile(1 - (1-p.Confidence)/2)
	n0 := z * z / (4 * p.MOE * p.MOE)
	return int(math.Ceil(n0 / (1 + (n0-1)/float64(jobs))))
}

// normalQuantile inverts the standard normal CDF by bisection (erf is in
// the standard library, its inverse to the precision needed here too, but
// bisection keeps the tails exact enough without a table).
func normalQuantile(q float64) float64 {
	lo, hi := -10.0, 10.0
	for range 200 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Replicate runs reps replications of c, replication i from the seed
// (first, i), on at most workers goroutines. The report depends on c,
// first and reps only.
func Replicate(c Case, first uint64, reps, workers int) Report {
	runs := make([]Run, reps)
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				runs[i] = Once(c, rand.New(rand.NewPCG(first, uint64(i))))
			}
		}()
	}
	for i := range reps {
		next <- i
	}
	close(next)
	wg.Wait()

	rep := Report{Case: c.Name, Replications: reps, FirstSeed: first}
	for h, n := range c.Sizes {
		rep.Jobs += n
		rep.TruePassRate += float64(n) * c.Rates[h]
	}
	rep.TruePassRate /= float64(rep.Jobs)
	rep.FixedSample = FixedSample(c.Params, rep.Jobs)
	var sum, sum2, prefix, hw float64
	for _, r := range runs {
		if r.MissStop {
			rep.MissStop++
		}
		if r.MissEver {
			rep.MissEver++
		}
		if r.RanInFull {
			rep.RanInFull++
		}
		sum += float64(r.Ran)
		sum2 += float64(r.Ran) * float64(r.Ran)
		prefix += float64(r.Prefix)
		hw += (r.Upper - r.Lower) / 2
	}
	n := float64(reps)
	rep.MeanRan, rep.MeanPrefix, rep.MeanHalfWidth = sum/n, prefix/n, hw/n
	rep.SDRan = math.Sqrt(max(0, sum2/n-rep.MeanRan*rep.MeanRan))
	return rep
}

// Once runs one replication: draws every job's verdict (each stratum's
// jobs in their random release order), then claims jobs as slots free up
// (sampling.Allocate on every result so far), counts results into the
// sequence in release order only, and stops at the first look whose
// interval is within moe (every stratum with its minimum).
func Once(c Case, rng *rand.Rand) Run {
	H := len(c.Sizes)
	outcomes := make([][]bool, H)
	total, passes := 0, 0
	for h, n := range c.Sizes {
		outcomes[h] = make([]bool, n)
		for i := range n {
			if rng.Float64() < c.Rates[h] {
				outcomes[h][i] = true
				passes++
			}
		}
		total += n
	}
	var out Run
	out.Truth = float64(passes) / float64(total)

	released := make([]int, H) // claims per stratum: the next job's place in its order
	seq := sampling.NewSequence(c.Params, c.Sizes)
	type claim struct {
		h    int
		pass bool
	}
	var (
		claims   []claim // release order
		done     []bool
		prefix   int
		inPrefix = make([]int, H)
		ends     endHeap
		now      float64
	)
	pending := make([]int, H)
	release := func() bool {
		if c.Window > 0 && len(claims)-prefix >= c.Window {
			return false
		}
		h := seq.Next(pending)
		if h < 0 {
			return false
		}
		pending[h]++
		pass := outcomes[h][released[h]]
		released[h]++
		d := 1.0
		if c.Duration != nil {
			d = c.Duration(rng)
		}
		if !pass && c.FailFactor > 0 {
			d *= c.FailFactor
		}
		heap.Push(&ends, end{at: now + d, idx: len(claims)})
		claims = append(claims, claim{h, pass})
		done = append(done, false)
		return true
	}
	short := func() bool {
		for h, n := range c.Sizes {
			if inPrefix[h] < min(c.Params.MinPerStratum, n) {
				return true
			}
		}
		return false
	}
	for range max(1, c.Slots) {
		if !release() {
			break
		}
	}
	counted := func(h int, pass bool) (stop bool) {
		seq.Add(h, pass)
		inPrefix[h]++
		pending[h]--
		lo, hi := seq.Bounds()
		miss := out.Truth < lo || out.Truth > hi
		out.MissEver = out.MissEver || miss
		if (hi-lo)/2 <= c.Params.MOE && !short() {
			out.Lower, out.Upper, out.MissStop = lo, hi, miss
			out.Ran, out.Prefix = len(claims), seq.Results()
			return true
		}
		return false
	}
	for len(ends) > 0 {
		// 1. The next end: its result counts once every earlier claim has
		// its result (or at once, in arrival order).
		e := heap.Pop(&ends).(end)
		now = e.at
		done[e.idx] = true
		if c.ArrivalOrder {
			if cl := claims[e.idx]; counted(cl.h, cl.pass) {
				return out
			}
		}
		for prefix < len(claims) && done[prefix] {
			p := claims[prefix]
			prefix++
			if !c.ArrivalOrder && counted(p.h, p.pass) {
				return out
			}
		}
		// 2. Free slots take the next claims (a window that was full may
		// have opened for several).
		for len(claims)-prefix < c.Window || c.Window == 0 {
			if len(ends) >= max(1, c.Slots) || !release() {
				break
			}
		}
	}
	out.Lower, out.Upper = seq.Bounds()
	out.MissStop = out.Truth < out.Lower || out.Truth > out.Upper
	out.Ran, out.Prefix, out.RanInFull = len(claims), seq.Results(), true
	return out
}

type end struct {
	at  float64
	idx int
}

// endHeap orders ends by time, then claim: the same order every run.
type endHeap []end

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(h[i].at, h[j].at), cmp.Compare(h[i].idx, h[j].idx)) < 0
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(end)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
