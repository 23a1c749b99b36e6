package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// dynamicPolicy is evalsched itself: the real scheduler.Pass over the
// in-memory store, with the simulator as its depth reader, launcher and
// clock. The simulator keeps its own record of every job beside the store's,
// so a job the store loses or launches twice shows up in the totals.
type dynamicPolicy struct {
	e     *engine
	store *memstore.Store
	sched *scheduler.Scheduler
	ctx   context.Context
	ids   []string         // job → store id, set when its batch arrives
	byID  map[string]int32 // store id → job
	index map[string]int   // model name → index

	retried    []int32        // jobs given Retry this pass
	retries    map[string]int // refused launches by reason
	checkFails int
	passErrs   int
	violations []string
	warned     map[string]bool
	warnings   []string
	log        io.Writer
}

// maxViolations keeps the first broken invariants with their times.
const maxViolations = 10

// schedulerConfig is the pass's configuration for a scenario.
func schedulerConfig(sc *Scenario, opt Options) scheduler.Config {
	lc := limits.DefaultConfig()
	if opt.Limits != nil {
		lc = *opt.Limits
	}
	return scheduler.Config{
		Tiers:              sc.Tiers,
		TierWeight:         sc.TierWeight,
		DefaultTier:        sc.DefaultTier,
		GlobalMaxRunning:   sc.GlobalMaxRunning,
		MaxLaunchesPerPass: max(1, int(sc.LaunchRatePerS*float64(sc.PassIntervalS))),
		Limits:             lc,
		Breaker:            breaker.DefaultConfig(),
	}
}

func newDynamic(e *engine, opt Options) (*dynamicPolicy, error) {
	cfg := schedulerConfig(e.sc, opt)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	d := &dynamicPolicy{
		e:       e,
		log:     opt.PassLog,
		ctx:     context.Background(),
		ids:     make([]string, len(e.jobs)),
		byID:    make(map[string]int32, len(e.jobs)),
		index:   map[string]int{},
		warned:  map[string]bool{},
		retries: map[string]int{},
		store: memstore.New(scheduler.ModelConfig{
			Enabled: true, MinLimit: DefaultMinLimit, MaxLimit: DefaultMaxLimit,
			InitialLimit: DefaultInitialLimit, TargetDepth: 1,
		}),
	}
	for i, m := range e.sc.Models {
		d.index[m.Name] = i
		_ = d.store.PutModel(d.ctx, scheduler.ModelConfig{
			Name: m.Name, Enabled: true, MinLimit: m.MinLimit, MaxLimit: m.MaxLimit,
			TargetDepth: m.TargetDepth, InitialLimit: m.InitialLimit,
		})
		e.models[i].limit = m.InitialLimit
	}
	d.sched = &scheduler.Scheduler{
		Store: d.store, Depths: d, Launcher: d, Clock: d, Config: cfg,
		Log: slog.New(slog.DiscardHandler),
	}
	return d, nil
}

// Now is the simulated time: the pass's clock.
func (d *dynamicPolicy) Now() time.Time { return Epoch.Add(d.e.now) }

// Depths returns each model's datapoint as CloudWatch would serve it:
// the newest whole-second sample at least metric_delay_s old, with its time.
func (d *dynamicPolicy) Depths(_ context.Context, models []string, _ time.Time) (map[string]scheduler.Depth, error) {
	out := make(map[string]scheduler.Depth, len(models))
	for _, name := range models {
		i, ok := d.index[name]
		if !ok {
			continue
		}
		if v, at, ok := d.e.depthSeen(i); ok {
			out[name] = scheduler.Depth{Value: v, At: Epoch.Add(at)}
		}
	}
	return out, nil
}

// Launch starts one task per job, paced by the launch token bucket like
// rate.Limiter.Wait: a job whose token comes within this pass interval
// launches at that token's time; one whose token would come later gets
// Retry, as would a RunTask over the account's task quota.
func (d *dynamicPolicy) Launch(_ context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	e := d.e
	deadline := e.now + e.interval
	res := make([]scheduler.LaunchResult, len(jobs))
	for i, jb := range jobs {
		r := &res[i]
		r.JobID, r.Attempt = jb.ID, jb.Attempt
		j, ok := d.byID[jb.ID]
		switch {
		case !ok:
			r.Status, r.Reason = scheduler.Failed, "simulator: unknown job"
			continue
		case e.holding >= e.sc.GlobalMaxRunning:
			d.retry(r, j, retryQuota)
			continue
		}
		g, ok := e.bucket.reserve(e.now, deadline)
		if !ok {
			d.retry(r, j, retryThrottled)
			continue
		}
		// A job that has a task already counts as double launched; RunTask
		// answers with a task either way (an idempotent repeat).
		e.reserve(j, jb.Attempt, jb.Tier, g)
		r.Status = scheduler.Launched
		r.TaskARN = "arn:aws:ecs:sim:000000000000:task/sim/" + jb.ID + "-" + strconv.Itoa(jb.Attempt)
	}
	return res
}

// The reasons a simulated RunTask is refused.
const (
	retryQuota     = "capacity: the account's Fargate task quota (global_max_running) is reached"
	retryThrottled = "throttled: no launch token before the next pass"
)

func (d *dynamicPolicy) retry(r *scheduler.LaunchResult, j int32, reason string) {
	r.Status, r.Reason = scheduler.Retry, reason
	d.retries[reason]++
	d.retried = append(d.retried, j)
}

func (d *dynamicPolicy) violation(format string, a ...any) {
	if len(d.violations) < maxViolations {
		d.violations = append(d.violations, fmt.Sprintf("t=%gs: ", d.e.now.Seconds())+fmt.Sprintf(format, a...))
	}
}

func (d *dynamicPolicy) pass(e *engine) {
	d.retried = d.retried[:0]
	rep, err := d.sched.Pass(d.ctx)
	if err != nil {
		d.passErrs++
		d.violation("pass: %v", err)
	}
	// A refused launch goes back to waiting with attempt+1, or fails past
	// its attempts: follow the store's verdict.
	for _, j := range d.retried {
		if sj, ok := d.store.Job(d.ids[j]); ok && sj.State == memstore.Failed {
			e.launchFailed(j)
		}
	}
	if err := d.store.Check(); err != nil {
		d.checkFails++
		d.violation("store check: %v", err)
	}
	for _, mp := range rep.Plan.Models {
		if d.log != nil && mp.Running+mp.Starting+mp.Waiting > 0 {
			fmt.Fprintf(d.log, "t=%gs %s limit=%d running=%d starting=%d waiting=%d admitted=%d: %s | %s\n",
				e.now.Seconds(), mp.Model, mp.State.Limit.Limit, mp.Running, mp.Starting, mp.Waiting, mp.Admitted, mp.Limit.Reason, mp.Why)
		}
		if i, ok := d.index[mp.Model]; ok {
			e.seen[i] = seenModel{limit: mp.State.Limit.Limit, depth: mp.Depth.Value, hasDepth: !mp.Depth.At.IsZero()}
		}
	}
	for _, w := range rep.Plan.Warnings {
		if !d.warned[w] {
			d.warned[w] = true
			d.warnings = append(d.warnings, fmt.Sprintf("t=%gs: %s", e.now.Seconds(), w))
		}
	}
}

func (d *dynamicPolicy) submitted(bi int) {
	e := d.e
	b := &e.batches[bi]
	cfg := b.cfg
	spec := memstore.BatchSpec{
		Account: cfg.Account, Project: cfg.Project, Batch: cfg.Batch, Model: cfg.Model,
		Tier: cfg.Tier, MaxAttempts: 3, TaskDefinition: "evalsched-sim",
		Jobs: make([]memstore.JobSpec, b.n),
	}
	for k := range b.n {
		key := strconv.Itoa(int(k))
		spec.Jobs[k].Key = key
		id := scheduler.JobID(cfg.Account, cfg.Project, cfg.Batch, key)
		d.ids[b.first+k] = id
		d.byID[id] = b.first + k
	}
	created, err := d.store.Submit(d.ctx, spec, Epoch.Add(e.now))
	if err != nil || created != int(b.n) {
		d.violation("submit %s: created %d of %d jobs: %v", cfg.Key(), created, b.n, err)
	}
}

func (d *dynamicPolicy) pinned(p Pin) {
	_ = d.store.PutPin(d.ctx, priority.Pin{Scope: p.Scope, Tier: strconv.Itoa(p.Tier), Note: "scenario"})
}

func (d *dynamicPolicy) started(j int32) {
	jb := &d.e.jobs[j]
	if err := d.store.TaskStarted(d.ctx, d.ids[j], int(jb.attempt), Epoch.Add(d.e.now)); err != nil {
		d.violation("task started: %v", err)
	}
}

func (d *dynamicPolicy) stopped(j int32) {
	jb := &d.e.jobs[j]
	exit := memstore.Exit{}
	if jb.state == jobFailed {
		exit = memstore.Exit{Code: 1, ProviderError: true, Reason: "provider error (429/5xx)"}
	}
	if err := d.store.TaskStopped(d.ctx, d.ids[j], int(jb.attempt), exit, Epoch.Add(d.e.now)); err != nil {
		d.violation("task stopped: %v", err)
	}
}

// finish compares the store's states with the simulator's: a job the store
// holds in no state (or still CLAIMED after its pass ended) is lost.
func (d *dynamicPolicy) finish(r *Result) {
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
	r.Warnings = append(r.Warnings, d.warnings...)
}
