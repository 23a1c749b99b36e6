package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Job is a copy of one job's item, for the CLI and tests.
type Job struct {
	scheduler.Job
	State      job.State
	Pos        int64 // place in its queue: submission order
	SubmitAt   time.Time
	ClaimedAt  time.Time // the claiming pass's time
	LaunchedAt time.Time
	StartedAt  time.Time
	EndedAt    time.Time
	TaskARN    string
	Exit       job.Exit
	Reason     string // why it failed (or was last retried)
}

// Job reads one job; ok is false when there is none.
func (s *Store) Job(ctx context.Context, id string) (j Job, ok bool, err error) {
	it, ok, err := s.readJob(ctx, id)
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("read job %s: %w", id, err)
		}
		return Job{}, false, err
	}
	return it.job(), true, nil
}

func (j *jobItem) job() Job {
	t := func(s string) time.Time {
		v, _ := parseStamp(s)
		return v
	}
	sj := j.schedulerJob()
	sj.ResultToken = "" // a copy for the CLI and tests: the token stays with the claim
	return Job{
		Job: sj, State: j.State, Pos: j.Pos,
		SubmitAt: t(j.SubmitAt), ClaimedAt: t(j.ClaimedAt), LaunchedAt: t(j.LaunchedAt),
		StartedAt: t(j.StartedAt), EndedAt: t(j.EndedAt), TaskARN: j.TaskARN, Reason: j.Reason,
		Exit: job.Exit{Code: j.ExitCode, ProviderError: j.ProviderError, Infrastructure: j.Infrastructure, Reason: j.ExitReason},
	}
}

// ProjectRunning counts a project's jobs whose task is running now, over
// all models (for the CLI's status; the pass does not read it). It reads
// the inflight index (eventually consistent, like every index) rather than
// a counter: a counter would cost every task event two more write units in
// its transaction, and only this status reads it.
func (s *Store) ProjectRunning(ctx context.Context, account, project string) (int, error) {
	all, err := s.inflight(ctx)
	if err != nil {
		return 0, fmt.Errorf("read project %s/%s: %w", account, project, err)
	}
	n := 0
	for _, f := range all {
		if f.Account == account && f.Project == project && f.State == string(job.Running) {
			n++
		}
	}
	return n, nil
}
