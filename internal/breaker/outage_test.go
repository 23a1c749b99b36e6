package breaker

import (
	"testing"
	"time"
)

// outage is what a walk through a provider outage measured.
type outage struct {
	openedAt, closedAt time.Time // first OPEN; first CLOSED after the outage ended
	halfOpenTimes      int
	wasted             int // jobs launched into the outage
}

// walkOutage walks a model through a 10-minute provider outage pass by pass,
// every 10 s. The model runs 5-minute eval jobs; while closed the limits
// admit 5 jobs a pass, so about 150 run at once. During the outage every
// running job fails fast with a provider error 10 to 30 s after its first
// call, and every new job too. Afterwards jobs succeed again. With gateway,
// every running job makes one call a period and the gateway's error rate of
// each 10-s period arrives 20 s after its end, as CloudWatch delivers it.
func walkOutage(t *testing.T, cfg Config, gateway bool) (outageFrom, outageTo time.Time, o outage) {
	t.Helper()
	const (
		pass      = 10 * time.Second
		perPass   = 5 // what the limits would admit each pass
		jobLength = 5 * time.Minute
		delay     = 2 // passes a datapoint takes to arrive
	)
	start := t0
	outageFrom, outageTo = start.Add(10*time.Minute), start.Add(20*time.Minute)
	end := start.Add(35 * time.Minute)
	down := func(t time.Time) bool { return !t.Before(outageFrom) && t.Before(outageTo) }

	type job struct {
		id    int
		start time.Time
	}
	var (
		running []job
		calls   []int // running jobs at each pass: the calls of its period
		nextID  int
		st      State
		probes  int // admitted in the current HALF_OPEN
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
		calls = append(calls, len(running))
		var gw Gateway
		if k := len(calls) - 1 - delay; gateway && k >= 0 && calls[k] > 0 {
			at := start.Add(time.Duration(k+1) * pass)
			gw = Gateway{Calls: float64(calls[k]), At: at}
			if down(at.Add(-pass)) {
				gw.Rate = 1
			}
		}

		// 2. The breaker.
		prev := st.Phase
		d := Step(cfg, st, seen, gw, now)
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
			o.wasted += admit
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
				o.halfOpenTimes++
				probes = 0
			}
			probes += admit
			// Without the gateway's rate the probes are all it admits; with
			// it, failed probes are replaced, never more than Probes at once.
			if !gateway && probes > cfg.Probes || admit > cfg.Probes {
				t.Fatalf("t+%v: half-open admitted %d probes (%d this pass), want at most %d", now.Sub(start), probes, admit, cfg.Probes)
			}
		}
		if now.Before(outageFrom) && phase != Closed {
			t.Fatalf("t+%v: %s before the outage (%s), want CLOSED", now.Sub(start), phase, d.Reason)
		}
		if phase == Open && o.openedAt.IsZero() {
			o.openedAt = now
		}
		if !o.openedAt.IsZero() && now.Before(outageTo) && phase == Closed {
			t.Fatalf("t+%v: closed during the outage (%s)", now.Sub(start), d.Reason)
		}
		if !now.Before(outageTo) && phase == Closed && o.closedAt.IsZero() {
			o.closedAt = now
		}
		if !o.closedAt.IsZero() && phase != Closed {
			t.Fatalf("t+%v: %s after recovery (%s), want it to stay CLOSED", now.Sub(start), phase, d.Reason)
		}
	}
	if o.openedAt.IsZero() {
		t.Fatalf("never opened, want OPEN within a minute of the outage")
	}
	if got, want := o.openedAt.Sub(outageFrom), time.Minute; got > want {
		t.Errorf("opened %v after the outage began, want within %v", got, want)
	}
	if o.closedAt.IsZero() {
		t.Fatalf("never closed after the outage ended")
	}
	t.Logf("opened %v into the outage, closed %v after it, %d launches wasted, %d half-open episodes",
		o.openedAt.Sub(outageFrom), o.closedAt.Sub(outageTo), o.wasted, o.halfOpenTimes)
	return outageFrom, outageTo, o
}

// TestProviderOutage: by exit codes alone, probes are whole jobs.
func TestProviderOutage(t *testing.T) {
	cfg := DefaultConfig()
	_, outageTo, o := walkOutage(t, cfg, false)
	if o.halfOpenTimes < 2 {
		t.Errorf("half-open %d times, want at least 2 (probes during the outage, then after it)", o.halfOpenTimes)
	}
	// Recovery takes at most a cooldown, then one job length for the probes.
	if got, want := o.closedAt.Sub(outageTo), cfg.Cooldown+5*time.Minute+time.Minute; got > want {
		t.Errorf("closed %v after the outage ended, want within %v", got, want)
	}
	// Without the breaker the outage would take 60 passes × 5 = 300 launches.
	if got, want := o.wasted, 60; got > want {
		t.Errorf("launched %d jobs into the outage, want at most %d", got, want)
	}
}

// TestProviderOutageWithGatewayRate: the gateway's error rate closes the
// breaker as soon as the probes' calls succeed, without waiting for them to
// end: the datapoints' delay, 20 s of them and one pass.
func TestProviderOutageWithGatewayRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GatewayThreshold = DefaultGatewayThreshold
	_, outageTo, o := walkOutage(t, cfg, true)
	if got, want := o.closedAt.Sub(outageTo), time.Minute; got > want {
		t.Errorf("closed %v after the outage ended, want within %v", got, want)
	}
	// Replaced probes cost launches: 3 in flight, each failing 10–30 s
	// after it starts, for the 8 minutes the breaker is half-open.
	if got, want := o.wasted, 100; got > want {
		t.Errorf("launched %d jobs into the outage, want at most %d", got, want)
	}
}
