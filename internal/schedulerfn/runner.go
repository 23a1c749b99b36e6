package schedulerfn

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Runner runs the passes of one invocation of one shard: its Scheduler
// (store scoped to the shard's models, launcher with the shard's share of
// the launch rate), under its lease.
type Runner struct {
	// Shard is the shard this runner's instances serve (0 for a single
	// scheduler): it labels the log lines and the EMF metrics.
	Shard     int
	Scheduler *scheduler.Scheduler
	Lease     func(owner string) passloop.Lease // the lease handle of one invocation
	Clock     passloop.Clock
	Metrics   io.Writer     // EMF documents; os.Stdout in Lambda
	Namespace string        // EMF namespace
	Detail    emf.Detail    // per-model metrics ("" is emf.Full)
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
	// Every line of the invocation names its shard: "pass", "pass failed"
	// (the alarm's metric filter matches the message, not the fields),
	// "lease lost", "reconcile".
	log = log.With("shard", r.Shard)
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
				if werr := emf.WriteShard(r.Metrics, r.Namespace, r.Shard, cmp.Or(r.Detail, emf.Full), rep); werr != nil {
					log.Warn("write metrics", "err", werr)
				}
			}
			if err != nil {
				// passloop logs "pass failed" (the alarm's metric filter
				// counts that line); this one carries the report.
				lines := rep.Lines(scheduler.LogModelsPerLine)
				log.Error("pass report", "err", err, "pass", lines[0])
				for _, l := range lines[1:] {
					log.Info("pass models", "pass", l)
				}
				return err
			}
			// One line, or at 2,000 models several: each under
			// CloudWatch Logs' 256-KB event.
			for i, l := range rep.Lines(scheduler.LogModelsPerLine) {
				msg := "pass"
				if i > 0 {
					msg = "pass models"
				}
				log.Info(msg, "pass", l)
			}
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

// Handler is the scheduler function's handler. EventBridge invokes it once
// a minute per shard with the input {"shard": k}; it runs one invocation of
// shard k's Runner, whose request id names the lease owner.
type Handler struct {
	// Shards is the number of shards (EVALSCHED_SHARDS; 0 means 1).
	Shards int
	// Runner builds shard k's runner: its store, launcher, scheduler and
	// lease. The handler calls it on the first invocation of shard k in
	// this process and keeps the result: a warm Lambda environment may
	// serve shard 2 after shard 0, and each shard keeps its own store
	// (its Snapshot's versions and chunk cache) and launcher (its token
	// bucket) from one of its invocations to the next.
	Runner func(shard int) (*Runner, error)

	mu      sync.Mutex
	runners map[int]*Runner
}

// Handle is the Lambda handler. A malformed event or a shard outside
// [0, Shards) is a configuration error (the schedule's targets do not match
// EVALSCHED_SHARDS): it is returned, so the invocation fails and shows in
// the function's Errors, rather than running some other shard's models.
func (h *Handler) Handle(ctx context.Context, event json.RawMessage) (Result, error) {
	shard, err := ParseShard(event, h.Shards)
	if err != nil {
		return Result{Stopped: err.Error()}, err
	}
	r, err := h.runner(shard)
	if err != nil {
		err = fmt.Errorf("build shard %d: %w", shard, err)
		return Result{Stopped: err.Error()}, err
	}
	owner := "local"
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		owner = lc.AwsRequestID
	}
	return r.Run(ctx, owner)
}

// runner returns shard's runner, building it on first use. A failed build
// is not kept: the next invocation tries again.
func (h *Handler) runner(shard int) (*Runner, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.runners[shard]; ok {
		return r, nil
	}
	r, err := h.Runner(shard)
	if err != nil {
		return nil, err
	}
	r.Shard = shard
	if h.runners == nil {
		h.runners = map[int]*Runner{}
	}
	h.runners[shard] = r
	return r, nil
}

// ParseShard reads the shard an invocation is for from its event: the
// schedule's input {"shard": k}, 0 ≤ k < shards (shards ≤ 1: only 0). An
// empty or null event, or an object without the field — EventBridge's own
// scheduled event, as a single scheduler's rule sends it — means shard 0;
// other fields are ignored. Anything else is an error naming the field and
// the rule.
func ParseShard(event json.RawMessage, shards int) (int, error) {
	shards = max(shards, 1)
	body := bytes.TrimSpace(event)
	if len(body) == 0 || bytes.Equal(body, []byte("null")) {
		return 0, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return 0, fmt.Errorf(`scheduler event: not a JSON object (want {"shard": k}, 0 ≤ k < %d): %w`, shards, err)
	}
	raw, ok := fields["shard"]
	if !ok {
		return 0, nil
	}
	rule := fmt.Sprintf("an integer in 0..%d (EVALSCHED_SHARDS is %d)", shards-1, shards)
	// A JSON number with digits only: "1", 1.0, 1e0 and -0 are refused
	// rather than guessed at.
	text := string(bytes.TrimSpace(raw))
	k, err := strconv.Atoi(text)
	if err != nil || strings.HasPrefix(text, "+") || strings.HasPrefix(text, "-") {
		return 0, fmt.Errorf("scheduler event: shard: %s is not %s", text, rule)
	}
	if k >= shards {
		return 0, fmt.Errorf("scheduler event: shard: %d is not %s", k, rule)
	}
	return k, nil
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
