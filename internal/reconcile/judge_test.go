package reconcile

import (
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

var (
	t0    = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	judge = Judge{ClaimGrace: 2 * time.Minute, MissingGrace: 5 * time.Minute,
		Events: taskevent.Config{ProviderErrorCodes: []int{75}, Container: "sandbox"}}
)

func inFlight(state job.State, arn string, claimedAgo time.Duration) scheduler.InFlight {
	return scheduler.InFlight{ID: "j", Attempt: 2, State: string(state), TaskARN: arn, ClaimedAt: t0.Add(-claimedAgo)}
}

func exited(code int) []taskevent.Container {
	return []taskevent.Container{{Name: "sandbox", ExitCode: &code}}
}

// TestUnrecorded: only a CLAIMED or RUNNING job without a task ARN, past
// the claim grace, is looked up in ECS.
func TestUnrecorded(t *testing.T) {
	for _, tc := range []struct {
		j    scheduler.InFlight
		want bool
	}{
		{inFlight(job.Claimed, "", 3*time.Minute), true},
		{inFlight(job.Running, "", 3*time.Minute), true},
		{inFlight(job.Claimed, "", time.Minute), false},
		{inFlight(job.Launched, "", 3*time.Minute), false},
		{inFlight(job.Claimed, "arn:1", 3*time.Minute), false},
	} {
		if got := judge.Unrecorded(tc.j, t0); got != tc.want {
			t.Errorf("Unrecorded(%s, arn %q, claimed %v ago) = %v, want %v", tc.j.State, tc.j.TaskARN, t0.Sub(tc.j.ClaimedAt), got, tc.want)
		}
	}
}

// TestPick: the task of the job's attempt, or one naming no attempt.
func TestPick(t *testing.T) {
	j := inFlight(job.Claimed, "", 3*time.Minute)
	tasks := []Task{{ARN: "a1", Attempt: "1", HasAttempt: true}, {ARN: "a2", Attempt: "2", HasAttempt: true}}
	if got := Pick(j, tasks).ARN; got != "a2" {
		t.Errorf("Pick = %q, want the attempt-2 task", got)
	}
	if got := Pick(j, tasks[:1]).ARN; got != "" {
		t.Errorf("Pick of another attempt's task = %q, want none", got)
	}
	if got := Pick(j, []Task{{ARN: "bare"}}).ARN; got != "bare" {
		t.Errorf("Pick of a task naming no attempt = %q, want it", got)
	}
}

// TestFound judges a job whose launch was never recorded.
func TestFound(t *testing.T) {
	for _, tc := range []struct {
		name string
		j    scheduler.InFlight
		task Task
		want Repair
	}{
		{"claim with its task", inFlight(job.Claimed, "", 3*time.Minute), Task{ARN: "arn:1"}, Repair{Action: RecordLaunch, ARN: "arn:1"}},
		{"claim without a task", inFlight(job.Claimed, "", 3*time.Minute), Task{}, Repair{Action: RetryLaunch, Reason: "claimed by a pass that never launched it"}},
		{"running with its task", inFlight(job.Running, "", 3*time.Minute), Task{ARN: "arn:1"}, Repair{Action: Describe, ARN: "arn:1"}},
		{"running, no task, past the missing grace", inFlight(job.Running, "", 6*time.Minute), Task{}, Repair{Action: Lost, At: t0, Exit: missing}},
		{"running, no task, within the missing grace", inFlight(job.Running, "", 3*time.Minute), Task{}, Repair{}},
	} {
		if got := judge.Found(tc.j, tc.task, t0); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestLaunched judges a job with a task ARN by what ECS says of its task.
func TestLaunched(t *testing.T) {
	started, stopped := t0.Add(-time.Hour), t0.Add(-time.Minute)
	running := inFlight(job.Running, "arn:1", time.Hour)
	running.StartedAt = started
	timed := running
	timed.TimeoutSeconds = 60
	for _, tc := range []struct {
		name  string
		j     scheduler.InFlight
		task  Task
		known bool
		want  Repair
	}{
		{"gone past the missing grace", inFlight(job.Launched, "arn:1", 6*time.Minute), Task{}, false, Repair{Action: Lost, At: t0, Exit: missing}},
		{"gone within the missing grace", inFlight(job.Launched, "arn:1", 3*time.Minute), Task{}, false, Repair{}},
		{"stopped, exit 0", running, Task{Status: "STOPPED", StoppedAt: stopped, StopCode: "EssentialContainerExited", Containers: exited(0)}, true,
			Repair{Action: End, At: stopped, Exit: taskevent.ExitOf(taskevent.Succeeded, new(int), ""), Kind: taskevent.Succeeded}},
		{"stopped, no time: now", running, Task{Status: "STOPPED", StopCode: "EssentialContainerExited", Containers: exited(0)}, true,
			Repair{Action: End, At: t0, Exit: taskevent.ExitOf(taskevent.Succeeded, new(int), ""), Kind: taskevent.Succeeded}},
		{"launched, running", inFlight(job.Launched, "arn:1", time.Minute), Task{Status: "RUNNING", StartedAt: started}, true, Repair{Action: Start, At: started}},
		{"running, running", running, Task{Status: "RUNNING", StartedAt: started}, true, Repair{}},
		{"past its timeout", timed, Task{Status: "RUNNING", StartedAt: started}, true,
			Repair{Action: StopTimedOut, At: t0, Exit: job.Exit{Code: -1, Reason: "timeout: ran longer than 60s"}, Reason: "timeout: ran longer than 60s"}},
		{"pending", inFlight(job.Launched, "arn:1", time.Minute), Task{Status: "PENDING"}, true, Repair{}},
	} {
		got := judge.Launched(tc.j, tc.task, tc.known, t0)
		if got.Action != tc.want.Action || !got.At.Equal(tc.want.At) || got.Kind != tc.want.Kind || got.Reason != tc.want.Reason ||
			got.Exit.Code != tc.want.Exit.Code || got.Exit.Reason != tc.want.Exit.Reason || got.Exit.Infrastructure != tc.want.Exit.Infrastructure {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
