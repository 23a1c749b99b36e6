package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/evalsched/evalsched/internal/ecslauncher"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// JobLister is what StopScope needs of the store.
type JobLister interface {
	InFlight(ctx context.Context) ([]scheduler.InFlight, error)
	TaskStopped(ctx context.Context, jobID string, attempt int, exit domain.Exit, now time.Time) error
}

// StopScope stops the tasks of the scope's jobs (the reason
// taskevent.CancelReason) and ends each job CANCELLED before the next; the
// tasks' STOPPED events then find the jobs ended and change nothing — or,
// if the caller dies between the two, end them CANCELLED by that reason.
func StopScope(ctx context.Context, st JobLister, api ecslauncher.StopAPI, cluster string, scope scheduler.Scope, now func() time.Time) (int, error) {
	stopper := &ecslauncher.Stopper{API: api, Cluster: cluster, Reason: taskevent.CancelReason}
	jobs, err := st.InFlight(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range jobs {
		if j.TaskARN == "" || !scope.Matches(j.Key()) {
			continue
		}
		if err := stopper.StopOne(ctx, j); err != nil {
			return n, fmt.Errorf("stop %s: %w", j.TaskARN, err)
		}
		exit := domain.Exit{Code: -1, Cancelled: true, Reason: domain.OperatorCancelReason}
		if err := st.TaskStopped(ctx, j.ID, j.Attempt, exit, now()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
