package sim

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/sampling/montecarlo"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// SampledRun is one seed's sampled run beside the full batch.
type SampledRun struct {
	Seed           int64   `json:"seed"`
	Jobs           int     `json:"jobs"`        // the full batch
	Ran            int     `json:"ran"`         // jobs the sampled run started
	ContainerH     float64 `json:"container_h"` // sampled run
	FullContainerH float64 `json:"full_container_h"`
	WallH          float64 `json:"wall_h"` // first claim to last end
	FullWallH      float64 `json:"full_wall_h"`
	TruePassRate   float64 `json:"true_pass_rate"` // share of all the batch's jobs that pass
	Estimate       float64 `json:"estimate"`       // as status shows it at the end
	HalfWidth      float64 `json:"half_width"`
	Covered        bool    `json:"covered"` // |estimate − true| ≤ half-width
}

// sampledJob is one job's draws: its verdict and its container time.
type sampledJob struct {
	pass bool
	dur  time.Duration
}

const sampledBatchName = "sampled"

// runSampled runs one seed: draws every job's verdict and time, then runs
// the batch sampled and in full on the same slots.
func runSampled(sc *scenario.Sampled, seed int64) SampledRun {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5a3b1ed))
	draws := map[string]sampledJob{}
	sampled := domain.BatchSpec{Account: "sim", Project: "sampled", Batch: sampledBatchName, Model: "m", Tier: -1, MaxAttempts: 1}
	passes := 0
	for _, st := range sc.Strata {
		for i := range st.Jobs {
			key := fmt.Sprintf("%s-%06d", st.Name, i)
			d := sampledJob{pass: rng.Float64() < st.PassRate, dur: sc.JobS.Duration(rng)}
			if !d.pass && sc.FailFactor != 1 {
				d.dur = time.Duration(float64(d.dur) * sc.FailFactor)
			}
			draws[domain.JobID("sim", "sampled", sampledBatchName, key)] = d
			if d.pass {
				passes++
			}
			sampled.Jobs = append(sampled.Jobs, domain.JobSpec{Key: key, Stratum: st.Name})
		}
	}
	full := sampled
	full.Jobs = make([]domain.JobSpec, len(sampled.Jobs))
	for i, j := range sampled.Jobs {
		full.Jobs[i] = domain.JobSpec{Key: j.Key}
	}
	params := sc.Sampling
	params.Window = sc.Window
	sampled.Sampling = &params

	out := SampledRun{Seed: seed, Jobs: len(draws), TruePassRate: float64(passes) / float64(len(draws))}
	s, ran, containerS, wallS := runOnSlots(sc, sampled, draws)
	_, _, fullS, fullWallS := runOnSlots(sc, full, draws)
	out.Ran, out.ContainerH, out.WallH = ran, containerS/3600, wallS/3600
	out.FullContainerH, out.FullWallH = fullS/3600, fullWallS/3600
	sb, _ := s.Sampled("sim/sampled/" + sampledBatchName)
	out.Estimate, out.HalfWidth = sb.Estimate.Mean, sb.Estimate.HalfWidth
	out.Covered = math.Abs(out.Estimate-out.TruePassRate) <= out.HalfWidth
	return out
}

// runOnSlots runs one batch to its end: every pass grants the batch its
// free slots and the store claims them; a claimed job starts at once, runs
// its drawn time, reports its verdict and ends. It returns the store, the
// jobs that ran, their container seconds and the wall seconds to the last
// end.
func runOnSlots(sc *scenario.Sampled, b domain.BatchSpec, draws map[string]sampledJob) (*memstore.Store, int, float64, float64) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := memstore.New(scheduler.ModelConfig{})
	s.SetTokenSource(resulttoken.Seeded(0)) // deterministic; the tokens draw on no seed's stream
	if _, err := s.Submit(ctx, b, t0); err != nil {
		panic(fmt.Sprintf("sim-sampled: submit: %v", err)) // the scenario was checked
	}
	q := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
	step := time.Duration(sc.PassIntervalS) * time.Second
	var ends endHeap
	ran, containerS, last := 0, 0.0, t0
	for now := t0; ; now = now.Add(step) {
		// 1. Ends up to now, in time order: the verdict, then the stop.
		for len(ends) > 0 && !ends[0].at.After(now) {
			e := heap.Pop(&ends).(end)
			d := draws[e.job.ID]
			s.RecordResult(ctx, e.job.ID, domain.Result{Attempt: e.job.Attempt, Pass: d.pass, At: e.at, Token: e.job.ResultToken})
			s.TaskStopped(ctx, e.job.ID, e.job.Attempt, domain.Exit{}, e.at)
			last = e.at
		}
		// 2. The pass: the batch's free slots, claimed by the store.
		free := sc.Slots - len(ends)
		if free > 0 {
			plan := scheduler.Plan{At: now, Models: []scheduler.ModelPlan{{Model: b.Model, Grants: []scheduler.Grant{{Queue: q, Count: free}}}}}
			committed, _ := s.Commit(ctx, plan, nil)
			for _, j := range committed.Claimed {
				s.TaskStarted(ctx, j.ID, j.Attempt, now)
				d := draws[j.ID]
				heap.Push(&ends, end{at: now.Add(d.dur), job: j})
				ran++
				containerS += d.dur.Seconds()
			}
		}
		if len(ends) == 0 && s.Counts().Waiting == 0 {
			return s, ran, containerS, last.Sub(t0).Seconds()
		}
	}
}

type end struct {
	at  time.Time
	job scheduler.Job
}

// endHeap orders ends by time, then job id: the same order every run.
type endHeap []end

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	return cmp.Or(h[i].at.Compare(h[j].at), cmp.Compare(h[i].job.ID, h[j].job.ID)) < 0
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(end)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// SampledReport sums the runs of several seeds.
type SampledReport struct {
	Scenario        string       `json:"scenario"`
	Seeds           int          `json:"seeds"`
	FirstSeed       int64        `json:"first_seed"`
	Jobs            int          `json:"jobs"`
	MeanRan         float64      `json:"mean_ran"`
	JobsSaved       float64      `json:"jobs_saved"`            // 1 − Σ ran / Σ jobs
	ContainerHSaved float64      `json:"container_hours_saved"` // 1 − Σ container_h / Σ full_container_h
	WallSaved       float64      `json:"wall_saved"`            // 1 − Σ wall_h / Σ full_wall_h
	MeanContainerH  float64      `json:"mean_container_h"`
	MeanFullContH   float64      `json:"mean_full_container_h"`
	MeanHalfWidth   float64      `json:"mean_half_width"`
	MeanAbsError    float64      `json:"mean_abs_error"`
	Covered         int          `json:"covered"`
	Coverage        float64      `json:"coverage"` // Covered / Seeds
	Confidence      float64      `json:"confidence"`
	CoverageHolds   bool         `json:"coverage_holds"` // Coverage ≥ Confidence
	Runs            []SampledRun `json:"runs"`
}

// RunSampledSeeds runs seeds first, first+1, … and sums them.
func RunSampledSeeds(sc *scenario.Sampled, first int64, seeds int) SampledReport {
	rep := SampledReport{Scenario: sc.Name, Seeds: seeds, FirstSeed: first, Confidence: sc.Sampling.Confidence}
	var ran, jobs, ch, fch, wh, fwh, hw, ae float64
	for i := range seeds {
		r := runSampled(sc, first+int64(i))
		rep.Runs = append(rep.Runs, r)
		rep.Jobs = r.Jobs
		ran += float64(r.Ran)
		jobs += float64(r.Jobs)
		ch += r.ContainerH
		fch += r.FullContainerH
		wh += r.WallH
		fwh += r.FullWallH
		hw += r.HalfWidth
		ae += math.Abs(r.Estimate - r.TruePassRate)
		if r.Covered {
			rep.Covered++
		}
	}
	n := float64(seeds)
	rep.MeanRan, rep.MeanHalfWidth, rep.MeanAbsError = ran/n, hw/n, ae/n
	rep.MeanContainerH, rep.MeanFullContH = ch/n, fch/n
	rep.JobsSaved, rep.ContainerHSaved, rep.WallSaved = 1-ran/jobs, 1-ch/fch, 1-wh/fwh
	rep.Coverage = float64(rep.Covered) / n
	rep.CoverageHolds = rep.Coverage >= rep.Confidence
	return rep
}

// SampledCase is the scenario as a case for the fast replication harness
// (internal/sampling/montecarlo): the same strata, slots, times and
// stop rule, without the store and the passes.
func SampledCase(sc *scenario.Sampled) montecarlo.Case {
	c := montecarlo.Case{
		Name: sc.Name, Params: sc.Sampling, Slots: sc.Slots, Window: sc.Window,
		Duration: sc.JobS.Sample, FailFactor: sc.FailFactor,
	}
	for _, st := range sc.Strata {
		c.Sizes = append(c.Sizes, st.Jobs)
		c.Rates = append(c.Rates, st.PassRate)
	}
	return c
}
