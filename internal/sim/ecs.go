package sim

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/taskevent"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// ECS, as the faulted simulation shows it to evalsched: the task of each
// job's newest attempt, described from the simulator's own record of the
// job (ecsView, for the reconciler), and ECS Task State Change events for
// the task-events handler.

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
func (v ecsView) task(arn string) (int32, bool) {
	rest, ok := strings.CutPrefix(arn, taskARNPrefix)
	if !ok {
		return 0, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return 0, false
	}
	j, ok := v.c.d.byID[rest[:i]]
	attempt, err := strconv.Atoi(rest[i+1:])
	if !ok || err != nil || !v.known(j, attempt) {
		return 0, false
	}
	return j, true
}

// known reports whether ECS knows job j's task of attempt a at its time:
// RunTask has been issued, and the task did not stop more than an hour ago.
func (v ecsView) known(j int32, a int) bool {
	jb := &v.c.d.e.jobs[j]
	now := v.now()
	switch {
	case !v.c.hasTask(j, a) || jb.admitAt > now:
		return false
	case jb.state >= jobSucceeded:
		return now-jb.endAt <= forgetAfter
	}
	return true
}

func (v ecsView) describe(j int32) types.Task {
	d := v.c.d
	jb := &d.e.jobs[j]
	id := d.ids[j]
	t := types.Task{
		TaskArn: aws.String(taskARN(id, int(jb.attempt))), StartedBy: aws.String(id),
		Group: aws.String("model:" + d.e.models[jb.model].cfg.Name), LastStatus: aws.String("PENDING"),
		Containers: []types.Container{{Name: aws.String("sandbox")}},
	}
	if jb.state >= jobRunning {
		t.LastStatus, t.StartedAt = aws.String("RUNNING"), aws.Time(Epoch.Add(jb.runAt))
	}
	if jb.state >= jobSucceeded {
		code := int32(0)
		if jb.state == jobFailed {
			code = 1
		}
		t.LastStatus, t.StoppedAt = aws.String("STOPPED"), aws.Time(Epoch.Add(jb.endAt))
		t.StopCode, t.StoppedReason = types.TaskStopCodeEssentialContainerExited, aws.String("Essential container in task exited")
		t.Containers[0].ExitCode = aws.Int32(code)
	}
	return t
}

// DescribeTasks implements reconcile.ECS.
func (v ecsView) DescribeTasks(_ context.Context, in *ecs.DescribeTasksInput, _ ...func(*ecs.Options)) (*ecs.DescribeTasksOutput, error) {
	out := &ecs.DescribeTasksOutput{}
	for _, arn := range in.Tasks {
		if j, ok := v.task(arn); ok {
			out.Tasks = append(out.Tasks, v.describe(j))
		} else {
			out.Failures = append(out.Failures, types.Failure{Arn: aws.String(arn), Reason: aws.String("MISSING")})
		}
	}
	return out, nil
}

// ListTasks implements reconcile.ECS: the tasks a job started (startedBy),
// running or stopped.
func (v ecsView) ListTasks(_ context.Context, in *ecs.ListTasksInput, _ ...func(*ecs.Options)) (*ecs.ListTasksOutput, error) {
	out := &ecs.ListTasksOutput{}
	j, ok := v.c.d.byID[aws.ToString(in.StartedBy)]
	if !ok {
		return out, nil
	}
	jb := &v.c.d.e.jobs[j]
	if !v.known(j, int(jb.attempt)) {
		return out, nil
	}
	stopped := jb.state >= jobSucceeded
	if stopped == (in.DesiredStatus == types.DesiredStatusStopped) {
		out.TaskArns = []string{taskARN(v.c.d.ids[j], int(jb.attempt))}
	}
	return out, nil
}

// StopTask implements reconcile.ECS. The reconciler stops only jobs past
// their timeout, and simulated jobs have none.
func (v ecsView) StopTask(context.Context, *ecs.StopTaskInput, ...func(*ecs.Options)) (*ecs.StopTaskOutput, error) {
	return nil, errors.New("simulator: StopTask is not simulated (jobs have no timeout)")
}

// taskEvent is one ECS Task State Change on its way to the task-events
// function.
type taskEvent struct {
	job     int32
	attempt int32
	stopped bool
	ok      bool          // stopped: exit code 0
	at      time.Duration // when the task changed: the event's time
	runAt   time.Duration
}

// emit sends job j's task state change (RUNNING, or STOPPED) as ECS does:
// at least once and in any order. During an events episode an event may
// be lost, duplicated, delayed by minutes, or (a RUNNING event) held back
// until after its task's STOPPED event.
func (c *chaos) emit(j int32, stopped bool) {
	e := c.d.e
	jb := &e.jobs[j]
	ev := taskEvent{job: j, attempt: jb.attempt, stopped: stopped, ok: jb.state == jobSucceeded, at: e.now, runAt: jb.runAt}
	at := e.now // when the event reaches the handler; -1: never
	if _, ok := c.plan.Active(faults.SrcEvents, e.now); ok {
		p := c.plan
		switch x := p.Draw(faults.Events).Float64(); {
		case x < 0.08:
			p.Count(faults.Events)
			c.stats.EventsLost++
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
	b = append(b, `}],"overrides":{"containerOverrides":[{"name":"sandbox","environment":[{"name":"`+sandboxenv.Attempt+`","value":"`...)
	b = strconv.AppendInt(b, int64(ev.attempt), 10)
	b = append(b, `"}]}]}}}`...)
	c.buf = b
	return b
}
