package sim

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// SampledScenario is the input of `evalsched sim-sampled`
// (scenarios/README.md, "Sampled batches"): one sampled batch whose strata
// have latent pass rates, run once per seed beside the same batch in full.
type SampledScenario struct {
	Name          string
	Seed          int64
	PassIntervalS int
	Slots         int  // jobs the batch holds at once
	JobS          Dist // container time of one job
	Sampling      sampling.Params
	Strata        []SampledStratum
}

// SampledStratum is one stratum: its jobs and the chance each passes.
type SampledStratum struct {
	Name     string  `json:"name"`
	Jobs     int     `json:"jobs"`
	PassRate float64 `json:"pass_rate"`
}

type rawSampled struct {
	Name          *string           `json:"name"`
	Seed          *int64            `json:"seed"`
	PassIntervalS *int              `json:"pass_interval_s"`
	Slots         *int              `json:"slots"`
	JobS          json.RawMessage   `json:"job_s"`
	Sampling      json.RawMessage   `json:"sampling"`
	Strata        []json.RawMessage `json:"strata"`
}

type rawStratum struct {
	Name     *string  `json:"name"`
	Jobs     *int     `json:"jobs"`
	PassRate *float64 `json:"pass_rate"`
}

type rawParams struct {
	MOE           *float64 `json:"moe"`
	Confidence    *float64 `json:"confidence"`
	MinPerStratum *int     `json:"min_per_stratum"`
}

// maxSampledJobs bounds a sampled scenario's batch (memory and time of
// 200 seeds).
const maxSampledJobs = 200_000

// LoadSampledScenario reads and checks a sampled scenario; errors name the
// field and the rule, one per line.
func LoadSampledScenario(path string) (*SampledScenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return ParseSampledScenario(data)
}

// ParseSampledScenario parses and checks a sampled scenario.
func ParseSampledScenario(data []byte) (*SampledScenario, error) {
	p := &parser{}
	var r rawSampled
	if !p.decode("", data, &r) {
		return nil, p.err()
	}
	sc := &SampledScenario{}
	sc.Name = p.name("name", r.Name)
	switch {
	case r.Seed == nil:
		p.fail("seed", "required")
	case *r.Seed < 0:
		p.fail("seed", "must not be negative, got %d", *r.Seed)
	default:
		sc.Seed = *r.Seed
	}
	sc.PassIntervalS = p.intIn("pass_interval_s", r.PassIntervalS, DefaultPassIntervalS, 1, 3600)
	sc.Slots = p.intIn("slots", r.Slots, 0, 1, maxSampledJobs)
	sc.JobS = p.dist("job_s", r.JobS, true)
	if isNull(r.Sampling) {
		p.fail("sampling", "required")
	} else {
		var rp rawParams
		if p.decode("sampling", r.Sampling, &rp) {
			sc.Sampling.MOE = p.floatIn("sampling.moe", rp.MOE, 0, sampling.MinMOE, true, sampling.MaxMOE)
			sc.Sampling.Confidence = p.floatIn("sampling.confidence", rp.Confidence, 0, sampling.MinConfidence, true, sampling.MaxConfidence)
			sc.Sampling.MinPerStratum = p.intIn("sampling.min_per_stratum", rp.MinPerStratum, sampling.DefaultMinPerStratum, 1, sampling.MaxMinPerStratum)
			if rp.MOE == nil {
				p.fail("sampling.moe", "required")
			}
			if rp.Confidence == nil {
				p.fail("sampling.confidence", "required")
			}
		}
	}
	if len(r.Strata) == 0 {
		p.fail("strata", "required: at least one stratum")
	}
	names, total := map[string]int{}, 0
	for i, raw := range r.Strata {
		path := fmt.Sprintf("strata[%d]", i)
		var rs rawStratum
		if !p.decode(path, raw, &rs) {
			continue
		}
		st := SampledStratum{Name: p.name(path+".name", rs.Name)}
		if j, dup := names[st.Name]; dup {
			p.fail(path+".name", "%q is already the name of strata[%d]", st.Name, j)
		}
		names[st.Name] = i
		st.Jobs = p.intIn(path+".jobs", rs.Jobs, 0, 1, maxSampledJobs)
		if rs.PassRate == nil {
			p.fail(path+".pass_rate", "required")
		} else {
			st.PassRate = p.floatIn(path+".pass_rate", rs.PassRate, 0, 0, true, 1)
		}
		total += st.Jobs
		sc.Strata = append(sc.Strata, st)
	}
	if total > maxSampledJobs {
		p.fail("strata", "%d jobs in all is more than the simulator's %d", total, maxSampledJobs)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return sc, nil
}

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

// RunSampled runs one seed: draws every job's verdict and time, then runs
// the batch sampled and in full on the same slots.
func RunSampled(sc *SampledScenario, seed int64) SampledRun {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5a3b1ed))
	draws := map[string]sampledJob{}
	sampled := domain.BatchSpec{Account: "sim", Project: "sampled", Batch: sampledBatchName, Model: "m", Tier: -1, MaxAttempts: 1}
	passes := 0
	for _, st := range sc.Strata {
		for i := range st.Jobs {
			key := fmt.Sprintf("%s-%06d", st.Name, i)
			d := sampledJob{pass: rng.Float64() < st.PassRate, dur: sc.JobS.Duration(rng)}
			draws[scheduler.JobID("sim", "sampled", sampledBatchName, key)] = d
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
	sampled.Sampling = &sc.Sampling

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
func runOnSlots(sc *SampledScenario, b domain.BatchSpec, draws map[string]sampledJob) (*memstore.Store, int, float64, float64) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := memstore.New(scheduler.ModelConfig{})
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
			s.RecordResult(ctx, e.job.ID, memstore.Result{Attempt: e.job.Attempt, Pass: d.pass, At: e.at})
			s.TaskStopped(ctx, e.job.ID, e.job.Attempt, domain.Exit{}, e.at)
			last = e.at
		}
		// 2. The pass: the batch's free slots, claimed by the store.
		free := sc.Slots - len(ends)
		if free > 0 {
			plan := scheduler.Plan{At: now, Models: []scheduler.ModelPlan{{Model: b.Model, Grants: []scheduler.Grant{{Queue: q, Count: free}}}}}
			claimed, _ := s.Commit(ctx, plan)
			for _, j := range claimed {
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
func RunSampledSeeds(sc *SampledScenario, first int64, seeds int) SampledReport {
	rep := SampledReport{Scenario: sc.Name, Seeds: seeds, FirstSeed: first, Confidence: sc.Sampling.Confidence}
	var ran, jobs, ch, fch, wh, fwh, hw, ae float64
	for i := range seeds {
		r := RunSampled(sc, first+int64(i))
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
