package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Runner runs the passes of one invocation.
type Runner struct {
	Scheduler *scheduler.Scheduler
	Lease     func(owner string) passloop.Lease // the lease handle of one invocation
	Clock     passloop.Clock
	Metrics   io.Writer     // EMF documents; os.Stdout in Lambda
	Namespace string        // EMF namespace
	Interval  time.Duration // between passes (default 10 s)
	Passes    int           // per invocation (default 6)
	// Reconcile, when set, runs in the invocation's first slot, before its
	// pass: once a minute, under the lease.
	Reconcile func(ctx context.Context, now time.Time) (any, error)
	Log       *slog.Logger
}

// Result is what an invocation returns (visible in the Lambda console).
type Result struct {
	Passes  int    `json:"passes"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	Stopped string `json:"stopped"`
}

// Run covers one minute of slots as owner. A second invocation that finds
// the lease held returns at once without error: that is the design working.
func (r *Runner) Run(ctx context.Context, owner string) (Result, error) {
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	first := true
	loop := &passloop.Loop{
		Interval: r.Interval,
		Window:   time.Duration(r.Passes) * r.Interval,
		Clock:    r.Clock,
		Lease:    r.Lease(owner),
		Log:      log,
		Pass: func(ctx context.Context) error {
			if r.Reconcile != nil && first {
				first = false
				rep, err := r.Reconcile(ctx, r.Clock.Now())
				if err != nil {
					log.Error("reconcile failed; the next invocation tries again", "err", err, "reconcile", rep)
				} else {
					log.Info("reconcile", "reconcile", rep)
				}
			}
			rep, err := r.Scheduler.Pass(ctx)
			if r.Metrics != nil {
				if werr := emf.Write(r.Metrics, r.Namespace, rep); werr != nil {
					log.Warn("write metrics", "err", werr)
				}
			}
			if err != nil {
				// passloop logs "pass failed" (the alarm's metric filter
				// counts that line); this one carries the report.
				log.Error("pass report", "err", err, "pass", rep)
				return err
			}
			log.Info("pass", "pass", rep)
			return nil
		},
	}
	sum, err := loop.Run(ctx)
	res := Result{Passes: sum.Passes, Failed: sum.Failed, Skipped: sum.Skipped, Stopped: sum.Reason}
	if errors.Is(err, passloop.ErrLeaseHeld) {
		res.Stopped = err.Error()
		return res, nil
	}
	if err != nil {
		res.Stopped = err.Error()
	}
	return res, err
}

// Handle is the Lambda handler: the scheduled event carries nothing the
// invocation needs; its request id names the lease owner.
func (r *Runner) Handle(ctx context.Context, _ json.RawMessage) (Result, error) {
	owner := "local"
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		owner = lc.AwsRequestID
	}
	return r.Run(ctx, owner)
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns the current time.
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx ends.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
