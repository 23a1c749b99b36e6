package taskevent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// CancelReason is the reason evalsched gives ECS when an operator stops a
// job's task (evalsched cancel --stop-running): the task's STOPPED event
// carries it back, and Classify makes it Cancelled.
const CancelReason = "evalsched: " + job.OperatorCancelReason

// YieldReason is the reason the scheduler gives ECS when it stops a task
// that is still starting (claimed or launched, its container not yet
// running) because the provider has too many of the model's jobs now: the
// task's STOPPED event carries it back, and Classify makes it Yielded, so
// the job waits again without spending the attempt (job.Exit.Yielded).
// Under ECS's 255-character limit on a stop reason.
const YieldReason = "evalsched: yielded: the provider has too many of this model's jobs now; the job waits again"

// Kind is what an event means for its job.
type Kind string

// The kinds.
const (
	Ignored        Kind = "ignored"         // a state that changes nothing (PROVISIONING, PENDING, …)
	Started        Kind = "started"         // the container runs
	Succeeded      Kind = "succeeded"       // exit 0
	Failed         Kind = "failed"          // non-zero exit: the job's own failure
	ProviderFailed Kind = "provider_failed" // the provider-error exit code
	Infrastructure Kind = "infrastructure"  // the task never ran the job to an end
	Cancelled      Kind = "cancelled"       // an operator stopped it (CancelReason)
	Yielded        Kind = "yielded"         // the scheduler stopped it before its job could run (YieldReason)
)

// Event is one decoded task state change.
type Event struct {
	Kind     Kind
	JobID    string
	Attempt  int
	TaskARN  string
	Version  int64
	ExitCode *int
	Reason   string // stop code and reason, for the job's record
	At       time.Time

	// For the per-job metrics (zero when the event lacks them).
	Model       string    // EVALSCHED_MODEL
	SubmittedAt time.Time // EVALSCHED_SUBMITTED_AT: the job entered the queue
	CreatedAt   time.Time // RunTask created the task
	StartedAt   time.Time // the container runs
	StoppedAt   time.Time
}

// ErrNotOurs marks an event of a task evalsched did not start (no startedBy
// or no EVALSCHED_ATTEMPT): it is skipped, not retried.
var ErrNotOurs = errors.New("not an evalsched task")

// Config tells the decoder the sandbox conventions.
type Config struct {
	ProviderErrorCodes []int  // default [75]
	Container          string // the sandbox container; "" = the first with an exit code
}

type detail struct {
	TaskARN       string      `json:"taskArn"`
	StartedBy     string      `json:"startedBy"`
	LastStatus    string      `json:"lastStatus"`
	StopCode      string      `json:"stopCode"`
	StoppedReason string      `json:"stoppedReason"`
	Version       int64       `json:"version"`
	CreatedAt     *time.Time  `json:"createdAt"`
	StartedAt     *time.Time  `json:"startedAt"`
	StoppedAt     *time.Time  `json:"stoppedAt"`
	Containers    []Container `json:"containers"`
	Overrides     struct {
		ContainerOverrides []struct {
			Name        string `json:"name"`
			Environment []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"environment"`
		} `json:"containerOverrides"`
	} `json:"overrides"`
}

// Container is what a stop tells of one container of the task.
type Container struct {
	Name     string `json:"name"`
	ExitCode *int   `json:"exitCode"`
	Reason   string `json:"reason"`
}

// Decode reads one EventBridge event. An event that is not an ECS task state
// change, or malformed, is an error naming the field; a task of someone else
// is ErrNotOurs.
func Decode(raw []byte, cfg Config) (Event, error) {
	var env events.EventBridgeEvent
	if err := json.Unmarshal(raw, &env); err != nil {
		return Event{}, fmt.Errorf("event: %w", err)
	}
	if env.Source != "aws.ecs" || env.DetailType != "ECS Task State Change" {
		return Event{}, fmt.Errorf("event: source %q / detail-type %q is not an ECS task state change", env.Source, env.DetailType)
	}
	var d detail
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return Event{}, fmt.Errorf("event detail: %w", err)
	}
	if d.TaskARN == "" {
		return Event{}, errors.New("event detail.taskArn: required")
	}
	ev := Event{JobID: d.StartedBy, TaskARN: d.TaskARN, Version: d.Version, At: env.Time}
	attempt := ""
	for _, o := range d.Overrides.ContainerOverrides {
		for _, kv := range o.Environment {
			switch kv.Name {
			case sandboxenv.Attempt:
				attempt = kv.Value
			case sandboxenv.Model:
				ev.Model = kv.Value
			case sandboxenv.SubmittedAt:
				ev.SubmittedAt, _ = time.Parse(time.RFC3339, kv.Value)
			}
		}
	}
	for _, t := range []struct {
		dst *time.Time
		src *time.Time
	}{{&ev.CreatedAt, d.CreatedAt}, {&ev.StartedAt, d.StartedAt}, {&ev.StoppedAt, d.StoppedAt}} {
		if t.src != nil {
			*t.dst = *t.src
		}
	}
	if ev.JobID == "" || attempt == "" {
		return ev, ErrNotOurs
	}
	n, err := strconv.Atoi(attempt)
	if err != nil || n < 1 {
		return ev, fmt.Errorf("event detail.overrides: %s %q is not a positive integer", sandboxenv.Attempt, attempt)
	}
	ev.Attempt = n

	switch d.LastStatus {
	case "RUNNING":
		ev.Kind = Started
		if d.StartedAt != nil {
			ev.At = *d.StartedAt
		}
	case "STOPPED":
		if d.StoppedAt != nil {
			ev.At = *d.StoppedAt
		}
		ev.Kind, ev.ExitCode, ev.Reason = Classify(d.StopCode, d.StoppedReason, d.Containers, cfg)
	default:
		ev.Kind = Ignored
	}
	return ev, nil
}

// infraMarkers are stopped reasons that mean the platform, not the job, failed.
var infraMarkers = []string{
	"CannotPullContainerError", "ResourceInitializationError", "CannotStartContainerError",
	"ContainerRuntimeError", "ContainerRuntimeTimeoutError", "Timeout waiting for network interface",
	"InternalError", "Host EC2", "capacity",
}

// Classify says what a stopped task means for its job, from ECS's stop code,
// stopped reason and the containers' exit codes: the event decoder and the
// reconciler (reading DescribeTasks) share it.
func Classify(stopCode, stoppedReason string, containers []Container, cfg Config) (Kind, *int, string) {
	reason := strings.TrimSpace(stopCode + ": " + stoppedReason)
	if stopCode == "UserInitiated" && stoppedReason == CancelReason {
		// Whatever the container's exit (SIGTERM's 143, or none): the
		// operator ended it, not the job or the provider.
		return Cancelled, nil, stoppedReason
	}
	if stopCode == "UserInitiated" && stoppedReason == YieldReason {
		// Whatever the container's exit: the stop may land just as the
		// container starts. The scheduler took the slot back; the job
		// waits again.
		return Yielded, nil, stoppedReason
	}
	switch stopCode {
	case "TaskFailedToStart", "SpotInterruption", "TerminationNotice":
		return Infrastructure, nil, reason
	}
	c, ok := pick(containers, cfg.Container)
	if !ok || c.ExitCode == nil {
		// The container never exited on its own: it never ran, or the
		// platform took it away.
		for _, m := range infraMarkers {
			if strings.Contains(stoppedReason, m) || strings.Contains(c.Reason, m) {
				return Infrastructure, nil, reason
			}
		}
		if stopCode == "UserInitiated" || stopCode == "ServiceSchedulerInitiated" {
			return Failed, nil, reason // stopped by an operator or the timeout
		}
		return Infrastructure, nil, reason
	}
	code := *c.ExitCode
	codes := cfg.ProviderErrorCodes
	if codes == nil {
		codes = []int{75}
	}
	switch {
	case code == 0:
		return Succeeded, c.ExitCode, ""
	case slices.Contains(codes, code):
		return ProviderFailed, c.ExitCode, fmt.Sprintf("exit code %d: provider error", code)
	default:
		return Failed, c.ExitCode, fmt.Sprintf("exit code %d", code)
	}
}

// pick chooses the sandbox container: the named one, else the first with an
// exit code, else the first.
func pick(cs []Container, name string) (Container, bool) {
	for _, c := range cs {
		if name != "" && c.Name == name {
			return c, true
		}
	}
	for _, c := range cs {
		if name == "" && c.ExitCode != nil {
			return c, true
		}
	}
	if len(cs) > 0 && name == "" {
		return cs[0], true
	}
	return Container{}, false
}
