package breaker

import (
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
)

// FuzzStep drives Step from arbitrary states, outcomes, configs and times for
// a few passes and checks after every pass that
//   - it does not panic and is deterministic;
//   - it leaves its input's buckets alone;
//   - Allow is -1 only when CLOSED, 0 when OPEN, in [0, Probes] when HALF_OPEN;
//   - the phase is one of the three and the Reason is not empty;
//   - buckets are aligned, strictly ordered, not empty, not negative, and
//     inside the window (start ≤ now, now − start < Window);
//   - counters are not negative, and probe counters are zero outside HALF_OPEN.
func FuzzStep(f *testing.F) {
	f.Add(uint8(0), int64(0), []byte{}, 0, 0, 0, 10, 10, int64(t0.Unix()), int64(0), int64(0), int64(0), 0.0, 0, int64(0), 0, 5, uint8(30), 0.0, 0.0, int64(0))
	f.Add(uint8(1), int64(-time.Minute), []byte{0, 0, 0, 0, 3, 9}, 0, 0, 0, 1, 40, int64(t0.Unix()), int64(7), int64(time.Minute), int64(7*time.Second), 0.3, 5, int64(time.Second), 1, 1, uint8(200), 0.05, 12.0, int64(-20*time.Second))
	f.Add(uint8(2), int64(time.Hour), []byte{255, 255, 255, 255, 1, 1, 0, 0, 0, 10, 0, 0}, 3, 1, 1, 0, 2, int64(-1), int64(999999999), int64(-5), int64(math.MaxInt64), 1.0, -1, int64(math.MaxInt64), math.MaxInt, math.MaxInt, uint8(3), 0.9, 3.0, int64(time.Hour))
	f.Add(uint8(3), int64(math.MinInt64), []byte{1, 2, 3}, -1, -2, -3, math.MaxInt, math.MaxInt, int64(1<<40), int64(0), int64(1), int64(1), math.NaN(), math.MaxInt, int64(1), 1, -1, uint8(9), math.NaN(), math.Inf(1), int64(math.MinInt64))

	f.Fuzz(func(t *testing.T, phase uint8, sinceOff int64, raw []byte,
		probesAdmitted, probeOK, probeFailed, seenOK, seenFailed int,
		nowSec, nowNsec, window, bucketLen int64, threshold float64, minSamples int, cooldown int64, probes int,
		admit int, passes uint8, gwRate, gwCalls float64, gwOff int64) {
		cfg := Config{
			Window: time.Duration(window), Bucket: time.Duration(bucketLen), Threshold: threshold,
			MinSamples: minSamples, Cooldown: time.Duration(cooldown), Probes: probes,
			GatewayThreshold: DefaultGatewayThreshold * float64(passes%2),
		}
		eff := cfg.effective()
		if err := eff.Validate(); err != nil {
			t.Fatalf("effective config %+v is invalid: %v", eff, err)
		}

		// Times within about ±500 years of the epoch, so that start ≤ now is meaningful.
		now := time.Unix(nowSec%(1<<34), nowNsec%int64(time.Second)).UTC()
		st := State{
			Phase:          []Phase{"", Closed, Open, HalfOpen, "BROKEN"}[int(phase)%5],
			Since:          now.Add(time.Duration(sinceOff)),
			ProbesAdmitted: probesAdmitted, ProbeOK: probeOK, ProbeFailed: probeFailed,
		}
		for b := raw; len(b) >= 6; b = b[6:] {
			off := time.Duration(int32(binary.BigEndian.Uint32(b))) * time.Second
			st.Buckets = append(st.Buckets, Bucket{Start: now.Add(off), OK: int(int8(b[4])), Failed: int(int8(b[5]))})
		}
		seen := Outcomes{OK: seenOK, ProviderFailed: seenFailed}
		gw := Gateway{Rate: gwRate, Calls: gwCalls, At: now.Add(time.Duration(gwOff))}

		for i := range int(passes)%32 + 1 {
			before := slices.Clone(st.Buckets)
			d := Step(cfg, st, seen, gw, now)
			if !reflect.DeepEqual(st.Buckets, before) {
				t.Fatalf("pass %d: Step modified its input buckets: got %v, want %v", i, st.Buckets, before)
			}
			if again := Step(cfg, st, seen, gw, now); !reflect.DeepEqual(again, d) {
				t.Fatalf("pass %d: Step is not deterministic: got %+v, then %+v", i, d, again)
			}
			checkDecision(t, i, eff, d, now)

			// The scheduler admits what it wants within Allow.
			n := max(admit, 0)
			if d.Allow >= 0 {
				n = min(n, d.Allow)
			}
			st = d.State.Admitted(n)
			if d.State.Phase == HalfOpen && st.ProbesAdmitted != addSat(d.State.ProbesAdmitted, n) {
				t.Fatalf("pass %d: Admitted(%d) got ProbesAdmitted %d, want %d", i, n, st.ProbesAdmitted, addSat(d.State.ProbesAdmitted, n))
			}
			if d.State.Phase != HalfOpen && !reflect.DeepEqual(st, d.State) {
				t.Fatalf("pass %d: Admitted(%d) in %s changed the state: got %+v, want %+v", i, n, d.State.Phase, st, d.State)
			}

			now = now.Add(10 * time.Second)
			seen = Outcomes{OK: (seenOK + i) % 7, ProviderFailed: (seenFailed * (i + 1)) % 11}
			gw.At, gw.Rate = gw.At.Add(10*time.Second), gwRate*float64(i%3)/2
		}
	})
}

func checkDecision(t *testing.T, pass int, cfg Config, d Decision, now time.Time) {
	t.Helper()
	s := d.State
	switch s.Phase {
	case Closed:
		if d.Allow != -1 {
			t.Fatalf("pass %d: CLOSED with Allow %d, want -1", pass, d.Allow)
		}
	case Open:
		if d.Allow != 0 {
			t.Fatalf("pass %d: OPEN with Allow %d, want 0", pass, d.Allow)
		}
	case HalfOpen:
		if d.Allow < 0 || d.Allow > cfg.Probes {
			t.Fatalf("pass %d: HALF_OPEN with Allow %d, want in [0, %d]", pass, d.Allow, cfg.Probes)
		}
	default:
		t.Fatalf("pass %d: phase %q, want CLOSED, OPEN or HALF_OPEN", pass, s.Phase)
	}
	if d.Reason == "" {
		t.Fatalf("pass %d: empty Reason", pass)
	}
	if s.ProbesAdmitted < 0 || s.ProbeOK < 0 || s.ProbeFailed < 0 {
		t.Fatalf("pass %d: negative probe counters in %+v", pass, s)
	}
	if s.Phase != HalfOpen && (s.ProbesAdmitted != 0 || s.ProbeOK != 0 || s.ProbeFailed != 0) {
		t.Fatalf("pass %d: %s with probe counters %d/%d/%d, want zero", pass, s.Phase, s.ProbesAdmitted, s.ProbeOK, s.ProbeFailed)
	}
	if s.Since.After(now) {
		t.Fatalf("pass %d: Since %v is after now %v", pass, s.Since, now)
	}
	if s.RateAt.After(now) || s.HealthyAt.After(s.RateAt) || s.HealthyCalls < 0 {
		t.Fatalf("pass %d: gateway evidence %v..%v of %v calls, want HealthyAt ≤ RateAt ≤ now %v and calls ≥ 0", pass, s.HealthyAt, s.RateAt, s.HealthyCalls, now)
	}
	if s.Phase == Closed && (!s.HealthyAt.IsZero() || s.HealthyCalls != 0) {
		t.Fatalf("pass %d: CLOSED with gateway evidence %v, %v calls, want none", pass, s.HealthyAt, s.HealthyCalls)
	}
	for i, b := range s.Buckets {
		switch {
		case b.OK < 0 || b.Failed < 0:
			t.Fatalf("pass %d: bucket %d has negative counts %+v", pass, i, b)
		case b.OK == 0 && b.Failed == 0:
			t.Fatalf("pass %d: bucket %d is empty", pass, i)
		case b.Start.After(now):
			t.Fatalf("pass %d: bucket %d starts at %v, after now %v", pass, i, b.Start, now)
		case now.Sub(b.Start) >= cfg.Window:
			t.Fatalf("pass %d: bucket %d starts at %v, %v before now, want within window %v", pass, i, b.Start, now.Sub(b.Start), cfg.Window)
		case !bucketStart(b.Start, cfg.Bucket).Equal(b.Start):
			t.Fatalf("pass %d: bucket %d start %v is not aligned to %v", pass, i, b.Start, cfg.Bucket)
		case i > 0 && !s.Buckets[i-1].Start.Before(b.Start):
			t.Fatalf("pass %d: bucket %d starts at %v, not after bucket %d at %v", pass, i, b.Start, i-1, s.Buckets[i-1].Start)
		}
	}
}
