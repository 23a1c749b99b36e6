package sim

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/taskevent"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// ECS, as the faulted simulation shows it to evalsched: the task of each
// job's newest attempt, described from the simulator's own record of the
// job, and the tasks the yield step stopped (chaos.yields), for the
// reconciler (ecsView); and ECS Task State Change events for the
// task-events handler.

// taskEventConfig is the sandbox convention of the simulated tasks: a job
// that failed on provider errors exits 1 (scenarios/README.md).
var taskEventConfig = taskevent.Config{ProviderErrorCodes: []int{1}, Container: "sandbox"}

// forgetAfter is how long ECS keeps describing a stopped task.
const forgetAfter = time.Hour

// ecsView answers the reconciler's DescribeTasks and ListTasks from the
// simulator's task table.
type ecsView struct{ c *chaos }

// now is the time ECS answers at. While settling, a moment after the end,
// so a RunTask already issued for the next pass interval has its task.
func (v ecsView) now() time.Duration {
	if v.c.settling {
		return v.c.d.e.end + v.c.d.e.interval
	}
	return v.c.d.e.now
}

// task finds the job and attempt of a task the simulator started, if ECS
// knows it at its time.
func (v ecsView) task(arn string) (int32, int, bool) {
	rest, ok := strings.CutPrefix(arn, taskARNPrefix)
	if !ok {
		return 0, 0, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return 0, 0, false
	}
	j, ok := v.c.d.byID[rest[:i]]
	attempt, err := strconv.Atoi(rest[i+1:])
	if !ok || err != nil || !v.known(j, attempt) {
		return 0, 0, false
	}
	return j, attempt, true
}

// known reports whether ECS knows job j's task of attempt a at its time:
// RunTask has been issued, and the task did not stop more than an hour ago.
func (v ecsView) known(j int32, a int) bool {
	now := v.now()
	if at, ok := v.c.yields[taskKey{j, int32(a)}]; ok {
		return at <= now && now-at <= forgetAfter
	}
	if ps, ok := v.c.providerStops[taskKey{j, int32(a)}]; ok {
		return ps.at <= now && now-ps.at <= forgetAfter
	}
	jb := &v.c.d.e.jobs[j]
	switch {
	case !v.c.live(j, a) || jb.admitAt > now:
		return false
	case jb.state >= jobSucceeded:
		return now-jb.endAt <= forgetAfter
	}
	return true
}

// describe is job j's task of attempt a, which ECS knows: one the yield
// step stopped, or the job's newest.
func (v ecsView) describe(j int32, a int) reconcile.Task {
	d := v.c.d
	jb := &d.e.jobs[j]
	id := d.ids[j]
	t := reconcile.Task{
		ARN: taskARN(id, a), Status: "PENDING", Attempt: strconv.Itoa(a), HasAttempt: true,
		Containers: []taskevent.Container{{Name: "sandbox"}},
	}
	if at, ok := v.c.yields[taskKey{j, int32(a)}]; ok {
		// Stopped while starting: no container ran, none exited.
		t.Status, t.StoppedAt = "STOPPED", Epoch.Add(at)
		t.StopCode, t.StoppedReason = stopUserInitiated, taskevent.YieldReason
		return t
	}
	if ps, ok := v.c.providerStops[taskKey{j, int32(a)}]; ok {
		// It ran and exited on the provider's errors; its job waits again.
		t.Status, t.StartedAt, t.StoppedAt = "STOPPED", Epoch.Add(ps.runAt), Epoch.Add(ps.at)
		t.StopCode, t.StoppedReason = stopContainerExited, "Essential container in task exited"
		t.Containers[0].ExitCode = exitCode(1)
		return t
	}
	if jb.state >= jobRunning {
		t.Status, t.StartedAt = "RUNNING", Epoch.Add(jb.runAt)
	}
	if jb.state >= jobSucceeded {
		code := 0
		if jb.state == jobFailed {
			code = 1
		}
		t.Status, t.StoppedAt = "STOPPED", Epoch.Add(jb.endAt)
		t.StopCode, t.StoppedReason = stopContainerExited, "Essential container in task exited"
		t.Containers[0].ExitCode = exitCode(code)
	}
	return t
}

// ECS's stop codes, as DescribeTasks spells them.
const (
	stopUserInitiated   = "UserInitiated"
	stopContainerExited = "EssentialContainerExited"
)

func exitCode(c int) *int { return &c }

// Describe implements reconcile.Tasks: the tasks ECS knows among arns.
func (v ecsView) Describe(_ context.Context, arns []string) (map[string]reconcile.Task, error) {
	out := map[string]reconcile.Task{}
	for _, arn := range arns {
		if j, a, ok := v.task(arn); ok {
			out[arn] = v.describe(j, a)
		}
	}
	return out, nil
}

// Started implements reconcile.Tasks: the tasks a job started (startedBy),
// running ones first, then stopped ones; those the yield step stopped are
// stopped.
func (v ecsView) Started(_ context.Context, jobID string) ([]reconcile.Task, error) {
	j, ok := v.c.d.byID[jobID]
	if !ok {
		return nil, nil
	}
	var out []reconcile.Task
	for _, wantStopped := range []bool{false, true} {
		for _, arn := range v.started(j, wantStopped) {
			if j, a, ok := v.task(arn); ok {
				out = append(out, v.describe(j, a))
			}
		}
	}
	return out, nil
}

// started lists the ARNs of job j's tasks ECS knows, stopped or not.
func (v ecsView) started(j int32, wantStopped bool) []string {
	var arns []string
	jb := &v.c.d.e.jobs[j]
	for a := int32(1); a <= jb.attempt; a++ {
		if !v.known(j, int(a)) {
			continue
		}
		_, yielded := v.c.yields[taskKey{j, a}]
		if stopped := yielded || jb.state >= jobSucceeded; stopped == wantStopped {
			arns = append(arns, taskARN(v.c.d.ids[j], int(a)))
		}
	}
	return arns
}

// Stop implements reconcile.Tasks. The reconciler stops only jobs past
// their timeout, and simulated jobs have none.
func (v ecsView) Stop(context.Context, string, string) error {
	return errors.New("simulator: StopTask is not simulated (jobs have no timeout)")
}

// taskEvent is one ECS Task State Change on its way to the task-events
// function.
type taskEvent struct {
	job     int32
	attempt int32
	stopped bool
	yielded bool          // stopped by the yield step while starting (UserInitiated, taskevent.YieldReason)
	ok      bool          // stopped: exit code 0
	at      time.Duration // when the task changed: the event's time
	runAt   time.Duration // when the container started (a yielded task: when it was created)
}

// emit sends job j's task state change (RUNNING, or STOPPED) as ECS does
// (sendEvent).
func (c *chaos) emit(j int32, stopped bool) {
	e := c.d.e
	jb := &e.jobs[j]
	c.sendEvent(taskEvent{job: j, attempt: jb.attempt, stopped: stopped, ok: jb.state == jobSucceeded, at: e.now, runAt: jb.runAt})
}

// providerFailed is job j's task of attempt a exiting on the provider's
// errors with attempts left (engine.exit): ECS describes it stopped from
// now on, and sends its STOPPED event as it sends the others.
func (c *chaos) providerFailed(j, a int32) {
	e := c.d.e
	runAt := e.jobs[j].runAt
	c.providerStops[taskKey{j, a}] = providerStop{runAt: runAt, at: e.now}
	c.sendEvent(taskEvent{job: j, attempt: a, stopped: true, at: e.now, runAt: runAt})
}

// yield is the yield step's StopTask of job j's task of attempt a, which
// the engine has stopped while it started (engine.yield): ECS describes
// the task stopped from now on, and sends its STOPPED event, with the
// yield's stop code and reason, as it sends the others.
func (c *chaos) yield(j int32, a int32) {
	e := c.d.e
	c.yields[taskKey{j, a}] = e.now
	c.sendEvent(taskEvent{job: j, attempt: a, stopped: true, yielded: true, at: e.now, runAt: min(e.jobs[j].admitAt, e.now)})
}

// sendEvent sends a task's state change as ECS does: at least once and in
// any order. During an events episode an event may be lost, duplicated,
// delayed by minutes, or (a RUNNING event) held back until after its
// task's STOPPED event.
func (c *chaos) sendEvent(ev taskEvent) {
	e := c.d.e
	j, stopped := ev.job, ev.stopped
	at := e.now // when the event reaches the handler; -1: never
	if ev.yielded && c.d.loseYields {
		c.stats.EventsLost++
		c.stats.YieldEventsLost++
		return
	}
	if _, ok := c.plan.Active(faults.SrcEvents, e.now); ok {
		p := c.plan
		switch x := p.Draw(faults.Events).Float64(); {
		case x < 0.08:
			p.Count(faults.Events)
			c.stats.EventsLost++
			if ev.yielded {
				c.stats.YieldEventsLost++
			}
			at = -1
		case x < 0.20:
			p.Count(faults.Events)
			c.later(ev, e.now+p.Between(faults.Events, time.Second, 3*time.Minute))
		case x < 0.32:
			p.Count(faults.Events)
			at = e.now + p.Between(faults.Events, 30*time.Second, 5*time.Minute)
		case x < 0.42 && !stopped:
			p.Count(faults.Events)
			c.held[j] = ev
			return
		}
	}
	switch {
	case at == e.now:
		c.deliver(ev)
	case at > 0:
		c.later(ev, at)
	}
	if held, ok := c.held[j]; ok && stopped {
		// The RUNNING event held back comes after this one.
		delete(c.held, j)
		if at > e.now {
			c.later(held, at)
		} else {
			c.deliver(held)
		}
	}
}

// later delivers ev at time at.
func (c *chaos) later(ev taskEvent, at time.Duration) {
	var i int32
	if n := len(c.free); n > 0 {
		i, c.free = c.free[n-1], c.free[:n-1]
		c.pending[i] = ev
	} else {
		i = int32(len(c.pending))
		c.pending = append(c.pending, ev)
	}
	c.d.e.schedule(at, evDeliver, i)
}

func (c *chaos) deliverPending(i int32) {
	ev := c.pending[i]
	c.free = append(c.free, i)
	c.deliver(ev)
}

// deliver hands the event to the real task-events handler, as EventBridge
// does. A handler error (a throttled write) makes EventBridge deliver the
// event again after a backoff.
func (c *chaos) deliver(ev taskEvent) {
	d := c.d
	err := c.handler.Handle(d.ctx, c.eventJSON(ev))
	if err != nil {
		if !onlyInjected(err) {
			d.violation("task event of job %s: %v", d.jobName(ev.job), err)
		}
		c.stats.EventRetries++
		c.later(ev, d.e.now+c.plan.Between(faults.Store, 10*time.Second, 90*time.Second))
	}
	d.checkEvent()
}

// eventJSON writes the event as EventBridge delivers it (events/ has real
// ones): the task's ARN, startedBy, status, times, exit code and the
// EVALSCHED_ATTEMPT override the handler reads the attempt from.
func (c *chaos) eventJSON(ev taskEvent) []byte {
	id := c.d.ids[ev.job]
	arn := taskARN(id, int(ev.attempt))
	b := c.buf[:0]
	b = append(b, `{"version":"0","id":"sim","detail-type":"ECS Task State Change","source":"aws.ecs","account":"000000000000","time":"`...)
	b = Epoch.Add(ev.at).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","region":"sim","resources":["`...)
	b = append(b, arn...)
	b = append(b, `"],"detail":{"taskArn":"`...)
	b = append(b, arn...)
	b = append(b, `","startedBy":"`...)
	b = append(b, id...)
	if ev.yielded {
		// Stopped while starting: created, never started, no exit code.
		b = append(b, `","createdAt":"`...)
		b = Epoch.Add(ev.runAt).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","lastStatus":"STOPPED","version":3,"stopCode":"UserInitiated","stoppedReason":"`+taskevent.YieldReason+`","stoppedAt":"`...)
		b = Epoch.Add(ev.at).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","containers":[{"name":"sandbox","lastStatus":"STOPPED"`...)
		return c.overrides(b, ev)
	}
	b = append(b, `","startedAt":"`...)
	b = Epoch.Add(ev.runAt).AppendFormat(b, time.RFC3339Nano)
	if ev.stopped {
		b = append(b, `","lastStatus":"STOPPED","version":3,"stopCode":"EssentialContainerExited","stoppedReason":"Essential container in task exited","stoppedAt":"`...)
		b = Epoch.Add(ev.at).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","containers":[{"name":"sandbox","lastStatus":"STOPPED","exitCode":`...)
		if ev.ok {
			b = append(b, '0')
		} else {
			b = append(b, '1')
		}
	} else {
		b = append(b, `","lastStatus":"RUNNING","version":2,"containers":[{"name":"sandbox","lastStatus":"RUNNING"`...)
	}
	return c.overrides(b, ev)
}

// overrides ends the event: the container list, and the overrides.
func (c *chaos) overrides(b []byte, ev taskEvent) []byte {
	b = append(b, `}],"overrides":{"containerOverrides":[{"name":"sandbox","environment":[{"name":"`+sandboxenv.Attempt+`","value":"`...)
	b = strconv.AppendInt(b, int64(ev.attempt), 10)
	b = append(b, `"}]}]}}}`...)
	c.buf = b
	return b
}
