package ecslauncher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// StopAPI is the part of the ECS client the yield step calls.
type StopAPI interface {
	StopTask(ctx context.Context, in *ecs.StopTaskInput, opts ...func(*ecs.Options)) (*ecs.StopTaskOutput, error)
}

// Stopper implements scheduler.TaskStopper on ECS: StopTask with Reason
// (the scheduler's is taskevent.YieldReason, which the task-events function
// reads back from the STOPPED event and returns the job to waiting, its
// attempt not spent).
type Stopper struct {
	API         StopAPI
	Cluster     string
	Reason      string
	Concurrency int // StopTask calls in flight at once; 0: 16, as RunTask's
	Log         *slog.Logger
}

// Stop stops each job's task, concurrently, and returns how many ECS
// stopped. A call that failed (throttled, or a task ECS no longer knows) is
// joined into the error naming its job; that job starts as it would have,
// and its events or the reconciler say what became of it.
func (s *Stopper) Stop(ctx context.Context, jobs []scheduler.InFlight) (int, error) {
	var stopped atomic.Int64
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(cmp.Or(s.Concurrency, 16), len(jobs)) {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				if err := s.StopOne(ctx, j); err != nil {
					errs[i] = fmt.Errorf("stop task of %s (attempt %d): %w", j.ID, j.Attempt, err)
					continue
				}
				stopped.Add(1)
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	n := int(stopped.Load())
	if n > 0 {
		cmp.Or(s.Log, slog.Default()).Info("yield: stopped starting tasks", "stopped", n)
	}
	return n, errors.Join(errs...)
}

// StopOne stops one job's task with the Stopper's reason and returns
// StopTask's error as it is: Stop's step, and the operator's cancel
// --stop-running, which stops tasks one at a time and ends each job before
// the next.
func (s *Stopper) StopOne(ctx context.Context, j scheduler.InFlight) error {
	_, err := s.API.StopTask(ctx, &ecs.StopTaskInput{Cluster: aws.String(s.Cluster), Task: aws.String(j.TaskARN), Reason: aws.String(s.Reason)})
	return err
}
