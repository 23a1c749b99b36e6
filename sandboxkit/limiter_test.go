package sandboxkit

import (
	"context"
	"testing"
	"time"
)

func TestLimiterSlidingWindow(t *testing.T) {
	clock := newFakeClock()
	l, err := NewLimiter(3, time.Second, clock)
	if err != nil {
		t.Fatal(err)
	}
	t0 := clock.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	steps := []struct {
		at   int // ms after t0
		want time.Duration
	}{
		{0, 0}, {100, 0}, {900, 0}, // three calls fill the window
		{950, 50 * time.Millisecond},   // the fourth waits for the call at 0 to leave
		{1000, 0},                      // it has left: the window is (0, 1000] holding 100 and 900
		{1050, 50 * time.Millisecond},  // full again: 100 leaves at 1100
		{1100, 0},                      //
		{1200, 700 * time.Millisecond}, // holding 900, 1000, 1100
	}
	for _, s := range steps {
		if got := l.Reserve(at(s.at)); got != s.want {
			t.Errorf("Reserve at +%dms = %s, want %s", s.at, got, s.want)
		}
	}
}

// No burst of 2×limit across a window boundary, unlike a fixed window: in any
// window of one second at most limit calls start.
func TestLimiterNeverExceedsLimitInAnyWindow(t *testing.T) {
	clock := newFakeClock()
	l, _ := NewLimiter(5, time.Second, clock)
	var starts []time.Time
	for range 40 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		starts = append(starts, clock.Now())
		clock.advance(37 * time.Millisecond)
	}
	for i := range starts {
		n := 0
		for _, s := range starts[i:] {
			if s.Sub(starts[i]) < time.Second {
				n++
			}
		}
		if n > 5 {
			t.Fatalf("%d calls in the second from %s, limit 5", n, starts[i].Format("15:04:05.000"))
		}
	}
	if len(clock.slept()) == 0 {
		t.Error("40 calls 37 ms apart under 5/s never waited")
	}
}

func TestLimiterWaitEndsWithContext(t *testing.T) {
	l, _ := NewLimiter(1, time.Hour, newFakeClock())
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := l.Wait(ctx); err == nil {
		t.Error("Wait on a full window with a cancelled context returned nil")
	}
}

func TestNewLimiterRejects(t *testing.T) {
	if _, err := NewLimiter(0, time.Second, nil); err == nil {
		t.Error("limit 0 accepted")
	}
	if _, err := NewLimiter(1, 0, nil); err == nil {
		t.Error("window 0 accepted")
	}
}
