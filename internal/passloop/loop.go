package passloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Lease is the scheduler's mutual exclusion, kept in the store.
type Lease interface {
	// Acquire takes the lease until `until` when it is free, expired or ours.
	// When another holder has it, it returns false and that holder's planned
	// hand-over time.
	Acquire(ctx context.Context, now, until time.Time) (ok bool, holder string, holderUntil time.Time, err error)
	// Renew extends our lease; false means we lost it.
	Renew(ctx context.Context, now, until time.Time) (bool, error)
	// Release gives it up.
	Release(ctx context.Context) error
}

// Clock tells the time and sleeps; tests use a fake one.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// Loop runs the passes of one invocation.
type Loop struct {
	Clock    Clock
	Lease    Lease
	Pass     func(ctx context.Context) error
	Interval time.Duration // 10 s
	Window   time.Duration // 1 min: the slots an invocation covers
	TTL      time.Duration // how long the lease outlives a renewal (default 3 intervals)
	Log      *slog.Logger
}

// Summary is what one invocation did.
type Summary struct {
	Passes  int
	Failed  int
	Skipped int // slots skipped after an overrun
	Waited  time.Duration
	Reason  string // why it stopped
}

// ErrLeaseHeld means another invocation holds the lease: this one exits.
var ErrLeaseHeld = errors.New("lease held by another scheduler")

// Run covers the Window/Interval slots from the first one at start. It returns ErrLeaseHeld at
// once when a live scheduler holds the lease.
func (l *Loop) Run(ctx context.Context) (Summary, error) {
	interval, window := l.Interval, l.Window
	if interval == 0 {
		interval = 10 * time.Second
	}
	if window == 0 {
		window = time.Minute
	}
	ttl := l.TTL
	if ttl == 0 {
		ttl = 3 * interval
	}
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	var sum Summary
	// Slots are aligned to the interval: the first at or just before start
	// (a second late still runs it), then window/interval of them in all, so
	// invocations a window apart cover every slot once.
	start := l.Clock.Now()
	slot := start.Add(-time.Second).Truncate(interval)
	if slot.Before(start.Add(-time.Second)) {
		slot = slot.Add(interval)
	}
	last := slot.Add(window - interval)
	until := func(now time.Time) time.Time {
		if t := now.Add(ttl); t.After(last.Add(interval)) {
			return t
		}
		return last.Add(interval)
	}

	// 1. Take the lease, waiting for a holder that is handing over.
	for {
		now := l.Clock.Now()
		ok, holder, holderUntil, err := l.Lease.Acquire(ctx, now, until(now))
		if err != nil {
			return sum, fmt.Errorf("acquire lease: %w", err)
		}
		if ok {
			break
		}
		if holderUntil.After(now.Add(interval)) || sum.Waited >= 2*interval {
			log.Info("lease held; exiting", "holder", holder, "until", holderUntil)
			return sum, fmt.Errorf("%w: %s until %s", ErrLeaseHeld, holder, holderUntil.Format(time.RFC3339))
		}
		wait := interval / 20
		if err := l.Clock.Sleep(ctx, wait); err != nil {
			return sum, err
		}
		sum.Waited += wait
	}
	defer func() {
		if err := l.Lease.Release(context.WithoutCancel(ctx)); err != nil {
			log.Warn("release lease", "err", err)
		}
	}()

	// 2. One pass per slot.
	for ; !slot.After(last); slot = slot.Add(interval) {
		now := l.Clock.Now()
		if now.After(slot.Add(time.Second)) {
			// The previous pass ran into this slot: skip it rather than
			// run two passes back to back.
			sum.Skipped++
			log.Warn("skipping slot after an overrun", "slot", slot)
			continue
		}
		if d := slot.Sub(now); d > 0 {
			if err := l.Clock.Sleep(ctx, d); err != nil {
				sum.Reason = "cancelled"
				return sum, err
			}
		}
		if ctx.Err() != nil {
			sum.Reason = "cancelled"
			return sum, ctx.Err()
		}
		now = l.Clock.Now()
		held, err := l.Lease.Renew(ctx, now, until(now))
		if err != nil || !held {
			sum.Reason = "lease lost"
			log.Error("lease lost; stopping", "err", err)
			return sum, fmt.Errorf("renew lease: lost (%v)", err)
		}
		began := l.Clock.Now()
		if err := l.Pass(ctx); err != nil {
			sum.Failed++
			log.Error("pass failed", "slot", slot, "err", err)
		}
		sum.Passes++
		if took := l.Clock.Now().Sub(began); took > interval {
			log.Warn("pass overran its slot", "slot", slot, "took", took)
		}
	}
	sum.Reason = "window done"
	return sum, nil
}
