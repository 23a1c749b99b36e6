package limits

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// in builds an Input measured 20 s before the pass, as CloudWatch delivers it.
func in(depth float64, running, starting, waiting int) Input {
	return Input{Now: t0, Depth: depth, DepthAt: t0.Add(-20 * time.Second), Running: running, Starting: starting, Waiting: waiting}
}

func TestNext(t *testing.T) {
	gpt := Model{Target: 40, Min: 1, Max: 10000}
	cases := []struct {
		name      string
		model     Model
		state     State
		in        Input
		want      int
		action    Action
		reasonHas string
	}{
		{"pin wins over depth", Model{Target: 40, Min: 1, Max: 500, Pin: 200}, State{Limit: 50}, in(0, 50, 0, 900), 200, Pinned, "pinned at 200"},
		{"pin clamped to max", Model{Target: 40, Min: 1, Max: 100, Pin: 200}, State{Limit: 50}, in(0, 50, 0, 900), 100, Pinned, "pinned at 100"},
		{"missing datapoint holds", gpt, State{Limit: 300}, Input{Now: t0, Running: 300, Waiting: 10}, 300, Held, "no depth datapoint"},
		{"stale datapoint holds", gpt, State{Limit: 300}, Input{Now: t0, DepthAt: t0.Add(-5 * time.Minute), Running: 300, Waiting: 10}, 300, Held, "old >"},
		{"cold model doubles at depth 0", gpt, State{Limit: 10}, in(0, 10, 0, 20000), 20, Raised, "raise ×2: depth 0 < target 40, 20000 waiting"},
		{"near target raises a little", gpt, State{Limit: 1000}, in(15, 990, 10, 500), 1391, Raised, "raise ×1.4"},
		{"inside the band holds", gpt, State{Limit: 1000}, in(35, 990, 10, 500), 1000, Held, "within 20..60"},
		{"nothing waiting holds", gpt, State{Limit: 1000}, in(0, 990, 10, 0), 1000, Held, "nothing waiting"},
		{"no windup below a non-binding limit", gpt, State{Limit: 1000}, in(0, 400, 10, 50), 1000, Held, "not binding"},
		{"previous raise still starting holds", gpt, State{Limit: 400, RaisedAt: t0.Add(-30 * time.Second), RaisedBy: 200}, Input{Now: t0, DepthAt: t0.Add(-20 * time.Second), Running: 250, Starting: 150, Waiting: 900, PendingRaise: 150}, 400, Held, "150 of the last raise's 200 launches still starting"},
		{"previous raise mostly running raises", gpt, State{Limit: 400, RaisedAt: t0.Add(-60 * time.Second), RaisedBy: 200}, Input{Now: t0, DepthAt: t0.Add(-20 * time.Second), Running: 380, Starting: 20, Waiting: 900, PendingRaise: 20}, 800, Raised, "raise ×2"},
		{"overshoot lowers from the load", gpt, State{Limit: 2000}, in(440, 1800, 0, 900), 1400, Lowered, "lower to 1400: depth 440 > target 40, 1800 running+starting"},
		{"lowering never raises", gpt, State{Limit: 1000}, in(100, 1040, 30, 900), 1000, Held, "already"},
		{"lowering stops at min", Model{Target: 5, Min: 10, Max: 100}, State{Limit: 50}, in(200, 50, 0, 10), 10, Lowered, "lower to 10"},
		{"raise stops at max", Model{Target: 40, Min: 1, Max: 1500}, State{Limit: 1000}, in(0, 1000, 0, 900), 1500, Raised, "raise"},
		{"at max holds", Model{Target: 40, Min: 1, Max: 1000}, State{Limit: 1000}, in(0, 1000, 0, 900), 1000, Held, "at max 1000"},
		{"a limit of 1 still grows", Model{Target: 5, Min: 1, Max: 100}, State{Limit: 1}, in(1, 1, 0, 10), 2, Raised, "raise"},
		{"zero limit from state is clamped to min", Model{Target: 5, Min: 3, Max: 100}, State{}, in(5, 0, 0, 10), 3, Held, "within"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Next(DefaultConfig(), c.model, c.state, c.in)
			if d.State.Limit != c.want || d.Action != c.action {
				t.Errorf("got limit %d (%s), want %d (%s); reason %q", d.State.Limit, d.Action, c.want, c.action, d.Reason)
			}
			if !strings.Contains(d.Reason, c.reasonHas) {
				t.Errorf("got reason %q, want it to contain %q", d.Reason, c.reasonHas)
			}
		})
	}
}

func TestNextRecordsTheRaise(t *testing.T) {
	d := Next(DefaultConfig(), Model{Target: 40, Min: 1, Max: 10000}, State{Limit: 100}, in(0, 100, 0, 500))
	if d.State.RaisedAt != t0 || d.State.RaisedBy != 100 {
		t.Errorf("got RaisedAt %v RaisedBy %d, want %v and 100", d.State.RaisedAt, d.State.RaisedBy, t0)
	}
}

func TestConfirmBelowWaitsForEvidence(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ConfirmBelow = 30 * time.Second
	m := Model{Target: 40, Min: 1, Max: 10000}
	st := State{Limit: 1000}
	// A single low reading starts the clock and holds ...
	d := Next(cfg, m, st, in(0, 1000, 0, 500))
	if d.Action != Held || d.State.BelowSince.IsZero() {
		t.Fatalf("got %s with BelowSince %v, want a hold that starts the clock", d.Action, d.State.BelowSince)
	}
	// ... a reading back in the band resets it ...
	back := Next(cfg, m, d.State, in(40, 1000, 0, 500))
	if !back.State.BelowSince.IsZero() {
		t.Fatalf("got BelowSince %v after a reading in the band, want zero", back.State.BelowSince)
	}
	// ... and low readings for 30 s raise.
	later := in(0, 1000, 0, 500)
	later.Now, later.DepthAt = t0.Add(30*time.Second), t0.Add(10*time.Second)
	if d2 := Next(cfg, m, d.State, later); d2.Action != Raised {
		t.Errorf("got %s (%s) after 30 s below, want a raise", d2.Action, d2.Reason)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	bad := DefaultConfig()
	bad.Band = 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "band") {
		t.Errorf("got %v, want an error naming band", err)
	}
}

// FuzzNext checks the invariants: min ≤ limit ≤ max, a raise only when work
// waits, and a reason on every decision.
func FuzzNext(f *testing.F) {
	f.Add(40.0, 0.0, 10, 1, 10000, 0, 10, 0, 5000, 0)
	f.Add(5.0, 300.0, 50, 10, 100, 0, 50, 20, 10, 3)
	f.Add(40.0, 20.0, 1000, 1, 10000, 700, 900, 100, 0, 0)
	f.Fuzz(func(t *testing.T, target, depth float64, limit, lo, hi, pin, running, starting, waiting, pending int) {
		if target < 0 || depth < 0 || lo < 0 || running < 0 || starting < 0 || waiting < 0 || pending < 0 {
			return
		}
		if hi < lo {
			hi = lo
		}
		m := Model{Target: target, Min: lo, Max: hi, Pin: pin}
		d := Next(DefaultConfig(), m, State{Limit: limit, RaisedBy: pending}, Input{
			Now: t0, Depth: depth, DepthAt: t0, Running: running, Starting: starting, Waiting: waiting, PendingRaise: pending,
		})
		if d.State.Limit < lo || d.State.Limit > hi {
			t.Fatalf("limit %d outside [%d, %d] (%s)", d.State.Limit, lo, hi, d.Reason)
		}
		if d.Action == Raised && waiting == 0 {
			t.Fatalf("raised with nothing waiting: %s", d.Reason)
		}
		if d.Reason == "" {
			t.Fatal("decision without a reason")
		}
	})
}
