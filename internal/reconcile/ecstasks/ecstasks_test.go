package ecstasks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/reconcile/ecstasks"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// world is a store with six claimed jobs, an ECS fake and a launcher on it.
type world struct {
	store *memstore.Store
	fake  *httpfake.ECS
	ecs   *ecs.Client
	jobs  []scheduler.Job
	r     *reconcile.Reconciler
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{store: memstore.New(scheduler.ModelConfig{}), fake: httpfake.NewECS()}
	t.Cleanup(w.fake.Close)
	w.ecs = ecs.New(ecs.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("t", "t", ""),
		BaseEndpoint: aws.String(w.fake.URL()), RetryMaxAttempts: 1})
	spec := job.BatchSpec{Account: "acme", Project: "p", Batch: "b", Model: "gpt", Tier: -1, TimeoutSeconds: 600}
	for i := range 6 {
		spec.Jobs = append(spec.Jobs, job.JobSpec{Key: fmt.Sprint(i)})
	}
	if _, err := w.store.Submit(ctx, spec, t0); err != nil {
		t.Fatal(err)
	}
	committed, err := w.store.Commit(ctx, scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: "gpt", Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "acme", Project: "p", Batch: "b", Model: "gpt"}, Count: 6}}}}}, nil)
	jobs := committed.Claimed
	if err != nil {
		t.Fatal(err)
	}
	w.jobs = jobs
	w.r = &reconcile.Reconciler{Store: w.store, Tasks: ecstasks.Tasks{ECS: w.ecs, Cluster: "sandbox"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return w
}

// launch starts tasks for the jobs through the real launcher.
func (w *world) launch(t *testing.T, jobs ...scheduler.Job) []scheduler.LaunchResult {
	t.Helper()
	l := ecslauncher.New(w.ecs, ecslauncher.Config{Cluster: "sandbox", Subnets: []string{"s"}, ContainerName: "sandbox",
		DefaultTaskDefinition: "td:1", Rate: 1000, Burst: 1000}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return l.Launch(context.Background(), jobs)
}

func (w *world) state(t *testing.T, i int) memstore.Job {
	t.Helper()
	j, _ := w.store.Job(w.jobs[i].ID)
	return j
}

func TestReconcileRepairsEveryLostEvent(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	// Job 0: claimed, then the pass died before RunTask: no task.
	// Job 1: claimed, RunTask started a task, the pass died before recording it.
	w.launch(t, w.jobs[1])
	// Jobs 2–5: launched and recorded.
	res := w.launch(t, w.jobs[2:]...)
	if err := w.store.RecordLaunches(ctx, t0, res); err != nil {
		t.Fatal(err)
	}
	arn := func(i int) string { return res[i-2].TaskARN }
	// Job 2: its RUNNING event was lost.
	w.fake.SetStatus(arn(2), "RUNNING")
	// Job 3: its STOPPED (exit 0) event was lost; it ran.
	zero := 0
	if err := w.store.TaskStarted(ctx, w.jobs[3].ID, 1, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	w.fake.Stop(arn(3), "EssentialContainerExited", "Essential container in task exited", &zero)
	// Job 4: running past its 600 s timeout.
	if err := w.store.TaskStarted(ctx, w.jobs[4].ID, 1, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	w.fake.SetStatus(arn(4), "RUNNING")
	// Job 5: ECS forgot its task.
	w.fake.Forget(arn(5))

	rep, err := w.r.Run(ctx, t0.Add(12*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := reconcile.Report{InFlight: 6, Recorded: 1, Requeued: 2, Started: 1, Ended: 1, TimedOut: 1}
	if rep != want {
		t.Errorf("got %+v, want %+v", rep, want)
	}
	for i, st := range []job.State{job.Waiting, job.Launched, job.Running, job.Succeeded, job.Failed, job.Waiting} {
		if got := w.state(t, i); got.State != st {
			t.Errorf("job %d: got %s (%s), want %s", i, got.State, got.Reason, st)
		}
	}
	if j := w.state(t, 4); !strings.Contains(j.Reason, "timeout") {
		t.Errorf("job 4: got reason %q, want the timeout", j.Reason)
	}
	if j := w.state(t, 0); j.Attempt != 2 {
		t.Errorf("job 0: got attempt %d, want 2", j.Attempt)
	}
	if w.fake.Calls["StopTask"] != 1 {
		t.Errorf("got %d StopTask calls, want 1", w.fake.Calls["StopTask"])
	}
	if err := w.store.Check(); err != nil {
		t.Fatal(err)
	}

	// A second run finds nothing more to repair (and the recorded job 1 is
	// now seen through DescribeTasks).
	rep, err = w.r.Run(ctx, t0.Add(13*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recorded+rep.Requeued+rep.Started+rep.Ended+rep.TimedOut != 0 {
		t.Errorf("second run repaired again: %+v", rep)
	}
}

func TestReconcileLeavesYoungClaimsAlone(t *testing.T) {
	w := newWorld(t)
	rep, err := w.r.Run(context.Background(), t0.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unchanged != 6 || w.fake.Calls["ListTasks"] != 0 {
		t.Errorf("got %+v with %d ListTasks, want six untouched claims", rep, w.fake.Calls["ListTasks"])
	}
}

func TestReconcileFindsTheTaskOfARunningJobWithoutARecordedLaunch(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	// Job 0's task started and ran, its launch never recorded, its RUNNING
	// event applied (the job is RUNNING without an ARN), its STOPPED lost.
	res := w.launch(t, w.jobs[0])
	if err := w.store.TaskStarted(ctx, w.jobs[0].ID, 1, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	zero := 0
	w.fake.Stop(res[0].TaskARN, "EssentialContainerExited", "exited", &zero)
	// Job 1 was retried once: attempt 1's task exists (stopped), attempt 2
	// was claimed and never launched. The old task must not count for it.
	old := w.launch(t, w.jobs[1])
	w.fake.Stop(old[0].TaskARN, "TaskFailedToStart", "capacity", nil)
	if err := w.store.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: w.jobs[1].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"}}); err != nil {
		t.Fatal(err)
	}
	committed, err := w.store.Commit(ctx, scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: "gpt", Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "acme", Project: "p", Batch: "b", Model: "gpt"}, Count: 1}}}}}, nil)
	again := committed.Claimed
	if err != nil || len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("re-claim: %v %+v", err, again)
	}

	if _, err := w.r.Run(ctx, t0.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if j := w.state(t, 0); j.State != job.Succeeded {
		t.Errorf("job 0: got %s (%s), want SUCCEEDED from its stopped task", j.State, j.Reason)
	}
	if j := w.state(t, 1); j.State != job.Waiting || j.Attempt != 3 {
		t.Errorf("job 1: got %s attempt %d, want back to waiting as attempt 3 (attempt 1's task is not attempt 2's)", j.State, j.Attempt)
	}
	if err := w.store.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileRequeuesARunningJobWhoseTaskIsGone: a job RUNNING without a
// recorded launch (its RUNNING event came, its launch was never recorded)
// and no task of its attempt in ECS is left alone within the missing
// grace — ECS may not list it yet — and past it goes back to waiting as
// its next attempt, its slot freed.
func TestReconcileRequeuesARunningJobWhoseTaskIsGone(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	if err := w.store.TaskStarted(ctx, w.jobs[0].ID, 1, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	rep, err := w.r.Run(ctx, t0.Add(3*time.Minute)) // past the claim grace, within the missing grace
	if err != nil {
		t.Fatal(err)
	}
	if j := w.state(t, 0); j.State != job.Running || rep.Unchanged != 1 {
		t.Fatalf("within the grace: job 0 %s, %+v; want it RUNNING and unchanged (the other five, claimed, requeued)", j.State, rep)
	}
	rep, err = w.r.Run(ctx, t0.Add(6*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if j := w.state(t, 0); j.State != job.Waiting || j.Attempt != 2 || rep.Requeued != 1 {
		t.Errorf("past the grace: job 0 %s attempt %d, %+v; want WAITING attempt 2, one requeued", j.State, j.Attempt, rep)
	}
	if c := w.store.Counts(); c.Running != 0 {
		t.Errorf("%d running, want the slot freed", c.Running)
	}
	if err := w.store.Check(); err != nil {
		t.Fatal(err)
	}
}

// ECS started job 0's task but its answer was lost (a server fault): the
// launcher reports the outcome unknown, nothing is recorded — no retry under
// a new attempt, no second task — and the reconciler finds the task by the
// job's id and records it.
func TestALaunchWithALostAnswerIsFoundNotRepeated(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.fake.LoseAnswers = 1
	res := w.launch(t, w.jobs[0])
	if res[0].Status != scheduler.Unknown || !strings.Contains(res[0].Reason, "outcome unknown") {
		t.Fatalf("got %+v, want the outcome unknown", res[0])
	}
	if err := w.store.RecordLaunches(ctx, t0, res); err != nil {
		t.Fatal(err)
	}
	if j := w.state(t, 0); j.State != job.Claimed || j.Attempt != 1 {
		t.Fatalf("job 0: got %s attempt %d, want still CLAIMED, attempt 1", j.State, j.Attempt)
	}
	rep, err := w.r.Run(ctx, t0.Add(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	j := w.state(t, 0)
	if j.State != job.Launched || j.TaskARN == "" || rep.Recorded != 1 {
		t.Errorf("job 0: got %s task %q (report %+v), want LAUNCHED with the task ECS started", j.State, j.TaskARN, rep)
	}
	if n := w.fake.Calls["RunTask"]; n != 1 {
		t.Errorf("got %d RunTask calls, want 1: the job was not launched again", n)
	}
	if err := w.store.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileEndsALostYieldAsTheEventWould: a task the scheduler yielded
// (taskevent.YieldReason) whose STOPPED event was lost is judged as the
// event would be: the job waits again at attempt 2 with one more max
// attempt, no outcome for the breaker. A task stopped by hand with another
// reason stays the job's own failure.
func TestReconcileEndsALostYieldAsTheEventWould(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	res := w.launch(t, w.jobs[0], w.jobs[1])
	if err := w.store.RecordLaunches(ctx, t0, res); err != nil {
		t.Fatal(err)
	}
	w.fake.Stop(res[0].TaskARN, "UserInitiated", taskevent.YieldReason, nil)
	w.fake.Stop(res[1].TaskARN, "UserInitiated", "stopped by hand", nil)
	if _, err := w.r.Run(ctx, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if j := w.state(t, 0); j.State != job.Waiting || j.Attempt != 2 || j.MaxAttempts != 4 || j.Reason != taskevent.YieldReason {
		t.Errorf("yielded job: %s attempt %d of %d (%q), want WAITING attempt 2 of 4 with the yield's reason", j.State, j.Attempt, j.MaxAttempts, j.Reason)
	}
	if j := w.state(t, 1); j.State != job.Failed {
		t.Errorf("job stopped by hand: %s (%q), want FAILED", j.State, j.Reason)
	}
	snap, _ := w.store.Snapshot(ctx, t0)
	if o := snap.Models[0].Outcomes; o.OK != 1 || o.ProviderFailed != 0 {
		t.Errorf("outcomes %+v, want the one failure by hand only", o)
	}
	if err := w.store.Check(); err != nil {
		t.Fatal(err)
	}
}
