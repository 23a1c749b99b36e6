package sandboxkit

import (
	"context"
	"time"
)

// Clock is the time the limiter, breaker and retries read and wait on. Tests
// give a fake one that advances on Sleep, so no test waits on the wall clock.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, whichever is first.
	Sleep(ctx context.Context, d time.Duration) error
}

// WallClock is the real clock.
type WallClock struct{}

func (WallClock) Now() time.Time { return time.Now() }

func (WallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
