package passloop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/passfake"
)

func at(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func TestRunCoversTheSlotsOfItsMinute(t *testing.T) {
	clock := passfake.NewClock(at("2026-11-29T12:00:00.4Z"))
	var slots []string
	loop := &Loop{Clock: clock, Lease: (&passfake.Lease{}).Handle("a"), Pass: func(context.Context) error {
		slots = append(slots, clock.Now().Format("04:05"))
		clock.Sleep(context.Background(), 2*time.Second) // a pass takes 2 s
		return nil
	}}
	sum, err := loop.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"00:00", "00:10", "00:20", "00:30", "00:40", "00:50"}
	if len(slots) != 6 || slots[0] != "00:00" || slots[5] != "00:50" || sum.Passes != 6 {
		t.Fatalf("got passes at %v (%+v), want %v", slots, sum, want)
	}
}

func TestRunStartingMidMinuteCoversSixSlots(t *testing.T) {
	clock := passfake.NewClock(at("2026-11-29T12:00:23Z"))
	var slots []string
	loop := &Loop{Clock: clock, Lease: (&passfake.Lease{}).Handle("a"), Pass: func(context.Context) error {
		slots = append(slots, clock.Now().Format("04:05"))
		return nil
	}}
	if _, err := loop.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(slots); got != 6 || slots[0] != "00:30" || slots[5] != "01:20" {
		t.Errorf("got %v, want the six slots 00:30 … 01:20", slots)
	}
}

func TestOverrunSkipsTheNextSlot(t *testing.T) {
	clock := passfake.NewClock(at("2026-11-29T12:00:00Z"))
	var slots []string
	n := 0
	loop := &Loop{Clock: clock, Lease: (&passfake.Lease{}).Handle("a"), Pass: func(context.Context) error {
		slots = append(slots, clock.Now().Format("04:05"))
		n++
		if n == 2 {
			clock.Sleep(context.Background(), 14*time.Second) // overruns 00:20
		}
		return nil
	}}
	sum, err := loop.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 1 || len(slots) != 5 || slots[2] != "00:30" {
		t.Errorf("got %v skipped %d, want 00:20 skipped and 00:30 on time", slots, sum.Skipped)
	}
}

func TestSecondInvocationExitsAtOnceWhileTheLeaseIsHeld(t *testing.T) {
	lease := passfake.HeldBy("a", at("2026-11-29T12:01:00Z"))
	clock := passfake.NewClock(at("2026-11-29T12:00:05Z"))
	passes := 0
	loop := &Loop{Clock: clock, Lease: lease.Handle("b"), Pass: func(context.Context) error { passes++; return nil }}
	_, err := loop.Run(context.Background())
	if !errors.Is(err, ErrLeaseHeld) || passes != 0 {
		t.Errorf("got %v after %d passes, want ErrLeaseHeld and none", err, passes)
	}
	if clock.Now() != at("2026-11-29T12:00:05Z") {
		t.Errorf("it waited until %v, want an immediate exit", clock.Now())
	}
}

func TestNewcomerWaitsForAHandOver(t *testing.T) {
	lease := passfake.HeldBy("a", at("2026-11-29T12:01:00Z"))
	clock := passfake.NewClock(at("2026-11-29T12:00:59.5Z"))
	// The holder releases when the clock passes 12:01:00 (its last pass ends).
	h := lease.Handle("b")
	loop := &Loop{Clock: clock, Lease: releasing{h, lease, at("2026-11-29T12:01:01Z"), clock}, Pass: func(context.Context) error { return nil }}
	sum, err := loop.Run(context.Background())
	if err != nil || sum.Passes == 0 || sum.Waited == 0 {
		t.Errorf("got %+v, %v; want it to wait for the hand-over, then pass", sum, err)
	}
}

// releasing frees the old holder's lease once the clock reaches at.
type releasing struct {
	passfake.Handle
	l     *passfake.Lease
	at    time.Time
	clock *passfake.Clock
}

func (r releasing) Acquire(ctx context.Context, now, until time.Time) (bool, string, time.Time, error) {
	if !now.Before(r.at) {
		_ = r.l.Handle("a").Release(ctx)
	}
	return r.Handle.Acquire(ctx, now, until)
}

func TestLostLeaseStops(t *testing.T) {
	lease := &passfake.Lease{}
	clock := passfake.NewClock(at("2026-11-29T12:00:00Z"))
	passes := 0
	loop := &Loop{Clock: clock, Lease: lease.Handle("a"), Pass: func(context.Context) error {
		passes++
		if passes == 2 {
			lease.Lose()
		}
		return nil
	}}
	sum, err := loop.Run(context.Background())
	if err == nil || passes != 2 || sum.Reason != "lease lost" {
		t.Errorf("got %d passes, %+v, %v; want a stop after the lease was lost", passes, sum, err)
	}
}

func TestFailedPassDoesNotStopTheLoop(t *testing.T) {
	clock := passfake.NewClock(at("2026-11-29T12:00:00Z"))
	loop := &Loop{Clock: clock, Lease: (&passfake.Lease{}).Handle("a"), Pass: func(context.Context) error { return errors.New("boom") }}
	sum, err := loop.Run(context.Background())
	if err != nil || sum.Failed != 6 || sum.Passes != 6 {
		t.Errorf("got %+v, %v; want six failed passes and no error", sum, err)
	}
}
