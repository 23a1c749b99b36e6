package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/sandboxkit"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// Model is one simulated model: a provider serving Concurrency calls at
// once behind a FIFO gateway, and what its sandboxes do.
type Model struct {
	Name        string
	Concurrency int           // provider concurrency
	Call        time.Duration // one call's service time (mean, exponential)
	Think       time.Duration // sandbox time between calls
	Calls       int           // calls per job
	Start       time.Duration // RunTask → container running
	// PassRate is the chance a job's verdict is pass (0: one in two), a
	// fixed function of the job's key: the same job passes every attempt.
	PassRate float64
}

// DefaultModel is the model of a job whose model the world was not told.
func DefaultModel(name string) Model {
	return Model{Name: name, Concurrency: 20, Call: 8 * time.Second, Think: 4 * time.Second, Calls: 10, Start: 30 * time.Second}
}

// events receives the task state changes the world's sandboxes produce.
type eventHandler interface {
	Handle(ctx context.Context, raw json.RawMessage) error
}

// world is the simulated gateway and Fargate. It implements
// scheduler.Launcher; its gateway's depth reaches the pass as on AWS,
// through its /metrics, the bridge and CloudWatch (metrics.go).
type world struct {
	speed  float64
	events eventHandler
	mu     sync.Mutex
	models map[string]*gateway
	known  map[string]Model
	seq    atomic.Int64
	wg     sync.WaitGroup
	ctx    context.Context
	// tasks holds each running sandbox's stop, by task ARN, for StopTask.
	tasks map[string]func(reason string)
	// report sends a finished job's verdict, as a sandbox does with
	// sandboxkit (nil: none is sent).
	report sandboxkit.Reporter
	log    *slog.Logger
}

// gateway is one model's queue in front of its provider.
type gateway struct {
	slots   chan struct{} // provider concurrency
	waiting atomic.Int64  // calls queued, not in service: the depth
}

func newWorld(ctx context.Context, speed float64, models []Model, ev eventHandler) *world {
	w := &world{speed: speed, events: ev, models: map[string]*gateway{}, known: map[string]Model{}, ctx: ctx, tasks: map[string]func(string){}}
	for _, m := range models {
		w.known[m.Name] = m
	}
	return w
}

func (w *world) model(name string) (Model, *gateway) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.known[name]
	if !ok {
		m = DefaultModel(name)
		w.known[name] = m
	}
	g, ok := w.models[name]
	if !ok {
		g = &gateway{slots: make(chan struct{}, m.Concurrency)}
		w.models[name] = g
	}
	return m, g
}

// sleep waits d compressed by the speed, or until ctx (the world's or the
// task's) ends.
func (w *world) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(time.Duration(float64(d) / w.speed))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Launch implements scheduler.Launcher: every task starts (Fargate never
// refuses here) and runs its job in a goroutine.
func (w *world) Launch(_ context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	out := make([]scheduler.LaunchResult, len(jobs))
	for i, j := range jobs {
		arn := fmt.Sprintf("arn:aws:ecs:local:000000000000:task/local/%032x", w.seq.Add(1))
		out[i] = scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: arn}
		w.wg.Add(1)
		go w.run(j, arn)
	}
	return out
}

// run is one sandbox: start, call the gateway Calls times, stop. A
// StopTask ends it early with the STOPPED event ECS sends for a stopped task.
func (w *world) run(j scheduler.Job, arn string) {
	defer w.wg.Done()
	ctx, cancel := context.WithCancel(w.ctx)
	var stopReason atomic.Pointer[string]
	w.mu.Lock()
	w.tasks[arn] = func(reason string) { stopReason.Store(&reason); cancel() }
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.tasks, arn)
		w.mu.Unlock()
		cancel()
	}()
	m, g := w.model(j.Model)
	rng := rand.New(rand.NewPCG(uint64(w.seq.Load()), 7))
	created, started := time.Now(), time.Time{}
	stopped := func() {
		if r := stopReason.Load(); r != nil && w.ctx.Err() == nil {
			w.emitStopped(j, arn, created, started, "UserInitiated", *r)
		}
	}
	// Stopped while starting (the yield step's StopTask, or a cancel): ECS
	// sends the one STOPPED event, never RUNNING, also when the stop came
	// as the start ended.
	if !w.sleep(ctx, m.Start) || ctx.Err() != nil {
		stopped()
		return
	}
	started = time.Now()
	w.emit(j, arn, "RUNNING", created, started, nil)
	for range m.Calls {
		g.waiting.Add(1)
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			g.waiting.Add(-1)
			stopped()
			return
		}
		g.waiting.Add(-1)
		ok := w.sleep(ctx, time.Duration(rng.ExpFloat64()*float64(m.Call)))
		<-g.slots
		if !ok || !w.sleep(ctx, m.Think) {
			stopped()
			return
		}
	}
	if w.report != nil {
		// The sandbox's last act before it exits: its verdict to the
		// results queue (the role it runs with may do nothing else).
		r := sandboxkit.Result{Job: sandboxkit.Job{ID: j.ID, Account: j.Account, Project: j.Project, Batch: j.Batch, Model: j.Model, Attempt: j.Attempt,
			ResultToken: j.ResultToken.Reveal()},
			Outcome: verdict(m, j.Key)}
		if err := w.report.Report(ctx, r); err != nil && w.ctx.Err() == nil && w.log != nil {
			w.log.Warn("sandbox: result not sent", "job", j.ID, "err", err)
		}
	}
	code := 0
	w.emit(j, arn, "STOPPED", created, started, &code)
}

// verdict is the job's simulated outcome: pass with the model's PassRate,
// by the job's key (sampling.Rank of it), so every attempt agrees.
func verdict(m Model, key string) sandboxkit.Outcome {
	rate := m.PassRate
	if rate == 0 {
		rate = 0.5
	}
	if float64(sampling.Rank("verdict", key)%10_000) < rate*10_000 {
		return sandboxkit.Pass
	}
	return sandboxkit.Fail
}

// StopTask stops a sandbox, starting or running, as ECS's StopTask does: its
// STOPPED event (stopCode UserInitiated, the reason given) follows, and a
// task still starting never sends RUNNING. It reports whether the world had
// the task.
func (w *world) StopTask(arn, reason string) bool {
	w.mu.Lock()
	stop, ok := w.tasks[arn]
	w.mu.Unlock()
	if ok {
		stop(reason)
	}
	return ok
}

// emitStopped is the STOPPED event of a task stopped before its job ended.
func (w *world) emitStopped(j scheduler.Job, arn string, created, started time.Time, stopCode, reason string) {
	w.emitDetail(j, arn, "STOPPED", created, started, func(detail, _ map[string]any) {
		detail["stopCode"], detail["stoppedReason"], detail["stoppedAt"] = stopCode, reason, time.Now().UTC()
	})
}

// emit hands the task-events handler the event ECS would send.
func (w *world) emit(j scheduler.Job, arn, status string, created, started time.Time, exit *int) {
	w.emitDetail(j, arn, status, created, started, func(detail, container map[string]any) {
		if exit != nil {
			container["exitCode"] = *exit
			detail["stopCode"], detail["stoppedReason"], detail["stoppedAt"] = "EssentialContainerExited", "Essential container in task exited", time.Now().UTC()
		}
	})
}

// emitDetail builds the event of a task of job j and lets edit add to its
// detail and its container before handing it over.
func (w *world) emitDetail(j scheduler.Job, arn, status string, created, started time.Time, edit func(detail, container map[string]any)) {
	env := []map[string]string{
		{"name": sandboxenv.JobID, "value": j.ID},
		{"name": sandboxenv.Model, "value": j.Model},
		{"name": sandboxenv.Attempt, "value": fmt.Sprint(j.Attempt)},
	}
	if !j.SubmittedAt.IsZero() {
		env = append(env, map[string]string{"name": sandboxenv.SubmittedAt, "value": j.SubmittedAt.UTC().Format(time.RFC3339)})
	}
	container := map[string]any{"name": "sandbox", "lastStatus": status}
	detail := map[string]any{
		"taskArn": arn, "startedBy": j.ID, "group": "model:" + j.Model, "lastStatus": status,
		"createdAt": created.UTC(), "containers": []any{container},
		"overrides": map[string]any{"containerOverrides": []any{map[string]any{"name": "sandbox", "environment": env}}},
	}
	if !started.IsZero() {
		detail["startedAt"] = started.UTC()
	}
	edit(detail, container)
	raw, _ := json.Marshal(map[string]any{"version": "0", "source": "aws.ecs", "detail-type": "ECS Task State Change", "time": time.Now().UTC(), "detail": detail})
	_ = w.events.Handle(w.ctx, raw) // a failure is logged by the handler; the world goes on
}
