package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/evalsched/evalsched/internal/sim/stream"
)

// The scenario family: random lanes drawn from a seed, to measure the
// controller on lanes nobody tuned it on (scenarios/README.md, "Scenario
// family", publishes these distributions). Lane k of family seed S depends
// on S and k only, so `--lane K` replays one lane of any family size, and
// so does the scenario file it writes.

// The family's ranges. Each is drawn per lane (per model where it says so).
const (
	famConcMin, famConcMax             = 10, 3000 // provider concurrency, log-uniform
	famTargetMin, famTargetMax         = 0.03, 0.08
	famTargetFloor                     = 2
	famCallsMin, famCallsMax           = 2, 80 // median calls per job, log-uniform
	famCallMin, famCallMax             = 1, 16 // median call time, log-uniform; p90 = 2.5 × median (≤ 40 s)
	famCallTail                        = 2.5
	famThinkMin, famThinkMax           = 0.5, 30 // median think time, log-uniform; p90 = 2 × median
	famStartMin, famStartMax           = 15, 120 // container start, uniform within a drawn [a, b]
	famDelayMin, famDelayMax           = 10, 60  // metric delay
	famDropMin, famDropMax             = 0.25, 0.60
	famRiseMin, famRiseMax             = 1.5, 3
	famBurstMin, famBurstMax           = 0.50, 0.95
	famBurstSMin, famBurstSMax         = 300, 1200
	famRecoverSMin, famRecoverSMax     = 600, 1800
	famSmallShareMin, famSmallShareMax = 0.01, 0.03
	famMinDurationS, famMaxDurationS   = 3600, 10800
)

// FamilyLane draws lane k of the family with seed seed. The lane's own
// simulation seed is derived from both, so lanes do not share job streams.
func FamilyLane(seed int64, k int) *Scenario {
	r := rand.New(stream.New(seed, stream.Family, uint64(k)))
	logU := func(lo, hi float64) float64 { return math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))*r.Float64()) }
	uni := func(lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }
	round1 := func(x float64) float64 { return math.Round(x*10) / 10 }

	sc := &Scenario{
		Name:           fmt.Sprintf("family-%d-lane-%d", seed, k),
		Seed:           int64(stream.Mix(uint64(seed)^uint64(k)) >> 1),
		PassIntervalS:  DefaultPassIntervalS,
		LaunchRatePerS: DefaultLaunchRatePerS,
		LaunchBurst:    DefaultLaunchBurst,
		MetricDelayS:   math.Round(uni(famDelayMin, famDelayMax)),
		DepthPeriodS:   ProductionDepthPeriodS,
		Tiers:          DefaultTiers,
		TierWeight:     DefaultTierWeight,
		DefaultTier:    DefaultDefaultTier,
	}
	a := math.Round(uni(famStartMin, (famStartMin+famStartMax)/2))
	sc.ContainerStartS = UniformDist(a, math.Round(uni(a, famStartMax)))

	// Several models share the global cap in 4 lanes of 10.
	nModels := 1
	switch u := r.Float64(); {
	case u >= 0.85:
		nModels = 3
	case u >= 0.6:
		nModels = 2
	}

	type draft struct {
		calls, think Dist
		callMean     float64
		jobLen       float64 // mean seconds of one job's calls and thinks
		peak         int
		small        bool
	}
	drafts := make([]draft, nModels)
	longest := 0.0
	for i := range nModels {
		conc := int(math.Round(logU(famConcMin, famConcMax)))
		callMed := logU(famCallMin, famCallMax)
		thinkMed := logU(famThinkMin, famThinkMax)
		callsMed := math.Round(logU(famCallsMin, famCallsMax))
		m := Model{
			Name:                fmt.Sprintf("model-%d", i),
			ProviderConcurrency: conc,
			CallS:               LognormalDist(round1(callMed), round1(famCallTail*callMed)),
			TargetDepth:         math.Max(famTargetFloor, math.Round(uni(famTargetMin, famTargetMax)*float64(conc))),
			MinLimit:            DefaultMinLimit,
			InitialLimit:        DefaultInitialLimit,
		}
		d := draft{
			calls: LognormalDist(callsMed, math.Round(1.5*callsMed)),
			think: LognormalDist(round1(thinkMed), round1(2*thinkMed)),
		}
		d.callMean = mean(m.CallS)
		d.jobLen = mean(d.calls) * (d.callMean + mean(d.think))
		d.peak = conc
		// One provider event per model, or none: a capacity drop (and
		// most often its recovery), a rise, or an error burst. Times are
		// fractions of the duration, fixed below.
		switch u := r.Float64(); {
		case u < 0.30:
			drop := int(math.Max(1, math.Round(uni(famDropMin, famDropMax)*float64(conc))))
			m.Changes = append(m.Changes, Change{AtS: uni(0.25, 0.5), ProviderConcurrency: &drop})
			if r.Float64() < 0.75 {
				back := conc
				m.Changes = append(m.Changes, Change{AtS: -math.Round(uni(famRecoverSMin, famRecoverSMax)), ProviderConcurrency: &back})
			}
		case u < 0.45:
			rise := int(math.Round(uni(famRiseMin, famRiseMax) * float64(conc)))
			m.Changes = append(m.Changes, Change{AtS: uni(0.25, 0.5), ProviderConcurrency: &rise})
			d.peak = rise
		case u < 0.65:
			rate, call := math.Round(uni(famBurstMin, famBurstMax)*100)/100, round1(uni(0.2, 2))
			heal := 0.0
			m.Changes = append(m.Changes,
				Change{AtS: uni(0.25, 0.5), ErrorRate: &rate, ErrorCallS: &call},
				Change{AtS: -math.Round(uni(famBurstSMin, famBurstSMax)), ErrorRate: &heal})
		}
		d.small = r.Float64() < 0.5
		longest = math.Max(longest, d.jobLen)
		sc.Models = append(sc.Models, m)
		drafts[i] = d
	}

	// Long enough for five of the longest jobs, within 1-3 hours.
	sc.DurationS = int(math.Min(famMaxDurationS, math.Max(famMinDurationS, math.Ceil(5*longest/600)*600)))
	dur := float64(sc.DurationS)
	for i := range sc.Models {
		m := &sc.Models[i]
		// Relative times become absolute: a positive at_s is a fraction of
		// the run, a negative one seconds after the change before it.
		for c := range m.Changes {
			if at := m.Changes[c].AtS; at < 0 {
				m.Changes[c].AtS = m.Changes[c-1].AtS - at
			} else {
				m.Changes[c].AtS = math.Round(at * dur)
			}
		}
		d := drafts[i]
		// The big batch keeps the lane in backlog: half again the jobs
		// the provider could finish at its peak, at most what the launch
		// bucket can start.
		jobs := 1.5 * float64(d.peak) * dur / (d.callMean * mean(d.calls))
		jobs = math.Min(jobs, 1.2*sc.LaunchRatePerS*dur)
		big := max(10, int(math.Round(jobs)))
		sc.Batches = append(sc.Batches, Batch{AtS: 0, Account: "lab", Project: m.Name, Batch: "big", Model: m.Name,
			Jobs: big, Tier: -1, Calls: d.calls, ThinkS: d.think})
		if d.small {
			sc.Batches = append(sc.Batches, Batch{
				AtS: math.Round(uni(0.1, 0.4) * dur), Account: "team", Project: m.Name, Batch: "small", Model: m.Name,
				Jobs: max(5, int(math.Round(uni(famSmallShareMin, famSmallShareMax)*float64(big)))),
				Tier: -1, Calls: d.calls, ThinkS: d.think})
		}
	}
	// The busy jobs (BusyCaps: calling, thinking and starting) set the
	// limits' ceiling and the old caps. One model alone has the account to
	// itself; several share a cap between 0.6 and 1.5 times what they need
	// together.
	busy := BusyCaps(sc)
	need := 0.0
	for i := range sc.Models {
		m := &sc.Models[i]
		need += float64(busy[i])
		m.MaxLimit = max(DefaultMaxLimit, 4*busy[i])
		m.StaticCap = max(1, int(math.Round(float64(busy[i])*float64(m.ProviderConcurrency)/float64(drafts[i].peak))))
	}
	share := 3.0
	if nModels > 1 {
		share = uni(0.6, 1.5)
	}
	sc.GlobalMaxRunning = max(50, int(math.Round(share*need)))
	return sc
}

// family draws lanes 0..n-1 of the family with seed seed.
// ConfigureConcurrency makes sc a lane whose operator gave evalsched each
// provider's concurrency (the model item's provider_concurrency): the
// gateway's setting at the start. A later change of the provider's
// capacity (a drop, a rise) is not in it, as an operator's item would not
// follow the provider either.
func ConfigureConcurrency(sc *Scenario) {
	for i := range sc.Models {
		sc.Models[i].ConfiguredConcurrency = sc.Models[i].ProviderConcurrency
	}
}

func family(seed int64, n int) []*Scenario {
	lanes := make([]*Scenario, n)
	for k := range lanes {
		lanes[k] = FamilyLane(seed, k)
	}
	return lanes
}

// mean is a distribution's mean: a lognormal's is median·e^(σ²/2).
func mean(d Dist) float64 {
	switch d.Kind {
	case Fixed:
		return d.Fixed
	case Lognormal:
		return d.Median * math.Exp(d.sig*d.sig/2)
	case Uniform:
		return (d.Min + d.Max) / 2
	}
	return 0
}

// ErrorBurst is a time a model's provider failed calls: from the change that
// set error_rate > 0 to the one that set it back to 0 (or the end).
type ErrorBurst struct {
	Model      int
	FromS, ToS float64
}

// ErrorBursts lists the scenario's error bursts, from its changes, so a
// lane replayed from its file is judged as it was in the family.
func ErrorBursts(sc *Scenario) []ErrorBurst {
	var out []ErrorBurst
	for mi, m := range sc.Models {
		open := -1.0
		for _, c := range m.Changes {
			if c.ErrorRate == nil {
				continue
			}
			if *c.ErrorRate > 0 && open < 0 {
				open = c.AtS
			} else if *c.ErrorRate == 0 && open >= 0 {
				out = append(out, ErrorBurst{Model: mi, FromS: open, ToS: c.AtS})
				open = -1
			}
		}
		if open >= 0 {
			out = append(out, ErrorBurst{Model: mi, FromS: open, ToS: float64(sc.DurationS)})
		}
	}
	return out
}

// SmallBatches lists the batches that arrive behind a bigger one of the same
// model: after it, with at most a tenth of its jobs.
func SmallBatches(sc *Scenario) []int {
	var out []int
	for i, b := range sc.Batches {
		for _, big := range sc.Batches {
			if big.Model == b.Model && big.AtS < b.AtS && b.Jobs*10 <= big.Jobs {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// BusyCaps estimates, per model, the jobs that keep its provider just busy
// at its peak concurrency: concurrency × (call + think) / call jobs
// calling or thinking, and on top the slots of jobs whose containers are
// starting: × (job + container start) / job, a job lasting calls × (call +
// think). Means of call_s, container_start_s and the model's batches' calls
// and think_s (weighted by jobs). It is what an operator who knows the
// workload would set, and where the oracle's sweep starts.
func BusyCaps(sc *Scenario) []int {
	caps := make([]int, len(sc.Models))
	for i, m := range sc.Models {
		peak := m.ProviderConcurrency
		for _, c := range m.Changes {
			if c.ProviderConcurrency != nil {
				peak = max(peak, *c.ProviderConcurrency)
			}
		}
		caps[i] = BusyCap(sc, i, peak)
	}
	return caps
}

// BusyCap is the jobs (slots, starting and running) that keep model i's
// provider just busy at concurrency conc (BusyCaps).
func BusyCap(sc *Scenario, i, conc int) int {
	m := sc.Models[i]
	var think, calls, jobs float64
	for _, b := range sc.Batches {
		if b.Model == m.Name {
			think += float64(b.Jobs) * mean(b.ThinkS)
			calls += float64(b.Jobs) * math.Max(1, mean(b.Calls))
			jobs += float64(b.Jobs)
		}
	}
	if jobs > 0 {
		think /= jobs
		calls /= jobs
	}
	call := math.Max(mean(m.CallS), 1e-3)
	job := math.Max(calls*(call+think), 1e-3)
	busy := float64(conc) * (call + think) / call * (job + mean(sc.ContainerStartS)) / job
	return max(1, int(math.Round(busy)))
}

// FamilyLanes draws seed's family: its n lanes, or lane k alone when
// k ≥ 0 (the same lane whatever n). With configured, each model is given
// its provider's concurrency, as an operator who knew it would. ks[i] is
// lanes[i]'s number.
func FamilyLanes(seed int64, n, k int, configured bool) (ks []int, lanes []*Scenario) {
	ks = []int{k}
	if k < 0 {
		ks = make([]int, n)
		for i := range ks {
			ks[i] = i
		}
	}
	lanes = make([]*Scenario, len(ks))
	for i, k := range ks {
		lanes[i] = FamilyLane(seed, k)
		if configured {
			ConfigureConcurrency(lanes[i])
		}
	}
	return ks, lanes
}

// WriteLanes writes each lane's scenario file into dir as lane-K.json, to
// replay with sim --scenario.
func WriteLanes(dir string, ks []int, lanes []*Scenario) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, sc := range lanes {
		data, err := sc.MarshalJSON()
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("lane-%d.json", ks[i])), append(data, '\n'), 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
