package sandboxkit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Limiter allows at most Limit calls in any sliding window of Window: it keeps
// the start times of the last Limit calls in a ring, and a call may start once
// the oldest of them is a Window old. Unlike a token bucket it never lets a
// burst of 2×Limit straddle a window boundary, which is what a gateway's own
// per-minute quota counts.
type Limiter struct {
	limit  int
	window time.Duration
	clock  Clock

	mu    sync.Mutex
	ring  []time.Time // the starts of the last limit calls, oldest at next
	next  int
	count int
}

// NewLimiter allows limit calls per window on clock (nil: the wall clock).
func NewLimiter(limit int, window time.Duration, clock Clock) (*Limiter, error) {
	if limit < 1 {
		return nil, fmt.Errorf("limiter: limit %d: must be at least 1", limit)
	}
	if window <= 0 {
		return nil, fmt.Errorf("limiter: window %s: must be positive", window)
	}
	if clock == nil {
		clock = WallClock{}
	}
	return &Limiter{limit: limit, window: window, clock: clock, ring: make([]time.Time, limit)}, nil
}

// Reserve takes a slot at now if the window has one and returns 0; otherwise
// it takes nothing and returns how long until the oldest call leaves the
// window.
func (l *Limiter) Reserve(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == l.limit {
		if wait := l.ring[l.next].Add(l.window).Sub(now); wait > 0 {
			return wait
		}
	} else {
		l.count++
	}
	l.ring[l.next] = now
	l.next = (l.next + 1) % l.limit
	return 0
}

// Wait blocks until a call may start, or ctx ends.
func (l *Limiter) Wait(ctx context.Context) error {
	for {
		wait := l.Reserve(l.clock.Now())
		if wait == 0 {
			return nil
		}
		if err := l.clock.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("limiter: %w", err)
		}
	}
}
