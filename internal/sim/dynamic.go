package sim

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/config"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// dynamicPolicy is evalsched itself: the real scheduler.Pass over the
// in-memory store, with the simulator as its depth reader, launcher and
// clock. The simulator keeps its own record of every job beside the store's,
// so a job the store loses or launches twice shows up in the totals; and it
// reads back every job the store changes, so a broken invariant shows up at
// the step that broke it (invariants.go).
type dynamicPolicy struct {
	e     *engine
	store *memstore.Store
	main  *handle // the scheduler of the simulator's own passes (no faults)
	next  *handle // the scheduler the next pass runs, when not main
	cfg   scheduler.Config
	ctx   context.Context
	ids   []string         // job → store id, set when its batch arrives
	byID  map[string]int32 // store id → job
	index map[string]int   // model name → index
	// versions counts, per model, the commits that wrote its state: the
	// DynamoDB store's optimistic lock ("ver"), which the in-memory store
	// lacks. A commit from a snapshot older than the last commit is refused.
	versions map[string]uint64

	retries     map[string]int // refused launches by reason
	checkFails  int
	passErrs    int
	violations  []string
	nViolations int
	warned      map[string]bool
	warnings    []string
	log         io.Writer

	sh shadow // the store as the simulator last read it
	fx *chaos // the faults' machinery; nil without faults

	unlocked   bool // tests: commits skip the version check, as the in-memory store alone would
	loseYields bool // tests, with faults: every yielded task's STOPPED event is lost
}

// maxViolations keeps the first broken invariants with their times.
const maxViolations = 10

// schedulerConfig is the pass's configuration for a scenario.
func schedulerConfig(sc *scenario.Scenario, opt Options) scheduler.Config {
	lc := limits.DefaultConfig()
	if opt.Limits != nil {
		lc = *opt.Limits
	}
	// The scenario's account, mapped as the scheduler Lambda maps its
	// settings: one shard.
	cfg := config.Config{
		Tiers: sc.Tiers, TierWeight: sc.TierWeight, DefaultTier: sc.DefaultTier, GlobalMaxRunning: sc.GlobalMaxRunning,
		LaunchRate: sc.LaunchRatePerS, LaunchBurst: sc.LaunchBurst, PassInterval: time.Duration(sc.PassIntervalS) * time.Second, Shards: 1,
	}.Pass(0)
	cfg.Limits = lc
	cfg.Breaker = breakerConfig()
	return cfg
}

// breakerConfig is the breaker as a deployment that configured the
// gateway's error metric (EVALSCHED_ERROR_METRIC_NAME) runs it: the
// simulator's gateway counts every call and error, so Depths carries the
// rate and the breaker closes on it instead of waiting for whole jobs.
func breakerConfig() breaker.Config {
	c := breaker.DefaultConfig()
	c.GatewayThreshold = breaker.DefaultGatewayThreshold
	return c
}

func newDynamic(e *engine, opt Options) (*dynamicPolicy, error) {
	cfg := schedulerConfig(e.sc, opt)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	d := &dynamicPolicy{
		e:        e,
		cfg:      cfg,
		log:      opt.PassLog,
		ctx:      context.Background(),
		ids:      make([]string, len(e.jobs)),
		byID:     make(map[string]int32, len(e.jobs)),
		index:    map[string]int{},
		versions: map[string]uint64{},
		warned:   map[string]bool{},
		retries:  map[string]int{},
		store: memstore.New(scheduler.ModelConfig{
			Enabled: true, MinLimit: scenario.DefaultMinLimit, MaxLimit: scenario.DefaultMaxLimit,
			InitialLimit: scenario.DefaultInitialLimit, TargetDepth: 1,
		}),
		sh: newShadow(len(e.jobs), len(e.models)),
	}
	// The claims' result tokens from the seed, not crypto/rand: a run is
	// the same for its seed.
	d.store.SetTokenSource(resulttoken.Seeded(uint64(e.sc.Seed)))
	for i, m := range e.sc.Models {
		d.index[m.Name] = i
		_ = d.store.PutModel(d.ctx, scheduler.ModelConfig{
			Name: m.Name, Enabled: true, MinLimit: m.MinLimit, MaxLimit: m.MaxLimit,
			TargetDepth: m.TargetDepth, InitialLimit: m.InitialLimit,
			ProviderConcurrency: m.ConfiguredConcurrency,
		})
		e.models[i].limit = m.InitialLimit
		if c := opt.Learned[m.Name]; c > 0 {
			// A warm start: the concurrency a run before learned, kept
			// on the model's state as learned just now.
			d.store.SetLearned(m.Name, c, Epoch)
		}
	}
	// Job ids are known up front (they derive from batch and key), so a
	// message or an event naming a job maps to it whenever it comes.
	for bi := range e.batches {
		b := &e.batches[bi]
		for k := range b.n {
			id := domain.JobID(b.cfg.Account, b.cfg.Project, b.cfg.Batch, strconv.Itoa(int(k)))
			d.ids[b.first+k] = id
			d.byID[id] = b.first + k
		}
	}
	d.main = d.newHandle(nil)
	return d, nil
}

// handle is one scheduler instance and its adapters: its view of the store
// and its launcher. The simulator's own passes use one; with faults each
// invocation builds its own, as each Lambda does, and so does an
// overlapping pass.
type handle struct {
	d         *dynamicPolicy
	inv       *invocation // nil: not an invocation (no faults, or an overlapping pass)
	sched     *scheduler.Scheduler
	committed bool  // the pass in progress committed its plan
	err       error // of the last pass

	// Faults armed for the pass in progress (invocation.go).
	crash int           // a crash point, or -1
	pause time.Duration // the pass stalls this long after reading
	rival bool          // an overlapping pass commits between this one's read and commit
}

func (d *dynamicPolicy) newHandle(inv *invocation) *handle {
	h := &handle{d: d, inv: inv, crash: -1}
	h.sched = &scheduler.Scheduler{
		Store: h, Depths: d, Launcher: h, Clock: d, Config: d.cfg, Log: discardLog,
		Yield: &scheduler.Yield{InFlight: d.store, Tiers: d.store, Stopper: d},
	}
	return h
}

// Now is the simulated time: the pass's clock.
func (d *dynamicPolicy) Now() time.Time { return Epoch.Add(d.e.now) }

// Depths returns each model's datapoint as CloudWatch would serve it:
// the newest whole-second sample at least metric_delay_s old, with its time.
// A metrics fault hides, ages or corrupts the datapoints of its episode.
func (d *dynamicPolicy) Depths(_ context.Context, models []string, _ time.Time) (map[string]scheduler.Depth, error) {
	e := d.e
	var ep *faults.Episode
	if d.fx != nil {
		ep, _ = d.fx.plan.Active(faults.SrcMetrics, e.now)
	}
	if ep != nil && ep.Mode == faults.MetricsError {
		d.fx.plan.Count(faults.Metrics)
		return nil, errDepths
	}
	out := make(map[string]scheduler.Depth, len(models))
	for _, name := range models {
		i, ok := d.index[name]
		if !ok {
			continue
		}
		// The error rate comes in the same GetMetricData call: the same
		// period, delay and missing datapoints as the depth. A period
		// without calls says nothing of the provider (production's reader
		// leaves it out too).
		var dp scheduler.Depth
		if g, ok := e.gatewayRateSeen(i); ok && g.Calls > 0 {
			dp.ErrorRate, dp.Calls, dp.ErrorAt = g.Rate(), float64(g.Calls), g.At
		}
		v, at, ok := e.depthSeen(i)
		if !ok {
			if !dp.ErrorAt.IsZero() {
				out[name] = dp
			}
			continue
		}
		if ep != nil && (ep.Model < 0 || ep.Model == i) {
			d.fx.plan.Count(faults.Metrics)
			switch ep.Mode {
			case faults.MetricsMissing:
				continue // the call's datapoints for the model, rate too
			case faults.MetricsStale:
				if v, at, ok = e.depthAt(i, at-600*time.Second); !ok {
					if !dp.ErrorAt.IsZero() {
						out[name] = dp
					}
					continue
				}
			case faults.MetricsTenfold:
				v *= 10
			case faults.MetricsZero:
				v = 0
			}
		}
		dp.Value, dp.At = v, Epoch.Add(at)
		e.withInService(&dp, i, at)
		out[name] = dp
	}
	return out, nil
}

// GatewayRates returns each model's gateway error/429 rate as a pass at
// the simulated now would read it from CloudWatch: the same period, delay
// and missing datapoints as Depths (one GetMetricData call reads both).
// Depths carries the same rate to the pass (Depth.ErrorRate).
func (d *dynamicPolicy) GatewayRates(models []string) map[string]GatewayRate {
	out := make(map[string]GatewayRate, len(models))
	for _, name := range models {
		if i, ok := d.index[name]; ok {
			if g, ok := d.e.gatewayRateSeen(i); ok {
				out[name] = g
			}
		}
	}
	return out
}

// modelVersions are the simulated store's scheduler.Versions: each model's
// count of commits when the Snapshot read it, as the DynamoDB store's
// state items carry a version.
type modelVersions map[string]uint64

// Snapshot implements scheduler.Store: the in-memory store's snapshot, with
// the versions it read. A slow pass stalls here, after reading, so what it
// read ages; an overlapping pass commits here, between this pass's read and
// its commit.
func (h *handle) Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error) {
	d := h.d
	h.committed = false
	snap, err := d.store.Snapshot(ctx, now)
	read := make(modelVersions, len(snap.Models))
	for _, m := range snap.Models {
		read[m.Config.Name] = d.versions[m.Config.Name]
	}
	snap.Versions = read
	if h.pause > 0 {
		p := h.pause
		h.pause = 0
		if err := h.inv.Sleep(ctx, p); err != nil {
			return snap, fmt.Errorf("stalled pass: %w", err)
		}
	}
	if h.rival {
		h.rival = false
		d.passWith(d.newHandle(nil))
	}
	return snap, err
}

// Commit implements scheduler.Store with the DynamoDB store's conditions: a
// throttled write fails before any effect, and a plan made from a snapshot
// older than another pass's commit is refused as stale.
func (h *handle) Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error) {
	d := h.d
	if d.fx != nil && d.fx.throttled(0.5) {
		return scheduler.Committed{}, fmt.Errorf("commit: %w", errThrottled)
	}
	seen, _ := read.(modelVersions)
	for _, mp := range plan.Models {
		if d.versions[mp.Model] != seen[mp.Model] && !d.unlocked {
			if d.fx != nil {
				d.fx.stats.StaleRefused++
			}
			return scheduler.Committed{Stale: []string{mp.Model}}, nil
		}
	}
	d.sh.inCommit = true
	var all, jobs []scheduler.Job
	var err error
	if d.fx != nil {
		all, jobs, err = d.fx.commit(ctx, plan) // the store faults on the claims
	} else {
		var c scheduler.Committed
		c, err = d.store.Commit(ctx, plan, nil)
		all, jobs = c.Claimed, c.Claimed
	}
	for _, j := range all {
		d.observeID(j.ID)
	}
	d.sh.inCommit = false
	for _, mp := range plan.Models {
		d.versions[mp.Model]++
	}
	h.committed = true
	d.bound(plan)
	if h.crash == faults.CrashAfterCommit && len(jobs) > 0 {
		h.die()
	}
	return scheduler.Committed{Claimed: jobs}, err
}

// RecordLaunches implements scheduler.Store: throttled before any effect,
// like Commit; each job it touches is read back.
func (h *handle) RecordLaunches(ctx context.Context, now time.Time, results []scheduler.LaunchResult) error {
	d := h.d
	if h.crash == faults.CrashAfterLaunch {
		h.die()
	}
	if d.fx != nil && d.fx.throttled(0.3) {
		return fmt.Errorf("record launches: %w", errThrottled)
	}
	err := d.store.RecordLaunches(ctx, now, results)
	for _, r := range results {
		d.observeID(r.JobID)
	}
	return err
}

// Launch starts one task per job, paced by the launch token bucket like
// rate.Limiter.Wait: a job whose token comes within this pass interval
// launches at that token's time; one whose token would come later gets
// Retry, as would a RunTask over the account's task quota.
func (h *handle) Launch(_ context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	d := h.d
	deadline := d.e.now + d.e.interval
	res := make([]scheduler.LaunchResult, len(jobs))
	for i, jb := range jobs {
		if h.crash == faults.CrashMidLaunch && i == len(jobs)/2 {
			h.die()
		}
		r := &res[i]
		r.JobID, r.Attempt = jb.ID, jb.Attempt
		j, ok := d.byID[jb.ID]
		if !ok {
			r.Status, r.Reason = scheduler.Failed, "simulator: unknown job"
			continue
		}
		if d.fx == nil {
			d.launch(r, j, jb, deadline)
			continue
		}
		d.fx.launch(r, j, jb, deadline)
	}
	return res
}

// launch makes one RunTask: refused over the account's task quota or
// without a launch token before the next pass, else the task starts at its
// token's time. A job that has a task already counts as double launched;
// RunTask answers with a task either way (an idempotent repeat).
func (d *dynamicPolicy) launch(r *scheduler.LaunchResult, j int32, jb scheduler.Job, deadline time.Duration) {
	e := d.e
	if e.holding >= e.sc.GlobalMaxRunning {
		d.retry(r, retryQuota)
		return
	}
	g, ok := e.bucket.reserve(e.now, deadline)
	if !ok {
		d.retry(r, retryThrottled)
		return
	}
	e.reserve(j, jb.Attempt, jb.Tier, g)
	r.Status, r.TaskARN = scheduler.Launched, taskARN(jb.ID, jb.Attempt)
}

// taskARN is the task of a job's attempt. ECS makes up its own ids; the
// simulator's say whose task it is, which is all it needs.
func taskARN(id string, attempt int) string {
	return taskARNPrefix + id + "-" + strconv.Itoa(attempt)
}

const taskARNPrefix = "arn:aws:ecs:sim:000000000000:task/sim/"

// The reasons a simulated RunTask is refused.
const (
	retryQuota     = "capacity: the account's Fargate task quota (global_max_running) is reached"
	retryThrottled = "throttled: no launch token before the next pass"
)

func (d *dynamicPolicy) retry(r *scheduler.LaunchResult, reason string) {
	r.Status, r.Reason = scheduler.Retry, reason
	d.retries[reason]++
}

func (d *dynamicPolicy) violation(format string, a ...any) {
	d.nViolations++
	if len(d.violations) < maxViolations {
		d.violations = append(d.violations, fmt.Sprintf("t=%gs: ", d.e.now.Seconds())+fmt.Sprintf(format, a...))
	}
}

// passWith runs the next pass on h's scheduler and returns its error.
func (d *dynamicPolicy) passWith(h *handle) error {
	d.next = h
	d.e.pass()
	return h.err
}

func (d *dynamicPolicy) pass(e *engine) {
	h := d.next
	d.next = nil
	if h == nil {
		h = d.main
	}
	seen := e.seen // this pass's: another may run while this one stalls
	rep, err := h.sched.Pass(d.ctx)
	h.err = err
	if err != nil && (d.fx == nil || !onlyInjected(err) && !d.fx.settling) {
		d.passErrs++
		d.violation("pass: %v", err)
	}
	d.checkStore("after a pass")
	for _, mp := range rep.Plan.Models {
		if d.log != nil && h.committed && mp.Running+mp.Starting+mp.Waiting > 0 {
			fmt.Fprintf(d.log, "t=%gs %s limit=%d running=%d starting=%d waiting=%d admitted=%d: %s | %s\n",
				e.now.Seconds(), mp.Model, mp.State.Limit.Limit, mp.Running, mp.Starting, mp.Waiting, mp.Admitted, mp.Limit.Reason, mp.Why)
		}
		if i, ok := d.index[mp.Model]; ok {
			if h.committed {
				seen[i] = seenModel{limit: mp.State.Limit.Limit, depth: mp.Depth.Value, hasDepth: !mp.Depth.At.IsZero(), held: mp.Breaker.Allow >= 0}
			} else {
				seen[i].limit = e.models[i].limit // nothing persisted: the limit is what it was
			}
		}
	}
	for _, w := range rep.Plan.Warnings {
		if !d.warned[w] {
			d.warned[w] = true
			d.warnings = append(d.warnings, fmt.Sprintf("t=%gs: %s", e.now.Seconds(), w))
		}
	}
}

// spec is batch bi's message, with jobs lo..hi-1.
func (d *dynamicPolicy) spec(bi int, lo, hi int32) domain.BatchSpec {
	b := &d.e.batches[bi]
	cfg := b.cfg
	spec := domain.BatchSpec{
		Account: cfg.Account, Project: cfg.Project, Batch: cfg.Batch, Model: cfg.Model,
		Tier: cfg.Tier, MaxAttempts: 3, TaskDefinition: "evalsched-sim",
		Jobs: make([]domain.JobSpec, hi-lo),
	}
	for k := lo; k < hi; k++ {
		spec.Jobs[k-lo].Key = strconv.Itoa(int(k))
	}
	return spec
}

func (d *dynamicPolicy) submitted(bi int) {
	if d.fx != nil && d.fx.plan.On.Has(faults.Intake) {
		d.fx.intake(bi)
		return
	}
	d.submit(bi, 0, d.e.batches[bi].n)
}

// submit hands jobs lo..hi-1 of batch bi to the store, as the intake
// function does with one message. Submit is idempotent: it creates exactly
// the jobs it has not seen, and a message it has seen creates nothing.
func (d *dynamicPolicy) submit(bi int, lo, hi int32) {
	e := d.e
	b := &e.batches[bi]
	want := 0
	for k := lo; k < hi; k++ {
		if d.sh.state[b.first+k] == sUnknown {
			want++
		}
	}
	created, err := d.store.Submit(d.ctx, d.spec(bi, lo, hi), Epoch.Add(e.now))
	if err != nil || created != want {
		d.violation("submit %s jobs %d..%d: created %d, want %d: %v", b.cfg.Key(), lo, hi-1, created, want, err)
	}
	for k := lo; k < hi; k++ {
		d.observe(b.first + k)
	}
}

func (d *dynamicPolicy) pinned(p scenario.Pin) {
	_ = d.store.PutPin(d.ctx, priority.Pin{Scope: p.Scope, Tier: strconv.Itoa(p.Tier), Note: "scenario"})
}

func (d *dynamicPolicy) started(j int32) {
	if d.fx != nil {
		d.fx.emit(j, false)
		return
	}
	jb := &d.e.jobs[j]
	if err := d.store.TaskStarted(d.ctx, d.ids[j], int(jb.attempt), Epoch.Add(d.e.now)); err != nil {
		d.violation("task started: %v", err)
	}
	d.observe(j)
	d.checkEvent()
}

func (d *dynamicPolicy) stopped(j int32) {
	if d.fx != nil {
		d.fx.emit(j, true)
		return
	}
	jb := &d.e.jobs[j]
	exit := domain.Exit{}
	if jb.state == jobFailed {
		exit = domain.Exit{Code: 1, ProviderError: true, Reason: "provider error (429/5xx)"}
	}
	if err := d.store.TaskStopped(d.ctx, d.ids[j], int(jb.attempt), exit, Epoch.Add(d.e.now)); err != nil {
		d.violation("task stopped: %v", err)
	}
	d.observe(j)
	d.checkEvent()
}

// providerFailed tells the store the provider failed a running task whose
// job has attempts left: the store sends it back to waiting at its next
// attempt (job.stop), as the world did. Under faults the STOPPED event
// comes as ECS sends it, and ECS describes the task stopped from now on.
func (d *dynamicPolicy) providerFailed(j int32) {
	jb := &d.e.jobs[j]
	if d.fx != nil {
		d.fx.providerFailed(j, jb.attempt)
		return
	}
	exit := domain.Exit{Code: 1, ProviderError: true, Reason: "provider error (429/5xx)"}
	if err := d.store.TaskStopped(d.ctx, d.ids[j], int(jb.attempt), exit, Epoch.Add(d.e.now)); err != nil {
		d.violation("task stopped: %v", err)
	}
	d.observe(j)
	d.checkEvent()
}

// Stop implements scheduler.TaskStopper: the yield step's StopTask. A job
// still starting stops at once and its STOPPED event (the yield's reason)
// reaches the store, at once or, with faults, as the faults' ECS sends it
// (ecs.go); one that began running meanwhile runs on.
func (d *dynamicPolicy) Stop(_ context.Context, jobs []scheduler.InFlight) (int, error) {
	n := 0
	for _, f := range jobs {
		j, ok := d.byID[f.ID]
		if !ok || int(d.e.jobs[j].attempt) != f.Attempt || !d.e.yield(j) {
			continue
		}
		n++
		if d.fx != nil {
			d.fx.yield(j, int32(f.Attempt))
			continue
		}
		exit := domain.Exit{Yielded: true, Reason: taskevent.YieldReason}
		if err := d.store.TaskStopped(d.ctx, f.ID, f.Attempt, exit, Epoch.Add(d.e.now)); err != nil {
			d.violation("task yielded: %v", err)
		}
		d.observe(j)
		d.checkEvent()
	}
	return n, nil
}

// failedToStart tells the store a task stopped before its container ran
// (TaskFailedToStart: infrastructure, so the store retries the job while
// attempts remain); a job the store failed past its attempts ends. Faults
// do not combine with start failures (simulate refuses them).
func (d *dynamicPolicy) failedToStart(j int32) {
	jb := &d.e.jobs[j]
	exit := domain.Exit{Infrastructure: true, Reason: "TaskFailedToStart: the task failed to start"}
	if err := d.store.TaskStopped(d.ctx, d.ids[j], int(jb.attempt), exit, Epoch.Add(d.e.now)); err != nil {
		d.violation("task failed to start: %v", err)
	}
	if sj, ok := d.store.Job(d.ids[j]); ok && sj.State == domain.Failed {
		d.e.launchFailed(j)
	}
	d.observe(j)
	d.checkEvent()
}

// event handles the engine events of the faults' machinery.
func (d *dynamicPolicy) event(kind eventKind, arg int32) { d.fx.event(kind, arg) }

// finish compares the store's states with the simulator's: a job the store
// holds in no state (or still CLAIMED after its pass ended) is lost. With
// faults the system has settled first (chaos.settle): pending messages and
// events landed and the reconciler ran past its grace periods. Every job
// must be where the world says it is.
func (d *dynamicPolicy) finish(r *Result) {
	if d.fx != nil {
		r.Chaos = &d.fx.stats
	}
	d.settled()
	c := d.store.Counts()
	inState := c.Waiting + c.Launched + c.Running + c.Succeeded + c.Failed + c.Cancelled
	r.Totals.Lost = max(r.Totals.Lost, r.Totals.Submitted-inState)
	type pair struct {
		name       string
		store, sim int
	}
	for _, p := range []pair{
		{"waiting", c.Waiting, r.Totals.Waiting},
		{"launched+running", c.Launched + c.Running + c.Claimed, r.Totals.Running},
		{"succeeded", c.Succeeded, r.Totals.Succeeded},
		{"failed", c.Failed, r.Totals.Failed},
	} {
		if p.store != p.sim {
			d.violation("end: store has %d jobs %s, the simulator %d", p.store, p.name, p.sim)
		}
	}
	r.Retries = d.retries
	r.CheckViolations = d.checkFails
	r.PassErrors = d.passErrs
	r.Violations = append(r.Violations, d.violations...)
	r.ViolationCount += d.nViolations
	r.Warnings = append(r.Warnings, d.warnings...)
	if snap, err := d.store.Snapshot(d.ctx, d.Now()); err == nil {
		for _, m := range snap.Models {
			if m.State.Limit.Conc > 0 {
				if r.Learned == nil {
					r.Learned = map[string]float64{}
				}
				r.Learned[m.Config.Name] = m.State.Limit.Conc
			}
		}
	}
}
