package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// Store is what the reconciler reads and repairs.
type Store interface {
	InFlight(ctx context.Context) ([]scheduler.InFlight, error)
	RecordLaunches(ctx context.Context, now time.Time, results []scheduler.LaunchResult) error
	TaskStarted(ctx context.Context, jobID string, attempt int, now time.Time) error
	TaskStopped(ctx context.Context, jobID string, attempt int, exit job.Exit, now time.Time) error
}

// Tasks is ECS as the reconciler reads it, in plain values: ecstasks
// adapts the ECS API; the simulator answers from its own task table.
type Tasks interface {
	// Started describes the tasks the job started (startedBy: every
	// attempt's), running ones first, at most describeBatch.
	Started(ctx context.Context, jobID string) ([]Task, error)
	// Describe returns the tasks ECS knows among arns (at most
	// describeBatch), by ARN.
	Describe(ctx context.Context, arns []string) (map[string]Task, error)
	// Stop stops a task with the reason.
	Stop(ctx context.Context, arn, reason string) error
}

// Reconciler compares the store with ECS and repairs the difference: the
// Judge decides, Run reads and writes.
type Reconciler struct {
	Store        Store
	Tasks        Tasks
	Events       taskevent.Config // the exit-code convention
	ClaimGrace   time.Duration    // default 2m: a claim older than this was never recorded
	MissingGrace time.Duration    // default 5m: a task ECS no longer knows after this is lost
	Log          *slog.Logger
}

// Report counts the repairs of one run.
type Report struct {
	InFlight  int `json:"in_flight"`
	Recorded  int `json:"recorded"`  // claims whose task existed: launch recorded
	Requeued  int `json:"requeued"`  // claims or tasks with no task: back to waiting
	Started   int `json:"started"`   // lost RUNNING events
	Ended     int `json:"ended"`     // lost STOPPED events
	TimedOut  int `json:"timed_out"` // stopped at their timeout
	Unchanged int `json:"unchanged"`
}

// describeBatch is DescribeTasks' limit of tasks per call.
const describeBatch = 100

// Run makes one reconciliation at time now. It goes on past a failed repair
// and returns the failures joined.
func (r *Reconciler) Run(ctx context.Context, now time.Time) (Report, error) {
	g := Judge{ClaimGrace: cmp.Or(r.ClaimGrace, 2*time.Minute), MissingGrace: cmp.Or(r.MissingGrace, 5*time.Minute), Events: r.Events}
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	var rep Report
	jobs, err := r.Store.InFlight(ctx)
	if err != nil {
		return rep, fmt.Errorf("reconcile: %w", err)
	}
	rep.InFlight = len(jobs)
	var errs []error
	fail := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	// 1. Launches never recorded.
	var launched []scheduler.InFlight
	for _, j := range jobs {
		switch {
		case g.Unrecorded(j, now):
			tasks, err := r.Tasks.Started(ctx, j.ID)
			if err != nil {
				fail(fmt.Errorf("reconcile: tasks of %s: %w", j.ID, err))
				continue
			}
			task := Pick(j, tasks)
			log.Warn("reconcile: launch never recorded", "job", j.ID, "state", j.State, "task", task.ARN)
			switch rp := g.Found(j, task, now); rp.Action {
			case RecordLaunch:
				fail(r.Store.RecordLaunches(ctx, now, []scheduler.LaunchResult{{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: rp.ARN}}))
				rep.Recorded++
			case RetryLaunch:
				fail(r.Store.RecordLaunches(ctx, now, []scheduler.LaunchResult{{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Retry, Reason: rp.Reason}}))
				rep.Requeued++
			case Describe:
				j.TaskARN = rp.ARN
				launched = append(launched, j)
				rep.Recorded++
			case Lost:
				fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, rp.Exit, rp.At))
				rep.Requeued++
			default:
				rep.Unchanged++
			}
		case j.TaskARN != "":
			launched = append(launched, j)
		default:
			rep.Unchanged++
		}
	}

	// 2. Tasks: what ECS says of them.
	for start := 0; start < len(launched); start += describeBatch {
		batch := launched[start:min(start+describeBatch, len(launched))]
		arns := make([]string, len(batch))
		for i, j := range batch {
			arns[i] = j.TaskARN
		}
		tasks, err := r.Tasks.Describe(ctx, arns)
		if err != nil {
			fail(fmt.Errorf("reconcile: describe %d tasks: %w", len(arns), err))
			continue
		}
		for _, j := range batch {
			t, known := tasks[j.TaskARN]
			switch rp := g.Launched(j, t, known, now); rp.Action {
			case Lost:
				log.Warn("reconcile: task missing from ECS", "job", j.ID, "task", j.TaskARN)
				fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, rp.Exit, rp.At))
				rep.Requeued++
			case End:
				log.Warn("reconcile: lost STOPPED event", "job", j.ID, "task", j.TaskARN, "kind", string(rp.Kind))
				fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, rp.Exit, rp.At))
				rep.Ended++
			case Start:
				log.Warn("reconcile: lost RUNNING event", "job", j.ID, "task", j.TaskARN)
				fail(r.Store.TaskStarted(ctx, j.ID, j.Attempt, rp.At))
				rep.Started++
			case StopTimedOut:
				if err := r.Tasks.Stop(ctx, j.TaskARN, "evalsched: "+rp.Reason); err != nil {
					fail(fmt.Errorf("reconcile: stop %s: %w", j.TaskARN, err))
					continue
				}
				log.Info("reconcile: stopped a job past its timeout", "job", j.ID, "task", j.TaskARN)
				fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, rp.Exit, rp.At))
				rep.TimedOut++
			default:
				rep.Unchanged++
			}
		}
	}
	return rep, errors.Join(errs...)
}
