package breaker

import (
	"testing"
	"time"
)

// TestProviderOutage walks a model through a 10-minute provider outage pass
// by pass, every 10 s, with the default config.
//
// The model runs 5-minute eval jobs; while closed the limits admit 5 jobs a
// pass, so about 150 run at once. During the outage every running job fails
// fast with a provider error 10 to 30 s after its first call, and every new
// job too. Afterwards jobs succeed again.
func TestProviderOutage(t *testing.T) {
	const (
		pass      = 10 * time.Second
		perPass   = 5 // what the limits would admit each pass
		jobLength = 5 * time.Minute
	)
	cfg := DefaultConfig()
	start := t0
	outageFrom, outageTo := start.Add(10*time.Minute), start.Add(20*time.Minute)
	end := start.Add(35 * time.Minute)
	down := func(t time.Time) bool { return !t.Before(outageFrom) && t.Before(outageTo) }

	type job struct {
		id    int
		start time.Time
	}
	var (
		running       []job
		nextID        int
		st            State
		openedAt      time.Time // first OPEN
		closedAt      time.Time // first CLOSED after the outage began
		halfOpenTimes int
		probes        int // admitted in the current HALF_OPEN
		wasted        int // jobs launched into the outage
	)
	for now := start; !now.After(end); now = now.Add(pass) {
		// 1. Jobs that ended since the last pass.
		var seen Outcomes
		kept := running[:0]
		for _, j := range running {
			switch {
			case down(now) && now.Sub(later(j.start, outageFrom)) >= pass*time.Duration(1+j.id%3):
				seen.ProviderFailed++
			case now.Sub(j.start) >= jobLength:
				seen.OK++
			default:
				kept = append(kept, j)
			}
		}
		running = kept

		// 2. The breaker.
		prev := st.Phase
		d := Step(cfg, st, seen, now)
		phase := d.State.Phase
		if phase != prev {
			t.Logf("t+%v: %s (ended %d ok, %d failed; %d running)", now.Sub(start), d.Reason, seen.OK, seen.ProviderFailed, len(running))
		}

		// 3. Admission: the limits would admit perPass, the breaker caps it.
		admit := perPass
		if d.Allow >= 0 {
			admit = min(admit, d.Allow)
		}
		for range admit {
			running = append(running, job{id: nextID, start: now})
			nextID++
		}
		st = d.State.Admitted(admit)
		if down(now) {
			wasted += admit
		}

		// 4. What an operator expects.
		switch phase {
		case Closed:
			if d.Allow != -1 {
				t.Fatalf("t+%v: closed with Allow %d, want -1", now.Sub(start), d.Allow)
			}
		case Open:
			if admit != 0 {
				t.Fatalf("t+%v: open admitted %d, want 0", now.Sub(start), admit)
			}
		case HalfOpen:
			if prev != HalfOpen {
				halfOpenTimes++
				probes = 0
			}
			probes += admit
			if probes > cfg.Probes {
				t.Fatalf("t+%v: half-open admitted %d probes, want at most %d", now.Sub(start), probes, cfg.Probes)
			}
		}
		if now.Before(outageFrom) && phase != Closed {
			t.Fatalf("t+%v: %s before the outage (%s), want CLOSED", now.Sub(start), phase, d.Reason)
		}
		if phase == Open && openedAt.IsZero() {
			openedAt = now
		}
		if !openedAt.IsZero() && now.Before(outageTo) && phase == Closed {
			t.Fatalf("t+%v: closed during the outage (%s)", now.Sub(start), d.Reason)
		}
		if !now.Before(outageTo) && phase == Closed && closedAt.IsZero() {
			closedAt = now
		}
		if !closedAt.IsZero() && phase != Closed {
			t.Fatalf("t+%v: %s after recovery (%s), want it to stay CLOSED", now.Sub(start), phase, d.Reason)
		}
	}

	if openedAt.IsZero() {
		t.Fatalf("never opened, want OPEN within a minute of the outage")
	}
	if got, want := openedAt.Sub(outageFrom), time.Minute; got > want {
		t.Errorf("opened %v after the outage began, want within %v", got, want)
	}
	if halfOpenTimes < 2 {
		t.Errorf("half-open %d times, want at least 2 (probes during the outage, then after it)", halfOpenTimes)
	}
	if closedAt.IsZero() {
		t.Fatalf("never closed after the outage ended")
	}
	// Recovery takes at most a cooldown, then one job length for the probes.
	if got, want := closedAt.Sub(outageTo), cfg.Cooldown+jobLength+time.Minute; got > want {
		t.Errorf("closed %v after the outage ended, want within %v", got, want)
	}
	// Without the breaker the outage would take 60 passes × 5 = 300 launches.
	if got, want := wasted, 60; got > want {
		t.Errorf("launched %d jobs into the outage, want at most %d", got, want)
	}
	t.Logf("opened %v into the outage, closed %v after it, %d launches wasted, %d half-open episodes",
		openedAt.Sub(outageFrom), closedAt.Sub(outageTo), wasted, halfOpenTimes)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
