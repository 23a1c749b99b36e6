package sim

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
)

// Result is one policy's run: the output object of scenarios/README.md,
// plus what the table and the report need (not in the JSON).
type Result struct {
	Scenario  string                  `json:"scenario"`
	Policy    Policy                  `json:"policy"`
	Seed      int64                   `json:"seed"`
	DurationS int                     `json:"duration_s"`
	Totals    Totals                  `json:"totals"`
	Models    map[string]*ModelResult `json:"models"`
	Batches   map[string]*BatchResult `json:"batches"`
	Tiers     map[string]TierResult   `json:"tiers"`
	WaitShare WaitShare               `json:"wait_share"`
	// OracleCaps are policy oracle's caps, one per model in scenario order.
	OracleCaps []int `json:"oracle_caps,omitempty"`
	OracleRuns int   `json:"-"` // static runs the sweep took
	// JobWaits is each job's wait share (submit → running, plus its calls'
	// time blocked at the gateway) / (submit → end),
	// in job order; NaN for a job that did not finish. Policies run the same
	// jobs, so CommonWaitShare can compare like with like.
	JobWaits []float32 `json:"-"`

	ModelNames []string `json:"-"` // scenario order
	BatchKeys  []string `json:"-"` // scenario order
	// Violations are broken invariants: store checks that failed after a
	// pass, passes that errored, store and simulator disagreeing. Each must
	// be zero; the first few are kept with their time.
	Violations      []string `json:"-"`
	ViolationCount  int      `json:"-"` // every broken invariant, also those not kept
	CheckViolations int      `json:"-"` // passes after which Store.Check failed
	PassErrors      int      `json:"-"`
	// Faults counts the faults injected by kind (nil without faults);
	// Chaos says how the system met them (dynamic with faults only).
	Faults map[string]int `json:"-"`
	Chaos  *ChaosStats    `json:"-"`
	// Retries are launches refused (over the account quota, no token
	// before the next pass); a store fails a job after its last attempt.
	Retries  map[string]int `json:"-"`
	Warnings []string       `json:"-"` // pass warnings (bad pins), first occurrence each
	// StartFailures counts tasks that failed to start (start_failure_rate).
	StartFailures int     `json:"-"`
	Series        *Series `json:"-"`
	// Work is the jobs' work done by the end (the family's throughput):
	// the jobs that succeeded, plus, for each job still running, the share
	// of its calls made. Failed jobs count for none.
	Work float64 `json:"-"`
	// Learned is each model's learned provider concurrency at the end
	// (policy dynamic; nil when none learned one): what a warm run starts
	// from (Options.Learned).
	Learned map[string]float64 `json:"-"`
	Events  int64              `json:"-"`
	Passes  int                `json:"-"`
	Calls   int64              `json:"-"`
	Wall    time.Duration      `json:"-"`
}

// Totals counts jobs at the end of the run. Running counts jobs holding a
// container (starting or running), so submitted = succeeded + failed +
// cancelled + waiting + running + lost. FaultsInjected counts the faults
// of --faults (doc.go); InvariantViolations every broken invariant, each
// reported with its time (and job) in the notes.
type Totals struct {
	Submitted           int `json:"submitted"`
	Succeeded           int `json:"succeeded"`
	Failed              int `json:"failed"`
	Cancelled           int `json:"cancelled"`
	Waiting             int `json:"waiting"`
	Running             int `json:"running"`
	Lost                int `json:"lost"`
	DoubleLaunched      int `json:"double_launched"`
	Launches            int `json:"launches"`
	Yielded             int `json:"yielded"` // tasks stopped while starting (the yield step), their jobs waiting again
	FaultsInjected      int `json:"faults_injected"`
	InvariantViolations int `json:"invariant_violations"`
}

// ModelResult is one model's metrics (definitions in scenarios/README.md).
type ModelResult struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// ProviderRetries: tasks the provider failed whose job went back to
	// waiting (exit 75 within its attempts).
	ProviderRetries    int         `json:"provider_retries,omitempty"`
	ThroughputPerH     float64     `json:"throughput_per_h"`
	BacklogS           float64     `json:"backlog_s"`
	BacklogUtilization float64     `json:"backlog_utilization"`
	BlockedShare       float64     `json:"blocked_share"`
	MeanDepth          float64     `json:"mean_depth"`
	P90Depth           float64     `json:"p90_depth"`
	FinalLimit         int         `json:"final_limit"`
	Passes             []PassPoint `json:"passes,omitempty"`

	// The sums behind blocked_share, so shares of several models can be
	// pooled (the scenario family's lane blocked share).
	BlockedS float64 `json:"-"`
	RunningS float64 `json:"-"`
}

// PassPoint is one pass of a model: [t, limit, depth_seen, running, waiting];
// depth_seen is null when the pass had no datapoint.
type PassPoint struct {
	T, Limit, Running, Waiting int
	Depth                      float64 // NaN: none
}

// MarshalJSON writes the point as the README's array.
func (p PassPoint) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 48)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(p.T), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(p.Limit), 10)
	b = append(b, ',')
	if math.IsNaN(p.Depth) {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendFloat(b, p.Depth, 'f', -1, 64)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(p.Running), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(p.Waiting), 10)
	return append(b, ']'), nil
}

// UnmarshalJSON reads the array form back (tests, tools).
func (p *PassPoint) UnmarshalJSON(data []byte) error {
	var v [5]*float64
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	get := func(x *float64) float64 {
		if x == nil {
			return math.NaN()
		}
		return *x
	}
	p.T, p.Limit, p.Depth = int(get(v[0])), int(get(v[1])), get(v[2])
	p.Running, p.Waiting = int(get(v[3])), int(get(v[4]))
	return nil
}

// BatchResult is one batch's progress; times are seconds after its at_s,
// null when it never happened within the run.
type BatchResult struct {
	Jobs        int      `json:"jobs"`
	Succeeded   int      `json:"succeeded"`
	Failed      int      `json:"failed"`
	FirstAdmitS *float64 `json:"first_admit_s"`
	FirstStartS *float64 `json:"first_start_s"`
	LastEndS    *float64 `json:"last_end_s"` // the batch's last job ended: null until all have
}

// TierResult counts container starts of jobs admitted in a tier.
type TierResult struct {
	Starts int `json:"starts"`
}

// WaitShare summarises, per finished job, (submit → container running) /
// (submit → end); null without finished jobs.
type WaitShare struct {
	P50 *float64 `json:"p50"`
	P90 *float64 `json:"p90"`
}

// result builds the output of a finished engine.
func (e *engine) result(trace bool) *Result {
	sc := e.sc
	r := &Result{
		Scenario: sc.Name, Policy: e.name, Seed: sc.Seed, DurationS: sc.DurationS,
		Models: map[string]*ModelResult{}, Batches: map[string]*BatchResult{}, Tiers: map[string]TierResult{},
		Series: e.series, Events: e.events, Passes: e.passes,
	}
	hours := float64(sc.DurationS) / 3600

	// Jobs: recount every record, so the totals are measured, not carried.
	running := make([]time.Duration, len(e.models)) // running time of jobs still running
	var waits []float64
	r.JobWaits = make([]float32, len(e.jobs))
	for i := range e.jobs {
		jb := &e.jobs[i]
		b := &e.batches[jb.batch]
		r.JobWaits[i] = float32(math.NaN())
		if !b.arrived {
			continue
		}
		r.Totals.Submitted++
		switch jb.state {
		case jobWaiting:
			r.Totals.Waiting++
		case jobReserved, jobStarting:
			r.Totals.Running++
		case jobRunning:
			r.Totals.Running++
			running[jb.model] += e.end - jb.runAt
			if jb.calls > 0 {
				r.Work += float64(jb.done) / float64(jb.calls)
			}
		case jobSucceeded:
			r.Totals.Succeeded++
			r.Work++
		case jobFailed, jobLaunchFailed:
			r.Totals.Failed++
		default:
			r.Totals.Lost++
		}
		if (jb.state == jobSucceeded || jb.state == jobFailed) && jb.endAt > b.at {
			// Time blocked at the gateway is waiting too: a container
			// that runs while its calls queue is not being served.
			w := (jb.runAt - b.at + jb.blocked).Seconds() / (jb.endAt - b.at).Seconds()
			waits = append(waits, w)
			r.JobWaits[i] = float32(w)
		}
	}
	r.Totals.DoubleLaunched = e.doubles
	r.StartFailures = e.startFailures
	r.Totals.Launches = e.launches
	r.Totals.Yielded = e.yields

	for i := range e.models {
		m := &e.models[i]
		name := m.cfg.Name
		r.ModelNames = append(r.ModelNames, name)
		blocked := m.blocked
		for k := range m.queue.len() { // calls still queued at the end
			blocked += e.end - e.jobs[m.queue.at(k)].sentAt
		}
		mr := &ModelResult{
			Succeeded:       m.succeeded,
			Failed:          m.failed,
			ProviderRetries: m.providerRetries,
			ThroughputPerH:  round(float64(m.succeeded)/hours, 2),
			BacklogS:        round(m.backlog.Seconds(), 3),
			FinalLimit:      m.limit,
		}
		if m.backlog > 0 {
			mr.BacklogUtilization = round(m.utilInt/m.backlog.Seconds(), 4)
		}
		mr.BlockedS, mr.RunningS = blocked.Seconds(), (m.runTime + running[i]).Seconds()
		if rt := m.runTime + running[i]; rt > 0 {
			mr.BlockedShare = round(blocked.Seconds()/rt.Seconds(), 4)
		}
		mr.MeanDepth, mr.P90Depth = depthStats(m.depth)
		if trace {
			mr.Passes = e.series.points(i)
		}
		r.Models[name] = mr
		r.Calls += m.calls
	}

	for i := range e.batches {
		b := &e.batches[i]
		key := b.cfg.Key()
		r.BatchKeys = append(r.BatchKeys, key)
		r.Batches[key] = &BatchResult{
			Jobs: int(b.n), Succeeded: b.succeeded, Failed: b.failed,
			FirstAdmitS: since(b.firstAdmit), FirstStartS: since(b.firstStart), LastEndS: since(b.lastEnd),
		}
	}
	for t, n := range e.tierStart {
		r.Tiers[strconv.Itoa(t)] = TierResult{Starts: n}
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		p50, p90 := round(percentile(waits, 0.5), 4), round(percentile(waits, 0.9), 4)
		r.WaitShare = WaitShare{P50: &p50, P90: &p90}
	}
	return r
}

func since(d time.Duration) *float64 {
	if d < 0 {
		return nil
	}
	v := round(d.Seconds(), 3)
	return &v
}

// depthStats returns the mean and the 90th percentile (nearest rank) of the
// per-second depth samples.
func depthStats(samples []int32) (mean, p90 float64) {
	if len(samples) == 0 {
		return 0, 0
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var sum int64
	for _, v := range samples {
		sum += int64(v)
	}
	k := int(math.Ceil(0.9*float64(len(sorted)))) - 1
	return round(float64(sum)/float64(len(samples)), 3), float64(sorted[max(k, 0)])
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func round(x float64, places int) float64 {
	s := math.Pow(10, float64(places))
	return math.Round(x*s) / s
}

// CommonWaitShare compares the policies' wait shares on like sets: over
// the jobs that finished under every policy (n of them), each policy's p50
// and p90; nil without such jobs. A policy's own wait_share covers the jobs
// it finished, which differ between policies (unbounded finishes the jobs
// that started at once, and only those).
func CommonWaitShare(results []*Result) (n int, p50, p90 []*float64) {
	if len(results) == 0 {
		return 0, nil, nil
	}
	jobs := len(results[0].JobWaits)
	var common []int
	for j := range jobs {
		all := true
		for _, r := range results {
			if len(r.JobWaits) != jobs || math.IsNaN(float64(r.JobWaits[j])) {
				all = false
				break
			}
		}
		if all {
			common = append(common, j)
		}
	}
	p50, p90 = make([]*float64, len(results)), make([]*float64, len(results))
	if len(common) == 0 {
		return 0, p50, p90
	}
	for i, r := range results {
		ws := make([]float64, len(common))
		for k, j := range common {
			ws[k] = float64(r.JobWaits[j])
		}
		slices.Sort(ws)
		a, b := round(percentile(ws, 0.5), 4), round(percentile(ws, 0.9), 4)
		p50[i], p90[i] = &a, &b
	}
	return len(common), p50, p90
}

// Broken reports whether a run broke an invariant: a job lost or launched
// twice, or any other violation.
func Broken(r *Result) bool {
	t := r.Totals
	return t.Lost+t.DoubleLaunched+t.InvariantViolations > 0
}
