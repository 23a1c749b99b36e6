package reconcile

import (
	"fmt"
	"strconv"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// Task is what ECS says of one task, in plain values: the judge's input.
// ecstasks reads it from DescribeTasks; the simulator builds it from its
// own task table.
type Task struct {
	ARN           string // "": no task
	Attempt       string // EVALSCHED_ATTEMPT of its container overrides
	HasAttempt    bool   // the overrides name an attempt
	Status        string // ECS's lastStatus: PENDING, RUNNING, STOPPED, ...
	StartedAt     time.Time
	StoppedAt     time.Time
	StopCode      string
	StoppedReason string
	Containers    []taskevent.Container
}

// Classify reads a STOPPED task as the task-events handler reads its
// event: its kind, exit code and reason.
func (t Task) Classify(events taskevent.Config) (taskevent.Kind, *int, string) {
	return taskevent.Classify(t.StopCode, t.StoppedReason, t.Containers, events)
}

// Action is a repair the judge decides for one in-flight job.
type Action int

// The repairs, and leaving the job as it is.
const (
	Unchanged    Action = iota
	RecordLaunch        // a claim whose task exists: record its launch (Repair.ARN)
	RetryLaunch         // a claim with no task: back to waiting, attempt+1
	Describe            // a running job whose task was found: judged with the launched
	Lost                // the task is gone past MissingGrace: an infrastructure stop
	End                 // the task stopped: the STOPPED event that was lost
	Start               // the task runs: the RUNNING event that was lost
	StopTimedOut        // it runs past its timeout: stop the task, fail the job
)

// Repair is the judge's decision for one job.
type Repair struct {
	Action Action
	ARN    string         // RecordLaunch, Describe: the task found
	At     time.Time      // End, Start: when the task changed; else now
	Exit   job.Exit       // End, Lost, StopTimedOut: how the attempt ended
	Kind   taskevent.Kind // End: how the task stopped, as its event would say
	Reason string         // RetryLaunch, StopTimedOut: why
}

// Judge decides the repairs from the store's in-flight jobs and ECS's
// tasks. It is pure: no AWS type, no clock (now is given).
type Judge struct {
	ClaimGrace   time.Duration    // a claim older than this was never recorded
	MissingGrace time.Duration    // a task ECS no longer knows after this is lost
	Events       taskevent.Config // the exit-code convention
}

// Unrecorded reports whether j's launch was never recorded: a claim whose
// pass died, or a job whose RUNNING event came before (or instead of) the
// record of its launch. ECS is then asked for the tasks the job started.
func (g Judge) Unrecorded(j scheduler.InFlight, now time.Time) bool {
	state := job.State(j.State)
	return j.TaskARN == "" && (state == job.Claimed || state == job.Running) && now.Sub(j.ClaimedAt) > g.ClaimGrace
}

// Pick is the task of j's attempt among the tasks it started, or a zero
// Task when there is none. A task whose overrides name no attempt is taken
// as the job's.
func Pick(j scheduler.InFlight, tasks []Task) Task {
	for _, t := range tasks {
		if !t.HasAttempt || t.Attempt == strconv.Itoa(j.Attempt) {
			return t
		}
	}
	return Task{}
}

// Found judges an unrecorded job by the task found for its attempt (zero:
// none).
func (g Judge) Found(j scheduler.InFlight, t Task, now time.Time) Repair {
	state := job.State(j.State)
	switch {
	case state == job.Claimed && t.ARN != "":
		return Repair{Action: RecordLaunch, ARN: t.ARN}
	case state == job.Claimed:
		return Repair{Action: RetryLaunch, Reason: "claimed by a pass that never launched it"}
	case t.ARN != "":
		return Repair{Action: Describe, ARN: t.ARN}
	case now.Sub(j.ClaimedAt) > g.MissingGrace:
		return Repair{Action: Lost, At: now, Exit: missing}
	}
	return Repair{}
}

var missing = job.Exit{Infrastructure: true, Reason: "task missing from ECS"}

// Launched judges a job with a task ARN by what ECS says of the task
// (known false: ECS does not know it).
func (g Judge) Launched(j scheduler.InFlight, t Task, known bool, now time.Time) Repair {
	state := job.State(j.State)
	switch {
	case !known:
		if now.Sub(j.ClaimedAt) > g.MissingGrace {
			return Repair{Action: Lost, At: now, Exit: missing}
		}
		return Repair{}
	case t.Status == "STOPPED":
		kind, code, reason := t.Classify(g.Events)
		at := now
		if !t.StoppedAt.IsZero() {
			at = t.StoppedAt
		}
		return Repair{Action: End, At: at, Exit: taskevent.ExitOf(kind, code, reason), Kind: kind}
	case state == job.Launched && t.Status == "RUNNING":
		at := now
		if !t.StartedAt.IsZero() {
			at = t.StartedAt
		}
		return Repair{Action: Start, At: at}
	case state == job.Running && j.TimeoutSeconds > 0 && !j.StartedAt.IsZero() &&
		now.Sub(j.StartedAt) > time.Duration(j.TimeoutSeconds)*time.Second:
		reason := fmt.Sprintf("timeout: ran longer than %ds", j.TimeoutSeconds)
		return Repair{Action: StopTimedOut, At: now, Exit: job.Exit{Code: -1, Reason: reason}, Reason: reason}
	}
	return Repair{}
}
