package sandboxkit

import (
	"testing"
	"time"
)

func newTestBreaker(t *testing.T) (*Breaker, *fakeClock) {
	t.Helper()
	b, err := NewBreaker(BreakerConfig{MinSamples: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return b, newFakeClock()
}

// record lets n calls through at now and records v for each.
func record(t *testing.T, b *Breaker, now time.Time, n int, v Verdict) {
	t.Helper()
	for range n {
		if ok, _ := b.Allow(now); !ok {
			t.Fatalf("Allow refused a call in %s", b.State(now))
		}
		b.Record(now, v)
	}
}

func TestBreakerTripsOnOverloadShare(t *testing.T) {
	cases := []struct {
		name      string
		ok, over  int
		wantState State
	}{
		{"below the minimum sample", 0, 7, Closed},
		{"under 25 %", 7, 2, Closed}, // 2/9 = 22 %
		{"at 25 %", 6, 2, Open},      // 2/8
		{"well over", 2, 6, Open},    //
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, clock := newTestBreaker(t)
			now := clock.Now()
			record(t, b, now, c.ok, Answered)
			record(t, b, now, c.over, Overloaded)
			if got := b.State(now); got != c.wantState {
				t.Errorf("state %s, want %s", got, c.wantState)
			}
		})
	}
}

// Outcomes older than the window are forgotten: failures spread thin over
// time do not trip it.
func TestBreakerForgetsOutsideWindow(t *testing.T) {
	b, clock := newTestBreaker(t)
	record(t, b, clock.Now(), 0, Overloaded) // nothing
	record(t, b, clock.Now(), 4, Answered)
	record(t, b, clock.Now(), 3, Overloaded) // 3/7: under the minimum sample
	clock.advance(11 * time.Second)
	record(t, b, clock.Now(), 6, Answered)
	record(t, b, clock.Now(), 1, Overloaded) // 1/7 in the window; 4/14 had it remembered
	record(t, b, clock.Now(), 1, Answered)   // 8 samples, 1 overloaded: 12.5 %
	if got := b.State(clock.Now()); got != Closed {
		t.Errorf("state %s, want CLOSED: the old overloads left the window", got)
	}
}

func TestBreakerOpenHalfOpenClosed(t *testing.T) {
	b, clock := newTestBreaker(t)
	record(t, b, clock.Now(), 8, Overloaded)
	opened := clock.Now()

	// OPEN: refused, told to wait out a cooldown in [5 s, 10 s].
	ok, wait := b.Allow(opened)
	if ok || wait < 5*time.Second || wait > 10*time.Second {
		t.Fatalf("Allow in OPEN = %v, %s; want refused with a wait in [5s, 10s]", ok, wait)
	}
	// HALF_OPEN once the cooldown passed: Probes (3) calls go, the fourth waits.
	now := opened.Add(wait)
	if got := b.State(now); got != HalfOpen {
		t.Fatalf("state after the cooldown %s, want HALF_OPEN", got)
	}
	for i := range 3 {
		if ok, _ := b.Allow(now); !ok {
			t.Fatalf("probe %d refused", i+1)
		}
	}
	if ok, w := b.Allow(now); ok || w != 250*time.Millisecond {
		t.Errorf("a fourth call in HALF_OPEN = %v, %s; want refused for the probe wait", ok, w)
	}
	// An abandoned probe frees its slot without a verdict.
	b.Record(now, Abandoned)
	if ok, _ := b.Allow(now); !ok {
		t.Error("the abandoned probe's slot was not freed")
	}
	// All three answered: CLOSED, with an empty window.
	for range 3 {
		b.Record(now, Answered)
	}
	if got := b.State(now); got != Closed {
		t.Fatalf("state after 3 answered probes %s, want CLOSED", got)
	}
	record(t, b, now, 7, Overloaded) // 7 < MinSamples: the trip's samples were cleared
	if got := b.State(now); got != Closed {
		t.Errorf("state %s, want CLOSED: the window was cleared on closing", got)
	}
}

func TestBreakerHalfOpenProbeOverloadedReopens(t *testing.T) {
	b, clock := newTestBreaker(t)
	record(t, b, clock.Now(), 8, Overloaded)
	_, wait := b.Allow(clock.Now())
	now := clock.Now().Add(wait)
	b.Allow(now)
	b.Allow(now)
	b.Record(now, Answered)
	b.Record(now, Overloaded)
	ok, again := b.Allow(now)
	if ok || b.State(now) != Open || again < 5*time.Second {
		t.Errorf("after an overloaded probe: Allow %v wait %s state %s; want OPEN for a new cooldown", ok, again, b.State(now))
	}
}

// The cooldown is jittered within its bounds, so sandboxes that tripped
// together do not come back together.
func TestBreakerCooldownJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		b, _ := NewBreaker(BreakerConfig{MinSamples: 1, Seed: seed})
		now := newFakeClock().Now()
		b.Allow(now)
		b.Record(now, Overloaded)
		_, wait := b.Allow(now)
		if wait < 5*time.Second || wait > 10*time.Second {
			t.Fatalf("seed %d: cooldown %s outside [5s, 10s]", seed, wait)
		}
		seen[wait] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 seeds gave %d distinct cooldowns; the jitter is not spreading them", len(seen))
	}
}

func TestNewBreakerRejects(t *testing.T) {
	if _, err := NewBreaker(BreakerConfig{Threshold: 1.5}); err == nil {
		t.Error("threshold 1.5 accepted")
	}
}
