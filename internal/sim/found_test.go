package sim

// Bugs that `evalsched sim --faults` found outside the simulator, each as a
// plain test of the code at fault, failing until it is fixed. Each belongs
// in the package it names; it lives here because the simulator's owner may
// not change those packages.

import (
	"context"
	"errors"
	"testing"
	"time"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// TestReconcilerEndsARunningJobWhoseLaunchWasNeverRecorded belongs in
// internal/reconcile.
//
// A pass claims a job and RunTask starts its task, but the launch is never
// recorded: the scheduler died after RunTask returned, or DynamoDB throttled
// RecordLaunches. The task's RUNNING event then moves the CLAIMED job to
// RUNNING (both stores accept RUNNING on a claimed job), with no task ARN:
// TaskStarted carries none. From then on the reconciler never looks at the
// job: step 1 takes only CLAIMED jobs without an ARN, step 2 only jobs with
// one. If the task's STOPPED event is lost, the job stays RUNNING forever,
// holding a slot of its model; its batch never ends (nor would its timeout
// stop it). Under --faults all this happens in most seeds of the shipped
// scenarios (crash or store throttling, then a lost event).
func TestReconcilerEndsARunningJobWhoseLaunchWasNeverRecorded(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fixedClock{t0}
	st := memstore.New(scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 10, InitialLimit: 1, TargetDepth: 10})
	if _, err := st.Submit(ctx, domain.BatchSpec{Account: "a", Project: "p", Batch: "b", Model: "m", Tier: -1,
		Jobs: []domain.JobSpec{{Key: "k"}}}, t0); err != nil {
		t.Fatal(err)
	}
	fake := &oneTaskECS{}

	// 1. The pass claims the job, RunTask starts its task, and recording
	// the launch fails (throttled): the pass returns an error.
	sched := &scheduler.Scheduler{Store: unrecorded{st}, Launcher: fake, Clock: clock, Config: scheduler.DefaultConfig(), Log: discardLog}
	if _, err := sched.Pass(ctx); err == nil {
		t.Fatal("the pass recorded its launches; want the throttled RecordLaunches to fail it")
	}
	id := domain.JobID("a", "p", "b", "k")
	if fake.arn == "" {
		t.Fatal("the pass launched nothing")
	}

	// 2. The task runs; its RUNNING event lands.
	fake.status, fake.startedAt = "RUNNING", t0.Add(40*time.Second)
	if err := st.TaskStarted(ctx, id, 1, fake.startedAt); err != nil {
		t.Fatal(err)
	}

	// 3. The task exits 0 at 10 min; its STOPPED event is lost.
	fake.status, fake.stoppedAt = "STOPPED", t0.Add(10*time.Minute)

	// 4. The reconciler runs once a minute for the next 20 minutes.
	r := &reconcile.Reconciler{Store: st, Tasks: fake, Log: discardLog}
	for m := 11; m <= 30; m++ {
		if _, err := r.Run(ctx, t0.Add(time.Duration(m)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := st.Job(id)
	if j.State != domain.Succeeded {
		t.Errorf("20 minutes after its task stopped the job is %s with task ARN %q, holding a slot; want SUCCEEDED: "+
			"the reconciler repairs no in-flight job without a task ARN unless it is CLAIMED", j.State, j.TaskARN)
	}
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

// unrecorded is a store whose RecordLaunches is throttled.
type unrecorded struct{ *memstore.Store }

func (unrecorded) RecordLaunches(context.Context, time.Time, []scheduler.LaunchResult) error {
	return errors.New("ProvisionedThroughputExceededException")
}

// oneTaskECS starts one task (as the launcher) and describes it (as ECS).
type oneTaskECS struct {
	arn, startedBy       string
	status               string
	startedAt, stoppedAt time.Time
}

func (f *oneTaskECS) Launch(_ context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	out := make([]scheduler.LaunchResult, len(jobs))
	for i, j := range jobs {
		f.arn, f.startedBy, f.status = "arn:aws:ecs:us-east-1:123456789012:task/c/1", j.ID, "PENDING"
		out[i] = scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: f.arn}
	}
	return out
}

func (f *oneTaskECS) task() reconcile.Task {
	t := reconcile.Task{ARN: f.arn, Status: f.status, StartedAt: f.startedAt, Containers: []taskevent.Container{{Name: "sandbox"}}}
	if f.status == "STOPPED" {
		t.StoppedAt, t.StopCode = f.stoppedAt, "EssentialContainerExited"
		t.Containers[0].ExitCode = new(int)
	}
	return t
}

func (f *oneTaskECS) Describe(_ context.Context, arns []string) (map[string]reconcile.Task, error) {
	out := map[string]reconcile.Task{}
	for _, arn := range arns {
		if arn == f.arn {
			out[arn] = f.task()
		}
	}
	return out, nil
}

func (f *oneTaskECS) Started(_ context.Context, jobID string) ([]reconcile.Task, error) {
	if f.arn != "" && jobID == f.startedBy {
		return []reconcile.Task{f.task()}, nil
	}
	return nil, nil
}

func (f *oneTaskECS) Stop(context.Context, string, string) error {
	return errors.New("not expected")
}
