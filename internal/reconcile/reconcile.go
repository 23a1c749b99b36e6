package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// Store is what the reconciler reads and repairs.
type Store interface {
	InFlight(ctx context.Context) ([]scheduler.InFlight, error)
	RecordLaunches(ctx context.Context, now time.Time, results []scheduler.LaunchResult) error
	TaskStarted(ctx context.Context, jobID string, attempt int, now time.Time) error
	TaskStopped(ctx context.Context, jobID string, attempt int, exit job.Exit, now time.Time) error
}

// ECS is the part of the ECS client the reconciler calls.
type ECS interface {
	DescribeTasks(ctx context.Context, in *ecs.DescribeTasksInput, opts ...func(*ecs.Options)) (*ecs.DescribeTasksOutput, error)
	ListTasks(ctx context.Context, in *ecs.ListTasksInput, opts ...func(*ecs.Options)) (*ecs.ListTasksOutput, error)
	StopTask(ctx context.Context, in *ecs.StopTaskInput, opts ...func(*ecs.Options)) (*ecs.StopTaskOutput, error)
}

// Reconciler compares the store with ECS and repairs the difference.
type Reconciler struct {
	Store        Store
	ECS          ECS
	Cluster      string
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
	claimGrace, missingGrace := cmp.Or(r.ClaimGrace, 2*time.Minute), cmp.Or(r.MissingGrace, 5*time.Minute)
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

	// 1. Launches never recorded: a claim whose pass died, or a job whose
	// RUNNING event came before (or instead of) the record of its launch.
	var launched []scheduler.InFlight
	for _, j := range jobs {
		state := job.State(j.State)
		switch {
		case j.TaskARN == "" && (state == job.Claimed || state == job.Running) && now.Sub(j.ClaimedAt) > claimGrace:
			task, err := r.findTask(ctx, j)
			if err != nil {
				fail(err)
				continue
			}
			arn := aws.ToString(task.TaskArn)
			log.Warn("reconcile: launch never recorded", "job", j.ID, "state", j.State, "task", arn)
			switch {
			case state == job.Claimed && arn != "":
				fail(r.Store.RecordLaunches(ctx, now, []scheduler.LaunchResult{{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: arn}}))
				rep.Recorded++
			case state == job.Claimed:
				fail(r.Store.RecordLaunches(ctx, now, []scheduler.LaunchResult{{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Retry, Reason: "claimed by a pass that never launched it"}}))
				rep.Requeued++
			case arn != "":
				// Running, its task found: judge it with the others below.
				j.TaskARN = arn
				launched = append(launched, j)
				rep.Recorded++
			case now.Sub(j.ClaimedAt) > missingGrace:
				fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, job.Exit{Infrastructure: true, Reason: "task missing from ECS"}, now))
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
		out, err := r.ECS.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(r.Cluster), Tasks: arns})
		if err != nil {
			fail(fmt.Errorf("reconcile: describe %d tasks: %w", len(arns), err))
			continue
		}
		tasks := map[string]types.Task{}
		for _, t := range out.Tasks {
			tasks[aws.ToString(t.TaskArn)] = t
		}
		for _, j := range batch {
			t, ok := tasks[j.TaskARN]
			state := job.State(j.State)
			switch {
			case !ok:
				if now.Sub(j.ClaimedAt) > missingGrace {
					log.Warn("reconcile: task missing from ECS", "job", j.ID, "task", j.TaskARN)
					fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, job.Exit{Infrastructure: true, Reason: "task missing from ECS"}, now))
					rep.Requeued++
				} else {
					rep.Unchanged++
				}
			case aws.ToString(t.LastStatus) == "STOPPED":
				kind, code, reason := ReadStopped(t, r.Events)
				at := now
				if t.StoppedAt != nil {
					at = *t.StoppedAt
				}
				log.Warn("reconcile: lost STOPPED event", "job", j.ID, "task", j.TaskARN, "kind", string(kind))
				fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, taskevent.ExitOf(kind, code, reason), at))
				rep.Ended++
			case state == job.Launched && aws.ToString(t.LastStatus) == "RUNNING":
				at := now
				if t.StartedAt != nil {
					at = *t.StartedAt
				}
				log.Warn("reconcile: lost RUNNING event", "job", j.ID, "task", j.TaskARN)
				fail(r.Store.TaskStarted(ctx, j.ID, j.Attempt, at))
				rep.Started++
			case state == job.Running && j.TimeoutSeconds > 0 && !j.StartedAt.IsZero() &&
				now.Sub(j.StartedAt) > time.Duration(j.TimeoutSeconds)*time.Second:
				reason := fmt.Sprintf("timeout: ran longer than %ds", j.TimeoutSeconds)
				if _, err := r.ECS.StopTask(ctx, &ecs.StopTaskInput{Cluster: aws.String(r.Cluster), Task: aws.String(j.TaskARN), Reason: aws.String("evalsched: " + reason)}); err != nil {
					fail(fmt.Errorf("reconcile: stop %s: %w", j.TaskARN, err))
					continue
				}
				log.Info("reconcile: stopped a job past its timeout", "job", j.ID, "task", j.TaskARN)
				fail(r.Store.TaskStopped(ctx, j.ID, j.Attempt, job.Exit{Code: -1, Reason: reason}, now))
				rep.TimedOut++
			default:
				rep.Unchanged++
			}
		}
	}
	return rep, errors.Join(errs...)
}

// findTask returns the task started for the job's attempt, running or
// stopped, or a zero Task when there is none. ListTasks finds the job's tasks
// by startedBy (every attempt's); DescribeTasks tells the attempt from the
// container override's EVALSCHED_ATTEMPT.
func (r *Reconciler) findTask(ctx context.Context, j scheduler.InFlight) (types.Task, error) {
	var arns []string
	for _, status := range []types.DesiredStatus{types.DesiredStatusRunning, types.DesiredStatusStopped} {
		out, err := r.ECS.ListTasks(ctx, &ecs.ListTasksInput{Cluster: aws.String(r.Cluster), StartedBy: aws.String(j.ID), DesiredStatus: status})
		if err != nil {
			return types.Task{}, fmt.Errorf("reconcile: list tasks of %s: %w", j.ID, err)
		}
		arns = append(arns, out.TaskArns...)
	}
	if len(arns) == 0 {
		return types.Task{}, nil
	}
	out, err := r.ECS.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(r.Cluster), Tasks: arns[:min(len(arns), describeBatch)]})
	if err != nil {
		return types.Task{}, fmt.Errorf("reconcile: describe tasks of %s: %w", j.ID, err)
	}
	for _, t := range out.Tasks {
		if a, ok := attemptOf(t); !ok || a == strconv.Itoa(j.Attempt) {
			return t, nil
		}
	}
	return types.Task{}, nil
}

// attemptOf reads EVALSCHED_ATTEMPT from a task's container overrides.
func attemptOf(t types.Task) (string, bool) {
	if t.Overrides == nil {
		return "", false
	}
	for _, c := range t.Overrides.ContainerOverrides {
		for _, kv := range c.Environment {
			if aws.ToString(kv.Name) == sandboxenv.Attempt {
				return aws.ToString(kv.Value), true
			}
		}
	}
	return "", false
}

// ReadStopped is the reconciler's reading of a described STOPPED task, as
// the task-events handler reads its event: its kind, exit code and reason.
func ReadStopped(t types.Task, events taskevent.Config) (taskevent.Kind, *int, string) {
	return taskevent.Classify(string(t.StopCode), aws.ToString(t.StoppedReason), containers(t), events)
}

func containers(t types.Task) []taskevent.Container {
	out := make([]taskevent.Container, len(t.Containers))
	for i, c := range t.Containers {
		out[i] = taskevent.Container{Name: aws.ToString(c.Name), Reason: aws.ToString(c.Reason)}
		if c.ExitCode != nil {
			code := int(*c.ExitCode)
			out[i].ExitCode = &code
		}
	}
	return out
}
