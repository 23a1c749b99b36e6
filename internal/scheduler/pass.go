package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Scheduler runs passes against its adapters.
type Scheduler struct {
	Store    Store
	Depths   DepthReader
	Launcher Launcher
	Clock    Clock
	Config   Config
	Log      *slog.Logger // nil: slog.Default()
}

// Report is what one pass did, for the pass log line and metrics.
type Report struct {
	At       time.Time
	Duration time.Duration
	Plan     Plan
	Claimed  int
	Launched int
	Retried  int
	Failed   int
	// DepthErr is set when the depths could not be read; limits held.
	DepthErr error
}

// Pass runs one scheduler pass. An error means the pass did not commit; a
// pass whose launches partly failed still returns nil (the failures are in
// the report and the jobs went back to waiting or failed).
func (s *Scheduler) Pass(ctx context.Context) (Report, error) {
	now := s.Clock.Now()
	rep := Report{At: now}

	// 1. Snapshot.
	snap, err := s.Store.Snapshot(ctx, now)
	if err != nil {
		return rep, fmt.Errorf("read snapshot: %w", err)
	}

	// 2. Depth of every model with work: a failed read holds the limits
	// rather than failing the pass.
	var busy []string
	waiting := map[string]bool{}
	for _, q := range snap.Queues {
		waiting[q.Model] = true
	}
	for _, m := range snap.Models {
		if m.Running+m.Starting > 0 || waiting[m.Config.Name] {
			busy = append(busy, m.Config.Name)
		}
	}
	depths := map[string]Depth{}
	if len(busy) > 0 && s.Depths != nil {
		d, err := s.Depths.Depths(ctx, busy, now)
		if err != nil {
			rep.DepthErr = err
			s.log().Warn("depth read failed; limits hold", "err", err)
		} else {
			depths = d
		}
	}

	// 3. Decide.
	plan := Decide(s.Config, snap, depths, now)
	rep.Plan = plan

	// 4. Claim.
	jobs, err := s.Store.Commit(ctx, plan)
	if err != nil {
		return rep, fmt.Errorf("commit plan: %w", err)
	}
	rep.Claimed = len(jobs)

	// 5. Launch and 6. record.
	if len(jobs) > 0 {
		results := s.Launcher.Launch(ctx, jobs)
		for _, r := range results {
			switch r.Status {
			case Launched:
				rep.Launched++
			case Retry:
				rep.Retried++
			default:
				rep.Failed++
			}
		}
		if err := s.Store.RecordLaunches(ctx, s.Clock.Now(), results); err != nil {
			return rep, fmt.Errorf("record launches: %w", err)
		}
		if len(results) != len(jobs) {
			return rep, errors.New("launcher returned a result count unlike the jobs given; the reconciler repairs the rest")
		}
	}
	rep.Duration = s.Clock.Now().Sub(now)
	return rep, nil
}

func (s *Scheduler) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// LogValue makes a report one structured log line.
func (r Report) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Time("at", r.At),
		slog.Duration("duration", r.Duration),
		slog.Int("claimed", r.Claimed),
		slog.Int("launched", r.Launched),
		slog.Int("retried", r.Retried),
		slog.Int("failed", r.Failed),
	}
	if len(r.Plan.Warnings) > 0 {
		attrs = append(attrs, slog.Any("warnings", r.Plan.Warnings))
	}
	for _, m := range r.Plan.Models {
		if m.Running+m.Starting+m.Waiting == 0 && m.Limit.Action != "raise" && m.Limit.Action != "lower" {
			continue
		}
		attrs = append(attrs, slog.Group(m.Model,
			slog.Float64("depth", m.Depth.Value),
			slog.Int("limit", m.State.Limit.Limit),
			slog.String("limit_reason", m.Limit.Reason),
			slog.Int("running", m.Running),
			slog.Int("starting", m.Starting),
			slog.Int("waiting", m.Waiting),
			slog.Int("admitted", m.Admitted),
			slog.Any("admitted_by_tier", m.ByTier),
			slog.String("breaker", string(m.Breaker.State.Phase)),
			slog.String("why_waiting", m.Why),
		))
	}
	return slog.GroupValue(attrs...)
}
