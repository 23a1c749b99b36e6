package sim

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"time"

	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// chaos is policy dynamic's side of the faults: scheduler invocations that
// run the real passloop under an in-memory lease and the real reconciler
// once a minute, a simulated ECS that answers the reconciler and emits task
// events through the real task-events handler, and the intake's messages.
type chaos struct {
	d        *dynamicPolicy
	plan     *faults.Plan
	lease    simLease
	invs     []*invocation // every invocation, by id
	active   []*invocation // those not done
	handler  *taskevent.Handler
	rec      *reconcile.Reconciler
	window   time.Duration // the slots one invocation covers (a minute at 10 s)
	settling bool
	stats    ChaosStats

	// Task events on their way (ecs.go).
	pending []taskEvent
	free    []int32
	held    map[int32]taskEvent // RUNNING events held back until their task's STOPPED
	buf     []byte

	// yields are the tasks the yield step stopped, by job and attempt, with
	// when: ECS describes them stopped after their job launched again.
	yields map[taskKey]time.Duration
	// providerStops are the running tasks the provider failed whose job
	// waits again: ECS describes them stopped (exit 1) after their job
	// launched again.
	providerStops map[taskKey]providerStop

	intakes []intakeMsg // batch messages on their way
}

// ChaosStats says how the system met the faults of a run.
type ChaosStats struct {
	Invocations     int // scheduler invocations started (duplicates included)
	LeaseHeldExits  int // invocations that found the lease held and exited
	LeaseLost       int // invocations that stopped on finding their lease taken
	Crashes         int // invocations that died mid-pass
	StaleRefused    int // commits refused: another pass committed since their read
	PassesFailed    int // passes that returned an error (injected faults)
	Reconciles      int
	Repairs         reconcile.Report // summed over the runs (InFlight, Unchanged left out)
	EventsLost      int
	YieldEventsLost int // of them, STOPPED events of tasks the yield step stopped
	EventRetries    int // events the handler failed (throttled) and EventBridge delivered again
	RunTaskRetried  int // RunTasks that timed out after starting their task, answered again by clientToken

	// ClaimsThrottled and ClaimsUnconfirmed count a Commit's claim
	// transactions throttled, and applied with their answer lost (storefaults.go).
	ClaimsThrottled, ClaimsUnconfirmed int
}

// window is the number of pass intervals an invocation covers: EventBridge
// fires once a minute and passes run every ten seconds.
const window = 6

// settleAfter is how long after the end the settling reconciler looks:
// past ClaimGrace and MissingGrace, so every repair it would make is made.
const settleAfter = 6 * time.Minute

var discardLog = slog.New(slog.DiscardHandler)

// withFaults switches the policy to the faulted world: passes run in
// invocations under the lease instead of on the simulator's own tick.
func (d *dynamicPolicy) withFaults(p *faults.Plan) {
	e := d.e
	c := &chaos{d: d, plan: p, held: map[int32]taskEvent{}, yields: map[taskKey]time.Duration{}, providerStops: map[taskKey]providerStop{}, window: window * e.interval}
	d.fx = c
	e.faults, e.ext = p, d
	es := eventStore{c: c}
	c.handler = &taskevent.Handler{Store: es, Config: taskEventConfig, Log: discardLog}
	c.rec = &reconcile.Reconciler{Store: reconcileStore{eventStore{c: c, reconciler: true}}, Tasks: ecsView{c},
		Events: taskEventConfig, Log: discardLog}
	for t := time.Duration(0); t < e.end; t += c.window {
		e.schedule(t, evInvoke, 0)
	}
	for _, ep := range p.Episodes(faults.SrcDuplicate) {
		e.schedule(ep.From, evInvoke, 1)
	}
	for i, ep := range p.Episodes(faults.SrcProvider) {
		e.schedule(ep.From, evProvider, int32(2*i))
		e.schedule(ep.To, evProvider, int32(2*i+1))
	}
}

func (c *chaos) event(kind eventKind, arg int32) {
	switch kind {
	case evInvoke:
		if arg == 1 {
			c.plan.Count(faults.Overlap)
		}
		c.invoke()
	case evWake:
		c.invs[arg].resume()
	case evDeliver:
		c.deliverPending(arg)
	case evIntake:
		c.deliverIntake(arg)
	default:
		panic(fmt.Sprintf("sim: unexpected event kind %d", kind))
	}
}

// invocation is one run of the scheduler function: passloop.Loop covering
// its minute of slots under the lease, the reconciler in its first slot.
// It runs as a coroutine of the engine: its clock's Sleep hands control
// back until the simulated time it sleeps to, so it sees the world move
// between its passes exactly as a Lambda would.
type invocation struct {
	c          *chaos
	id         int32
	owner      string
	h          *handle
	next       func() (time.Duration, bool)
	stop       func()
	yield      func(time.Duration) bool
	dead       bool      // it crashed: it makes no further call
	done       bool      // it returned (or died)
	inPass     bool      // a pass is in progress
	holds      bool      // its last Acquire or Renew succeeded, and it has not released since
	until      time.Time // the until it last set on the lease
	reconciled bool
}

// crashSignal unwinds a crashed invocation's coroutine.
type crashSignal struct{}

func (c *chaos) invoke() {
	d, e := c.d, c.d.e
	inv := &invocation{c: c, id: int32(len(c.invs)), owner: fmt.Sprintf("invocation-%d@%gs", len(c.invs), e.now.Seconds())}
	inv.h = d.newHandle(inv)
	c.invs = append(c.invs, inv)
	c.active = append(c.active, inv)
	c.stats.Invocations++
	loop := &passloop.Loop{Clock: inv, Lease: leaseHandle{inv}, Pass: inv.pass, Interval: e.interval, Window: c.window, Log: discardLog}
	inv.next, inv.stop = iter.Pull(func(yield func(time.Duration) bool) {
		inv.yield = yield
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(crashSignal); !ok {
					panic(r)
				}
			}
		}()
		sum, err := loop.Run(d.ctx)
		c.stats.PassesFailed += sum.Failed
		switch {
		case errors.Is(err, passloop.ErrLeaseHeld):
			c.stats.LeaseHeldExits++
		case sum.Reason == "lease lost":
			c.stats.LeaseLost++
		case err != nil && !c.settling:
			d.violation("%s: %v", inv.owner, err)
		}
	})
	inv.resume()
}

// resume runs the invocation until it sleeps (it wakes at the time it
// sleeps to) or returns.
func (inv *invocation) resume() {
	wake, ok := inv.next()
	if !ok {
		inv.finished()
		return
	}
	inv.c.d.e.schedule(wake, evWake, inv.id)
}

func (inv *invocation) finished() {
	inv.done = true
	inv.holds = inv.holds && !inv.dead
	c := inv.c
	c.active = slices.DeleteFunc(c.active, func(o *invocation) bool { return o == inv })
}

// Now is the simulated time (passloop.Clock).
func (inv *invocation) Now() time.Time { return Epoch.Add(inv.c.d.e.now) }

// Sleep hands control back to the engine until now+d.
func (inv *invocation) Sleep(_ context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if !inv.yield(inv.c.d.e.now + d) {
		return context.Canceled // the run ended
	}
	return nil
}

// pass is the invocation's pass, as the scheduler function's runner runs
// it: the reconciler before the first pass, then scheduler.Pass.
func (inv *invocation) pass(ctx context.Context) error {
	c := inv.c
	c.passStarts(inv)
	inv.inPass = true
	defer func() { inv.inPass = false }()
	if !inv.reconciled {
		inv.reconciled = true
		c.reconcile(ctx, inv.Now())
	}
	c.arm(inv.h)
	return c.d.passWith(inv.h)
}

// arm readies the faults due at this pass: a crash (it fires once the pass
// has claimed jobs), a stall, an overlapping pass.
func (c *chaos) arm(h *handle) {
	now := c.d.e.now
	h.crash, h.pause, h.rival = -1, 0, false
	if ep, ok := c.plan.Due(faults.SrcCrash, now); ok {
		h.crash = ep.Mode
	}
	if ep, ok := c.plan.Due(faults.SrcSlowPass, now); ok {
		c.plan.Take(faults.SrcSlowPass)
		h.pause = ep.To - ep.From
	}
	if _, ok := c.plan.Due(faults.SrcRace, now); ok {
		c.plan.Take(faults.SrcRace)
		h.rival = true
	}
}

// die crashes the invocation at the pass's current step: the Lambda is
// gone, its lease stays until it expires, and nothing it would have done
// next happens.
func (h *handle) die() {
	inv := h.inv
	if inv == nil {
		return
	}
	c := inv.c
	c.plan.Take(faults.SrcCrash)
	c.stats.Crashes++
	inv.dead, inv.holds, inv.inPass = true, false, false
	panic(crashSignal{})
}

// simLease is the lease item with the DynamoDB lease's conditions
// (internal/dynamolease): Acquire when free, expired or ours; Renew while
// ours; Release if ours.
type simLease struct {
	owner *invocation
	until time.Time
}

type leaseHandle struct{ inv *invocation }

func (l leaseHandle) Acquire(_ context.Context, now, until time.Time) (bool, string, time.Time, error) {
	c := l.inv.c
	ls := &c.lease
	if ls.owner != nil && ls.owner != l.inv && now.Before(ls.until) {
		return false, ls.owner.owner, ls.until, nil
	}
	ls.owner, ls.until = l.inv, until
	c.leaseTaken(l.inv, now, until)
	return true, l.inv.owner, until, nil
}

func (l leaseHandle) Renew(_ context.Context, now, until time.Time) (bool, error) {
	c := l.inv.c
	if c.lease.owner != l.inv {
		l.inv.holds = false
		return false, nil
	}
	c.lease.until = until
	c.leaseTaken(l.inv, now, until)
	return true, nil
}

func (l leaseHandle) Release(context.Context) error {
	if l.inv.dead {
		return nil // a crashed invocation makes no call
	}
	l.inv.holds = false
	if c := l.inv.c; c.lease.owner == l.inv {
		c.lease.owner = nil
	}
	return nil
}

// leaseTaken records that inv holds the lease until `until` and checks
// that no other invocation still holds it.
func (c *chaos) leaseTaken(inv *invocation, now, until time.Time) {
	for _, o := range c.active {
		if o != inv && o.holds && now.Before(o.until) {
			c.d.violation("the lease is held by %s and %s at once", o.owner, inv.owner)
		}
	}
	inv.holds, inv.until = true, until
}

// passStarts checks that no other pass holding a live lease is in progress.
// (A pass that stalled past its lease may still be in progress: the store's
// conditions, not the lease, must stop it.)
func (c *chaos) passStarts(inv *invocation) {
	now := inv.Now()
	for _, o := range c.active {
		if o != inv && o.inPass && o.holds && now.Before(o.until) {
			c.d.violation("%s passes while %s, holding the lease, is in a pass", inv.owner, o.owner)
		}
	}
}

// reconcile runs the real reconciler against the store and the simulated
// ECS, then recounts.
func (c *chaos) reconcile(ctx context.Context, now time.Time) reconcile.Report {
	rep, err := c.rec.Run(ctx, now)
	c.stats.Reconciles++
	s := &c.stats.Repairs
	s.Recorded += rep.Recorded
	s.Requeued += rep.Requeued
	s.Started += rep.Started
	s.Ended += rep.Ended
	s.TimedOut += rep.TimedOut
	if err != nil && !onlyInjected(err) {
		c.d.violation("reconcile: %v", err)
	}
	c.d.checkStore("after reconciling")
	return rep
}

// throttled draws whether DynamoDB throttles a write now (with probability
// q during a throttling episode).
func (c *chaos) throttled(q float64) bool {
	if _, ok := c.plan.Active(faults.SrcThrottle, c.d.e.now); !ok || c.settling || !c.plan.Chance(faults.Store, q) {
		return false
	}
	c.plan.Count(faults.Store)
	return true
}

// launch is one job's launch as the ECS launcher makes it, against a
// simulated ECS: RunTask throttled (the launcher backs off and tries again,
// three times), refused for capacity, or timing out after ECS started the
// task (the launcher tries again with the same clientToken, and ECS answers
// with the task it started for that token, never a second one).
func (c *chaos) launch(r *scheduler.LaunchResult, j int32, jb scheduler.Job, deadline time.Duration) {
	d, p := c.d, c.plan
	if c.hasTask(j, jb.Attempt) {
		// ECS answers a token it knows with its task, but the launcher is
		// asked for an attempt that launched before: a claim made twice.
		d.violation("job %s: attempt %d launched again by another pass (ECS answered with its task by clientToken)", d.jobName(j), jb.Attempt)
		c.runTask(r, j, jb, deadline)
		return
	}
	_, faulty := p.Active(faults.SrcRunTask, d.e.now)
	for throttled := 0; ; throttled++ {
		switch {
		case faulty && p.Chance(faults.RunTask, 0.3):
			p.Count(faults.RunTask)
			if throttled < 3 {
				continue // the launcher backs off and calls again
			}
			d.retry(r, "ThrottlingException: Rate exceeded")
			return
		case faulty && p.Chance(faults.RunTask, 0.15):
			p.Count(faults.RunTask)
			d.retry(r, "capacity: RESOURCE:FARGATE: Capacity is unavailable at this time")
			return
		}
		if !c.runTask(r, j, jb, deadline) || !faulty || !p.Chance(faults.RunTask, 0.15) {
			return
		}
		// The task started; the answer timed out. The launcher calls again
		// with the same request, so the same clientToken.
		p.Count(faults.RunTask)
		c.stats.RunTaskRetried++
		*r = scheduler.LaunchResult{JobID: r.JobID, Attempt: r.Attempt}
		if c.runTask(r, j, jb, deadline) {
			d.violation("job %s: a RunTask repeated with attempt %d's clientToken started a second task", d.jobName(j), jb.Attempt)
		}
		return
	}
}

// runTask is ECS's RunTask for a job's attempt, idempotent by clientToken
// (the job id and attempt): a token it has seen gets the task it started
// for it; a new one starts a task, or is refused. It reports whether it
// started a task.
func (c *chaos) runTask(r *scheduler.LaunchResult, j int32, jb scheduler.Job, deadline time.Duration) bool {
	if c.hasTask(j, jb.Attempt) {
		r.Status, r.TaskARN = scheduler.Launched, taskARN(jb.ID, jb.Attempt)
		return false
	}
	c.d.launch(r, j, jb, deadline)
	return r.Status == scheduler.Launched
}

// taskKey is a job's task of one attempt.
type taskKey struct{ job, attempt int32 }

// providerStop is when a task the provider failed ran and stopped.
type providerStop struct{ runAt, at time.Duration }

// hasTask reports whether ECS has a task for job j's attempt: the job's
// newest (live), or one the yield step stopped or the provider failed.
func (c *chaos) hasTask(j int32, attempt int) bool {
	_, yielded := c.yields[taskKey{j, int32(attempt)}]
	_, failed := c.providerStops[taskKey{j, int32(attempt)}]
	return yielded || failed || c.live(j, attempt)
}

// live reports whether job j's task of the attempt is its newest: the
// simulator's world holds each job's newest task.
func (c *chaos) live(j int32, attempt int) bool {
	jb := &c.d.e.jobs[j]
	return jb.attempt == int32(attempt) && jb.state >= jobReserved && jb.state <= jobFailed
}

// settle ends the run: the invocations still running stop, messages and
// events on their way land, and the reconciler runs past its grace periods
// until it has nothing left to repair.
func (c *chaos) settle() {
	d, e := c.d, c.d.e
	c.settling = true
	for _, inv := range slices.Clone(c.active) {
		inv.stop()
		inv.finished()
	}
	for len(e.q) > 0 {
		ev := e.q.pop()
		switch ev.kind {
		case evDeliver:
			c.deliverPending(ev.arg)
		case evIntake:
			c.deliverIntake(ev.arg)
		}
	}
	for _, j := range slices.Sorted(func(yield func(int32) bool) {
		for j := range c.held {
			if !yield(j) {
				return
			}
		}
	}) {
		ev := c.held[j]
		delete(c.held, j)
		c.deliver(ev)
	}
	at := Epoch.Add(e.end + settleAfter)
	for i := range 5 {
		rep := c.reconcile(d.ctx, at.Add(time.Duration(i)*time.Second))
		if rep.Recorded+rep.Requeued+rep.Started+rep.Ended+rep.TimedOut == 0 {
			break
		}
	}
}
