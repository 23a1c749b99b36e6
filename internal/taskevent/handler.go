package taskevent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/job"
)

// Store is what the handler moves: the job's state and its model's counters,
// in one conditional step each (repeated or stale events change nothing).
type Store interface {
	TaskStarted(ctx context.Context, jobID string, attempt int, now time.Time) error
	TaskStopped(ctx context.Context, jobID string, attempt int, exit job.Exit, now time.Time) error
}

// Handler is the task-events function: one EventBridge event per call.
type Handler struct {
	Store  Store
	Config Config
	Log    *slog.Logger
	// Metrics receives each job's timings as EMF (os.Stdout in Lambda;
	// nil: none): JobWaitSeconds (submitted → running), StartSeconds
	// (RunTask → running), JobRunSeconds and JobWaitShare (wait / (wait +
	// run)) when it ends, with the dimension Model, so p50 and p90 per model
	// are CloudWatch statistics. At emf.Essential and emf.Lean they are
	// published without the dimension (one set for the account), Model a
	// property.
	Metrics   io.Writer
	Namespace string
	Detail    emf.Detail // "" is emf.Full
}

// Handle applies one event. A malformed event or another service's task is
// logged and dropped (retrying cannot fix it); a store failure is returned so
// EventBridge retries the event.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) error {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	ev, err := Decode(raw, h.Config)
	switch {
	case errors.Is(err, ErrNotOurs):
		log.Debug("task not started by evalsched; skipped", "task", ev.TaskARN)
		return nil
	case err != nil:
		log.Error("undecodable task event; dropped", "err", err)
		return nil
	}
	attrs := []any{"job", ev.JobID, "attempt", ev.Attempt, "task", ev.TaskARN, "kind", string(ev.Kind), "version", ev.Version}
	switch ev.Kind {
	case Ignored:
		return nil
	case Started:
		err = h.Store.TaskStarted(ctx, ev.JobID, ev.Attempt, ev.At)
	default:
		err = h.Store.TaskStopped(ctx, ev.JobID, ev.Attempt, ExitOf(ev.Kind, ev.ExitCode, ev.Reason), ev.At)
	}
	if err != nil {
		log.Error("task event not applied; EventBridge retries it", append(attrs, "err", err)...)
		return fmt.Errorf("apply %s of job %s: %w", ev.Kind, ev.JobID, err)
	}
	log.Info("task event applied", attrs...)
	h.timings(ev, log)
	return nil
}

// timings writes the job's timings that this event completes; a failed write
// is logged to log (Handle's logger: h.Log may be nil) and changes nothing.
func (h *Handler) timings(ev Event, log *slog.Logger) {
	if h.Metrics == nil || ev.Model == "" {
		return
	}
	vals := map[string]float64{}
	switch {
	case ev.Kind == Started && !ev.StartedAt.IsZero():
		if !ev.SubmittedAt.IsZero() {
			vals["JobWaitSeconds"] = ev.StartedAt.Sub(ev.SubmittedAt).Seconds()
		}
		if !ev.CreatedAt.IsZero() {
			vals["StartSeconds"] = ev.StartedAt.Sub(ev.CreatedAt).Seconds()
		}
	case ev.Kind != Ignored && ev.Kind != Infrastructure && ev.Kind != Yielded && !ev.StartedAt.IsZero() && !ev.StoppedAt.IsZero():
		// A task the platform took away or the scheduler yielded did not
		// run its job: no run time.
		run := ev.StoppedAt.Sub(ev.StartedAt).Seconds()
		vals["JobRunSeconds"] = run
		if !ev.SubmittedAt.IsZero() {
			wait := ev.StartedAt.Sub(ev.SubmittedAt).Seconds()
			if wait+run > 0 {
				vals["JobWaitShare"] = wait / (wait + run)
			}
		}
	}
	if len(vals) == 0 {
		return
	}
	dims, props := map[string]string{"Model": ev.Model}, map[string]string(nil)
	if h.Detail == emf.Essential || h.Detail == emf.Lean {
		dims, props = nil, dims
	}
	if err := emf.WriteValues(h.Metrics, h.Namespace, ev.At, dims, props, vals); err != nil {
		log.Warn("write job metrics", "err", err)
	}
}

// ExitOf is the store's record of a stop (the handler's and the
// reconciler's): Yielded is job.Exit{Yielded: true}, the job back to
// waiting with its attempt not spent.
func ExitOf(kind Kind, code *int, reason string) job.Exit {
	exit := job.Exit{Reason: reason, ProviderError: kind == ProviderFailed, Infrastructure: kind == Infrastructure,
		Cancelled: kind == Cancelled, Yielded: kind == Yielded}
	switch {
	case code != nil:
		exit.Code = *code
	case kind == Failed || kind == Cancelled:
		exit.Code = -1 // stopped without an exit code (an operator or the timeout)
	}
	return exit
}
