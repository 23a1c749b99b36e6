package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/sim/stream"
)

// Epoch is simulated time zero as the pass sees it on its clock.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// jobState is a job's place in the simulation. The simulator keeps its own
// record of every job, apart from any store, so that lost and double-launched
// jobs are measured rather than assumed.
type jobState uint8

const (
	jobUnsubmitted jobState = iota // its batch has not arrived yet
	jobWaiting                     // waiting for a pass to admit it
	jobReserved                    // admitted; RunTask goes out at its token's time
	jobStarting                    // RunTask issued; the container is starting
	jobRunning                     // the container runs: calls and thinks
	jobSucceeded
	jobFailed       // exited with a provider error
	jobLaunchFailed // the store gave up launching it (attempts spent); it never ran
)

// job is one job's record, preallocated for every job of the scenario.
type job struct {
	rng        rand.PCG      // the job's own stream: each call's service time, error coin, think time
	startDelay time.Duration // container start latency, drawn at creation
	admitAt    time.Duration // RunTask issued
	runAt      time.Duration // container running
	endAt      time.Duration
	sentAt     time.Duration // current call queued at the gateway
	blocked    time.Duration // the running attempt's calls' time queued at the gateway
	callDur    time.Duration // current call's service time
	thinkDur   time.Duration // think time after the current call
	batch      int32
	calls      int32 // calls to make
	done       int32 // calls made
	attempt    int32 // attempt of the newest task; 0: never launched
	yields     int32 // tasks the yield step stopped: each raises the job's max attempts by one, as the store does
	model      int16
	tier       int8
	state      jobState
}

// modelSim is one model's gateway queue, provider and counters.
type modelSim struct {
	cfg       *scenario.Model
	conc      int // provider concurrency now
	errRate   float64
	errCall   time.Duration
	queue     ring // calls queued at the gateway, FIFO
	inService int
	waiting   int // jobs waiting (not yet RunTask'd)
	holding   int // jobs holding a slot: reserved, starting or running
	peak      int // most jobs that ever held a slot at once
	running   int // containers running

	// Integrals, advanced lazily by touch whenever an input changes.
	lastT   time.Duration
	backlog time.Duration // time with waiting > 0
	utilInt float64       // ∫ min(1, inService/conc) dt over backlog, seconds

	blocked   time.Duration // calls' time queued at the gateway
	runTime   time.Duration // containers' time running (ended jobs)
	succeeded int
	failed    int
	// providerRetries counts tasks the provider failed that sent their job
	// back to waiting.
	providerRetries int
	depth           []int32 // gateway depth sampled at every whole second
	inSvc           []int32 // calls in service at the provider, sampled with depth (inservice.go)
	sent, errs      []int32 // calls sent to the gateway, and those answered with an error or 429, per second
	retry           []int32 // baselines: jobs whose task failed to start, or the provider failed, to launch again first
	limit           int     // limit the last pass used
	lanes           []int32 // batches of this model by arrival: static's lane
	laneHead        int     // lanes[:laneHead] are drained
	calls           int64   // calls served
	callErrors      int64

	// A provider fault (internal/sim/faults) overlays the scenario's provider: while
	// faultErr > 0 calls fail at that rate; while slow > 0 they take that
	// many times their drawn service time.
	faultErr     float64
	faultErrCall time.Duration
	slow         float64
}

// batchSim is one batch's progress.
type batchSim struct {
	cfg        *scenario.Batch
	first, n   int32 // jobs[first : first+n]
	model      int16
	arrived    bool
	next       int32 // baselines: jobs[first+next] is the oldest never admitted
	succeeded  int
	failed     int
	ended      int
	firstAdmit time.Duration // -1: never
	firstStart time.Duration
	lastEnd    time.Duration
	at         time.Duration
	project    int // index in engine.projects
}

// policy decides which waiting jobs launch at each pass.
type policy interface {
	// pass runs at e.now; it calls e.reserve for each job it launches and
	// sets e.seen[m] (limit and depth the pass used) for the trace.
	pass(e *engine)
	submitted(b int)        // a batch arrived
	pinned(p scenario.Pin)  // a pin landed
	started(j int32)        // a container runs
	stopped(j int32)        // a task ended (state says how)
	failedToStart(j int32)  // a task stopped before its container ran; the job waits again
	providerFailed(j int32) // the provider failed a running task with attempts left; the job waits again
	finish(r *Result)       // fill in what only the policy knows
}

// seenModel is what a pass saw and decided for one model.
type seenModel struct {
	limit    int
	depth    float64
	hasDepth bool
	held     bool // the breaker held admission back
}

// engine is one simulation run of one policy.
type engine struct {
	sc       *scenario.Scenario
	name     Policy
	end      time.Duration
	interval time.Duration
	delay    time.Duration
	now      time.Duration
	q        eventQueue
	seq      uint64
	jobs     []job
	batches  []batchSim
	models   []modelSim
	changes  []struct{ model, change int }
	bucket   bucket
	pol      policy
	src      jobSource
	rnd      *rand.Rand

	holding       int // tasks holding a slot, all models
	peak          int // most tasks that ever held a slot at once
	launches      int
	startFailures int // tasks that failed to start (start_failure_rate)
	yields        int // starting tasks the yield step stopped
	doubles       int
	lost          int
	nextSample    int // whole second of the next depth sample
	events        int64
	passes        int

	pins      []priority.Pin // landed so far, for the baselines' tiers
	pinTable  priority.Table
	tierStart []int // container starts per tier
	projects  []string
	seen      []seenModel
	series    *Series

	progress func(simS float64, events int64)

	// With faults: the plan, and the policy's handler of the fault events.
	faults *faults.Plan
	ext    interface {
		event(kind eventKind, arg int32)
	}
}

// jobSource lets one rand.Rand draw from whichever job's PCG is current, so
// switching streams costs a pointer store, not an allocation.
type jobSource struct{ p *rand.PCG }

func (s *jobSource) Uint64() uint64 { return s.p.Uint64() }

// newEngine builds the jobs and the event queue of a run. Every random draw
// that shapes a job is made here or from the job's own stream, so it depends
// on the seed and the job only, never on the policy.
func newEngine(sc *scenario.Scenario, name Policy) *engine {
	e := &engine{
		sc:       sc,
		name:     name,
		end:      time.Duration(sc.DurationS) * time.Second,
		interval: time.Duration(sc.PassIntervalS) * time.Second,
		delay:    seconds(sc.MetricDelayS),
		bucket:   newBucket(sc.LaunchRatePerS, sc.LaunchBurst),
	}
	e.rnd = rand.New(&e.src)
	e.models = make([]modelSim, len(sc.Models))
	index := map[string]int{}
	for i := range sc.Models {
		m := &e.models[i]
		m.cfg = &sc.Models[i]
		m.conc = m.cfg.ProviderConcurrency
		m.depth = make([]int32, sc.DurationS)
		m.inSvc = make([]int32, sc.DurationS)
		m.sent, m.errs = make([]int32, sc.DurationS), make([]int32, sc.DurationS)
		index[m.cfg.Name] = i
	}
	total := 0
	for _, b := range sc.Batches {
		total += b.Jobs
	}
	e.jobs = make([]job, total)
	e.batches = make([]batchSim, len(sc.Batches))
	projIndex := map[string]int{}
	var first int32
	for bi := range sc.Batches {
		cfg := &sc.Batches[bi]
		b := &e.batches[bi]
		*b = batchSim{cfg: cfg, first: first, n: int32(cfg.Jobs), model: int16(index[cfg.Model]),
			firstAdmit: -1, firstStart: -1, lastEnd: -1, at: seconds(cfg.AtS)}
		proj := cfg.Account + "/" + cfg.Project
		if _, ok := projIndex[proj]; !ok {
			projIndex[proj] = len(e.projects)
			e.projects = append(e.projects, proj)
		}
		b.project = projIndex[proj]
		calls := rand.New(stream.New(sc.Seed, stream.Calls, uint64(bi)))
		start := rand.New(stream.New(sc.Seed, stream.Start, uint64(bi)))
		for k := range int32(cfg.Jobs) {
			j := &e.jobs[first+k]
			j.batch, j.model = int32(bi), b.model
			j.calls = int32(min(cfg.Calls.Count(calls), math.MaxInt32))
			j.startDelay = sc.ContainerStartS.Duration(start)
			stream.Seed(&j.rng, sc.Seed, stream.Job, uint64(first+k))
		}
		first += int32(cfg.Jobs)
	}
	// Static's lanes: a model's batches by arrival, then file order.
	for _, bi := range e.arrivalOrder() {
		m := &e.models[e.batches[bi].model]
		m.lanes = append(m.lanes, bi)
	}
	e.pinTable, _ = priority.Compile(nil, sc.Tiers, Epoch)
	e.tierStart = make([]int, sc.Tiers)
	e.seen = make([]seenModel, len(e.models))
	e.series = newSeries(e)

	// Exogenous events first, so at equal times a batch, a change or a pin
	// lands before the pass that should see it.
	e.q = make(eventQueue, 0, 1024)
	for i := range e.batches {
		e.schedule(e.batches[i].at, evBatch, int32(i))
	}
	for mi := range sc.Models {
		for ci, c := range sc.Models[mi].Changes {
			e.changes = append(e.changes, struct{ model, change int }{mi, ci})
			e.schedule(seconds(c.AtS), evChange, int32(len(e.changes)-1))
		}
	}
	for i, p := range sc.Pins {
		e.schedule(seconds(p.AtS), evPin, int32(i))
	}
	return e
}

// schedulePasses schedules a pass every pass interval. Without faults the
// passes are the simulator's own; with faults, scheduler invocations under
// the lease run them (invocation.go).
func (e *engine) schedulePasses() {
	for t := time.Duration(0); t < e.end; t += e.interval {
		e.schedule(t, evPass, 0)
	}
}

func (e *engine) schedule(at time.Duration, kind eventKind, arg int32) {
	e.seq++
	e.q.push(event{at: at, seq: e.seq, kind: kind, arg: arg})
}

// run processes every event before the end of the scenario.
func (e *engine) run() {
	for len(e.q) > 0 && e.q[0].at < e.end {
		ev := e.q.pop()
		e.sampleBefore(ev.at)
		e.now = ev.at
		e.events++
		if e.progress != nil && e.events&(1<<15-1) == 0 {
			e.progress(e.now.Seconds(), e.events)
		}
		switch ev.kind {
		case evBatch:
			e.arrive(int(ev.arg))
		case evChange:
			e.change(e.changes[ev.arg].model, e.changes[ev.arg].change)
		case evPin:
			e.pin(int(ev.arg))
		case evPass:
			e.pass()
		case evRunTask:
			e.runTask(ev.arg)
		case evUp:
			e.up(ev.arg)
		case evCallEnd:
			e.callEnd(ev.arg)
		case evCallFail:
			e.exit(ev.arg, false)
		case evThinkEnd:
			e.send(ev.arg)
		case evProvider:
			e.providerFault(ev.arg)
		default:
			e.ext.event(ev.kind, ev.arg)
		}
	}
	e.sampleBefore(e.end + 1)
	e.now = e.end
	for i := range e.models {
		e.touch(&e.models[i])
	}
	if e.progress != nil {
		e.progress(e.end.Seconds(), e.events)
	}
}

// sampleBefore takes the depth samples of every whole second before t: the
// sample of second s is the state after all events at or before s.
func (e *engine) sampleBefore(t time.Duration) {
	for e.nextSample < e.sc.DurationS && time.Duration(e.nextSample)*time.Second < t {
		for i := range e.models {
			e.models[i].depth[e.nextSample] = int32(e.models[i].queue.len())
			e.models[i].inSvc[e.nextSample] = int32(e.models[i].inService)
		}
		e.nextSample++
	}
}

// depthSeen is the datapoint a pass at e.now reads, as CloudWatch serves
// it: the Average of the per-second samples over the newest whole period
// (depth_period_s) that ended at least metric_delay_s ago, stamped with the
// period's end (as production's reader stamps it); missing with
// probability metric_missing, and scaled by 1 + metric_noise·N(0,1) (never
// below 0). The draws depend on
// the seed, the model and the period only, so every policy and every pass
// reading a period reads the same datapoint.
func (e *engine) depthSeen(m int) (float64, time.Duration, bool) {
	return e.depthAt(m, e.now-e.delay)
}

// depthAt is the datapoint of the newest whole period ending at or before
// t (its last second ≤ t), with its time: the period's end, as
// production's reader stamps a datapoint (CloudWatch's timestamp, the
// period's start, plus the period; package gatewaydepth).
func (e *engine) depthAt(m int, t time.Duration) (float64, time.Duration, bool) {
	k, p, ok := e.period(t)
	if !ok {
		return 0, 0, false
	}
	sum := 0
	for s := k * p; s < (k+1)*p; s++ {
		sum += e.sampleAt(m, s)
	}
	v := float64(sum) / float64(p)
	missing, noise := e.metricDraw(m, k)
	if missing {
		return 0, 0, false
	}
	if e.sc.MetricNoise > 0 {
		v = max(0, v*(1+e.sc.MetricNoise*noise))
	}
	return v, time.Duration((k+1)*p) * time.Second, true
}

// period is the newest whole depth period ending at or before t: period k
// covers seconds [k·p, k·p+p-1].
func (e *engine) period(t time.Duration) (k, p int, ok bool) {
	if t < 0 {
		return 0, 0, false
	}
	p = cmp.Or(e.sc.DepthPeriodS, scenario.DefaultDepthPeriodS) // a Scenario built in code may leave it 0
	k = (int(t/time.Second)+1)/p - 1
	return k, p, k >= 0
}

// metricDraw is period k's missing coin and noise for model m: the same
// for the depth and the error rate (one GetMetricData call reads both).
func (e *engine) metricDraw(m, k int) (missing bool, noise float64) {
	if e.sc.MetricMissing == 0 && e.sc.MetricNoise == 0 {
		return false, 0
	}
	r := rand.New(stream.New(e.sc.Seed, stream.Metric, uint64(m)<<32|uint64(k)))
	return r.Float64() < e.sc.MetricMissing, r.NormFloat64()
}

// GatewayRate is one model's gateway answers over one period: calls sent
// and calls answered with an error or a 429. It is the per-model error
// rate the pass can read from CloudWatch in the same GetMetricData call as
// the depth, with the same period, delay and missing datapoints (no noise:
// a count of errors is exact).
type GatewayRate struct {
	Calls, Errors int
	At            time.Time // the period's end, as production stamps it
}

// Rate is the share of calls answered with an error (0 without calls).
func (g GatewayRate) Rate() float64 {
	if g.Calls == 0 {
		return 0
	}
	return float64(g.Errors) / float64(g.Calls)
}

// gatewayRateSeen is the error-rate datapoint a pass at e.now reads.
func (e *engine) gatewayRateSeen(m int) (GatewayRate, bool) {
	k, p, ok := e.period(e.now - e.delay)
	if !ok {
		return GatewayRate{}, false
	}
	if missing, _ := e.metricDraw(m, k); missing {
		return GatewayRate{}, false
	}
	g := GatewayRate{At: Epoch.Add(time.Duration((k+1)*p) * time.Second)} // the period's end, as depthAt
	md := &e.models[m]
	for s := k * p; s < min((k+1)*p, len(md.sent)); s++ {
		g.Calls += int(md.sent[s])
		g.Errors += int(md.errs[s])
	}
	return g, true
}

// sampleAt is model m's depth sample of second s: taken, or (a delay under
// a period) the depth now.
func (e *engine) sampleAt(m, s int) int {
	if s < e.nextSample {
		return int(e.models[m].depth[s])
	}
	return e.models[m].queue.len()
}

// touch advances a model's integrals to now; call it before any change to
// waiting, inService or conc.
func (e *engine) touch(m *modelSim) {
	if m.waiting > 0 {
		dt := e.now - m.lastT
		m.backlog += dt
		if m.conc > 0 {
			m.utilInt += dt.Seconds() * min(1, float64(m.inService)/float64(m.conc))
		}
	}
	m.lastT = e.now
}

func (e *engine) arrive(bi int) {
	b := &e.batches[bi]
	m := &e.models[b.model]
	e.touch(m)
	for k := b.first; k < b.first+b.n; k++ {
		e.jobs[k].state = jobWaiting
	}
	m.waiting += int(b.n)
	b.arrived = true
	e.pol.submitted(bi)
}

func (e *engine) change(mi, ci int) {
	m := &e.models[mi]
	c := m.cfg.Changes[ci]
	e.touch(m)
	if c.ProviderConcurrency != nil {
		m.conc = *c.ProviderConcurrency
	}
	if c.ErrorRate != nil {
		m.errRate = *c.ErrorRate
	}
	if c.ErrorCallS != nil {
		m.errCall = seconds(*c.ErrorCallS)
	}
	e.serve(m)
}

// providerFault begins or ends a provider episode (internal/sim/faults): the model's
// provider fails fast or slows down for a while, over the scenario's own
// changes.
func (e *engine) providerFault(arg int32) {
	ep := &e.faults.Episodes(faults.SrcProvider)[arg/2]
	m := &e.models[ep.Model]
	e.touch(m)
	m.faultErr, m.faultErrCall, m.slow = 0, 0, 0
	if arg%2 == 1 {
		return // the episode ends
	}
	e.faults.Count(faults.Provider)
	switch ep.Mode {
	case faults.ProviderFailing:
		m.faultErr, m.faultErrCall = 0.8, 500*time.Millisecond
	case faults.ProviderSlow:
		m.slow = 3
	}
}

func (e *engine) pin(i int) {
	p := e.sc.Pins[i]
	e.pins = append(e.pins, priority.Pin{Scope: p.Scope, Tier: strconv.Itoa(p.Tier)})
	e.pinTable, _ = priority.Compile(e.pins, e.sc.Tiers, Epoch.Add(e.now))
	e.pol.pinned(p)
}

// tierOf resolves a batch's tier as the pass does: batch, project, account
// pin, submitted tier, default. The baselines ignore tiers for ordering but
// report starts by tier like dynamic.
func (e *engine) tierOf(bi int) int {
	cfg := e.batches[bi].cfg
	t, _ := e.pinTable.Tier(cfg.Account, cfg.Project, cfg.Batch, cfg.Tier, e.sc.DefaultTier)
	return t
}

// pass runs one pass of the policy. Each pass has its own seen slice and
// trace row, so passes that overlap (with faults, a pass may stall while
// another runs) each record their own; the epilogue also runs when a
// crash unwinds the pass.
func (e *engine) pass() {
	seen := make([]seenModel, len(e.models))
	for i := range seen {
		seen[i] = seenModel{limit: e.models[i].limit}
	}
	e.seen = seen
	row := e.series.beforePass(e)
	defer func() {
		for i := range seen {
			e.models[i].limit = seen[i].limit
		}
		e.series.afterPass(row, seen)
		e.passes++
	}()
	e.pol.pass(e)
}

// reserve launches job j: a launch token at time g ≥ now has been taken, so
// RunTask goes out at g. It reports false when the job cannot take a task
// (not waiting, or this attempt already had one): a double launch.
func (e *engine) reserve(j int32, attempt, tier int, g time.Duration) bool {
	jb := &e.jobs[j]
	if jb.state != jobWaiting || int32(attempt) <= jb.attempt {
		e.doubles++
		return false
	}
	jb.state = jobReserved
	jb.attempt = int32(attempt)
	jb.admitAt = g // RunTask time; runTask sets the same
	jb.tier = int8(min(max(tier, 0), e.sc.Tiers-1))
	m := &e.models[jb.model]
	m.holding++
	m.peak = max(m.peak, m.holding)
	e.holding++
	e.peak = max(e.peak, e.holding)
	e.schedule(g, evRunTask, j)
	return true
}

func (e *engine) runTask(j int32) {
	jb := &e.jobs[j]
	if jb.state != jobReserved {
		return // no longer reserved
	}
	m := &e.models[jb.model]
	e.touch(m)
	m.waiting--
	jb.state = jobStarting
	jb.admitAt = e.now
	e.launches++
	b := &e.batches[jb.batch]
	if b.firstAdmit < 0 {
		b.firstAdmit = e.now - b.at
	}
	e.schedule(e.now+jb.startDelay, evUp, j)
}

func (e *engine) up(j int32) {
	jb := &e.jobs[j]
	if jb.state != jobStarting || e.now != jb.admitAt+jb.startDelay {
		return // its task was stopped while starting (yield): this launch never runs
	}
	m := &e.models[jb.model]
	if e.sc.StartFailureRate > 0 && e.startFails(j) {
		e.startFailed(j)
		return
	}
	jb.state = jobRunning
	jb.runAt, jb.blocked = e.now, 0
	m.running++
	e.tierStart[jb.tier]++
	b := &e.batches[jb.batch]
	if b.firstStart < 0 {
		b.firstStart = e.now - b.at
	}
	e.series.started(e, jb)
	e.pol.started(j)
	e.send(j)
}

// maxAttempts is how often the baselines launch a job whose task fails to
// start, as the store does (the batches' MaxAttempts).
const maxAttempts = 3

// maxAttemptsOf is job j's max attempts as the store keeps them: the
// batches' maxAttempts, one more for each yield, at most the highest
// attempt number.
func (e *engine) maxAttemptsOf(j int32) int32 {
	return min(maxAttempts+e.jobs[j].yields, domain.MaxAttemptNumber)
}

// startFails draws whether this attempt's task fails to start
// (TaskFailedToStart): from the job's and attempt's own stream, so the
// same attempts fail under every policy.
func (e *engine) startFails(j int32) bool {
	r := rand.New(stream.New(e.sc.Seed, stream.Infra, uint64(j)<<8|uint64(e.jobs[j].attempt&0xff)))
	return r.Float64() < e.sc.StartFailureRate
}

// yield stops job j's task while it starts (the yield step's StopTask; ECS
// stops a task still provisioning at once): the job waits again and holds
// no slot. A job whose RunTask the launch bucket still holds back (the
// store has its task) never starts. It reports false for a job not
// starting, whose task runs on.
func (e *engine) yield(j int32) bool {
	if s := e.jobs[j].state; s != jobStarting && s != jobReserved {
		return false
	}
	e.unhold(j)
	e.yields++
	e.jobs[j].yields++
	return true
}

// unhold returns a job that holds a slot but does not run (reserved or
// starting) to waiting, its slot freed: a yield, a task that failed to
// start.
func (e *engine) unhold(j int32) {
	jb := &e.jobs[j]
	m := &e.models[jb.model]
	e.touch(m)
	if jb.state == jobStarting {
		m.waiting++ // runTask counted it out of waiting
	}
	jb.state = jobWaiting
	m.holding--
	e.holding--
}

// startFailed returns a job whose task stopped before its container ran
// to waiting: it holds no slot, and the policy launches it again (or, past
// its attempts, fails it).
func (e *engine) startFailed(j int32) {
	e.unhold(j)
	e.startFailures++
	e.pol.failedToStart(j)
}

// retryOrFail is the baselines' answer to a failed start: the job goes to
// the front of its model's lane, or fails past maxAttempts.
func (e *engine) retryOrFail(j int32) {
	if e.jobs[j].attempt >= maxAttempts {
		e.launchFailed(j)
		return
	}
	m := &e.models[e.jobs[j].model]
	m.retry = append(m.retry, j)
}

// send puts the job's next call to its model's gateway. The job's stream
// gives exactly three draws per call (service time, error coin, think time)
// whatever happens to the call, so the k-th call of a job is the same under
// every policy.
func (e *engine) send(j int32) {
	jb := &e.jobs[j]
	m := &e.models[jb.model]
	e.src.p = &jb.rng
	jb.callDur = m.cfg.CallS.Duration(e.rnd)
	coin := e.rnd.Float64()
	jb.thinkDur = e.batches[jb.batch].cfg.ThinkS.Duration(e.rnd)
	rate, errCall := m.errRate, m.errCall
	if m.faultErr > rate {
		rate, errCall = m.faultErr, m.faultErrCall
	}
	if m.slow > 0 {
		jb.callDur = time.Duration(float64(jb.callDur) * m.slow)
	}
	sec := int(e.now / time.Second)
	if sec < len(m.sent) {
		m.sent[sec]++
	}
	rejected := m.cfg.RejectOver > 0 && float64(m.queue.len()) >= m.cfg.RejectOver*float64(m.conc)
	if rejected {
		rate, coin, errCall = 1, 0, rejectCallS
	}
	if rate > 0 && coin < rate {
		// A failing provider answers fast with 429/5xx: the call takes no
		// provider slot and does not queue, so the gateway looks idle.
		m.callErrors++
		if sec < len(m.errs) {
			m.errs[sec]++
		}
		e.schedule(e.now+errCall, evCallFail, j)
		return
	}
	if m.queue.len() == 0 && m.inService < m.conc {
		e.touch(m)
		m.inService++
		e.schedule(e.now+e.underLoad(m, jb.callDur), evCallEnd, j)
		return
	}
	jb.sentAt = e.now
	m.queue.push(j)
}

func (e *engine) callEnd(j int32) {
	jb := &e.jobs[j]
	m := &e.models[jb.model]
	e.touch(m)
	m.inService--
	m.calls++
	jb.done++
	if jb.done >= jb.calls {
		e.exit(j, true)
	} else {
		e.schedule(e.now+jb.thinkDur, evThinkEnd, j)
	}
	e.serve(m)
}

// rejectCallS is how long a call over reject_over takes to come back 429.
const rejectCallS = 500 * time.Millisecond

// underLoad stretches a call entering service when its provider slows
// under load: × (1 + slow_under_load · min(1, queued / concurrency)).
func (e *engine) underLoad(m *modelSim, d time.Duration) time.Duration {
	if m.cfg.SlowUnderLoad == 0 || m.conc == 0 {
		return d
	}
	load := min(1, float64(m.queue.len())/float64(m.conc))
	return time.Duration(float64(d) * (1 + m.cfg.SlowUnderLoad*load))
}

// serve starts queued calls while the provider has room.
func (e *engine) serve(m *modelSim) {
	if m.queue.len() == 0 || m.inService >= m.conc {
		return
	}
	e.touch(m)
	for m.queue.len() > 0 && m.inService < m.conc {
		k := m.queue.pop()
		kb := &e.jobs[k]
		m.blocked += e.now - kb.sentAt
		kb.blocked += e.now - kb.sentAt
		m.inService++
		e.schedule(e.now+e.underLoad(m, kb.callDur), evCallEnd, k)
	}
}

// exit ends a running job's task: succeeded after its last call, or
// failed on a provider error. As the store does (job.stop), a provider
// failure with attempts left sends the job back to waiting, its calls to
// make anew; the last attempt's fails it.
func (e *engine) exit(j int32, ok bool) {
	jb := &e.jobs[j]
	m := &e.models[jb.model]
	b := &e.batches[jb.batch]
	m.running--
	m.holding--
	e.holding--
	m.runTime += e.now - jb.runAt
	if !ok && jb.attempt < e.maxAttemptsOf(j) {
		e.touch(m)
		jb.state, jb.done = jobWaiting, 0
		m.waiting++
		m.providerRetries++
		e.pol.providerFailed(j)
		return
	}
	jb.endAt = e.now
	if ok {
		jb.state = jobSucceeded
		m.succeeded++
		b.succeeded++
	} else {
		jb.state = jobFailed
		m.failed++
		b.failed++
	}
	e.batchEnded(b)
	e.pol.stopped(j)
}

func (e *engine) batchEnded(b *batchSim) {
	b.ended++
	if b.ended == int(b.n) {
		b.lastEnd = e.now - b.at
	}
}

// launchFailed ends a waiting job the store failed at launch: its attempts
// were spent on launches that never got a task.
func (e *engine) launchFailed(j int32) {
	jb := &e.jobs[j]
	if jb.state != jobWaiting {
		return
	}
	m := &e.models[jb.model]
	b := &e.batches[jb.batch]
	e.touch(m)
	m.waiting--
	jb.state = jobLaunchFailed
	jb.endAt = e.now
	m.failed++
	b.failed++
	e.batchEnded(b)
}
