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

// st builds a State; by default never raised (every datapoint counts).
type stb struct{ State }

func steady(limit int) *stb { return &stb{State{Limit: limit}} }

// raised: the last raise added by jobs; filled and settled at the given
// offsets from t0 (nil: not yet).
func (s *stb) raised(by int, filled, settled *time.Duration) *stb {
	s.RaisedAt, s.RaisedBy = t0.Add(-2*time.Minute), by
	if filled != nil {
		s.FilledAt = t0.Add(*filled)
	}
	if settled != nil {
		s.SettledAt = t0.Add(*settled)
	}
	return s
}
func (s *stb) held(n int) *stb         { s.Held = n; return s }
func (s *stb) ceiling(n int) *stb      { s.Ceiling, s.CeilingAt = n, t0.Add(-time.Hour); return s }
func (s *stb) freshCeiling(n int) *stb { s.Ceiling, s.CeilingAt = n, t0.Add(-time.Minute); return s }
func (s *stb) ranAt(ago time.Duration, running int) *stb {
	s.Recent = append(s.Recent, Sample{At: t0.Add(-ago), Running: running})
	return s
}

func d(s int) *time.Duration { v := time.Duration(s) * time.Second; return &v }

func TestNext(t *testing.T) {
	gpt := Model{Target: 40, Min: 1, Max: 10000}
	cases := []struct {
		name      string
		model     Model
		state     *stb
		in        Input
		want      int
		action    Action
		reasonHas string
	}{
		{"pin wins over depth", Model{Target: 40, Min: 1, Max: 500, Pin: 200}, steady(50), in(0, 50, 0, 900), 200, Pinned, "pinned at 200"},
		{"pin clamped to max", Model{Target: 40, Min: 1, Max: 100, Pin: 200}, steady(50), in(0, 50, 0, 900), 100, Pinned, "pinned at 100"},
		{"missing datapoint holds", gpt, steady(300), Input{Now: t0, Running: 300, Waiting: 10}, 300, Held, "no depth datapoint"},
		{"stale datapoint holds", gpt, steady(300), Input{Now: t0, DepthAt: t0.Add(-5 * time.Minute), Running: 300, Waiting: 10}, 300, Held, "old >"},
		{"cold model at depth 0 raises fast", gpt, steady(10), in(0, 10, 0, 20000), 40, Raised, "raise ×4: depth 0 < target 0.5 (40 bounded to 0.05 of 10 running), 20000 waiting"},
		{"fast raises stop short of the ceiling", gpt, steady(500).freshCeiling(1000), in(0, 500, 0, 20000), 800, Raised, "raise ×1.6"},
		{"near target raises a little", gpt, steady(1000), in(15, 990, 10, 500), 1032, Raised, "raise ×1.03"},
		{"inside the band holds", gpt, steady(1000), in(35, 990, 10, 500), 1000, Held, "within 20..60"},
		{"nothing waiting holds", gpt, steady(1000), in(0, 990, 10, 0), 1000, Held, "nothing waiting"},
		{"no windup below a non-binding limit", gpt, steady(1000), in(0, 400, 10, 50), 1000, Held, "not binding"},
		{"a limit admission filled binds though jobs ended since", gpt, steady(1000).held(1000), in(0, 780, 100, 500), 4000, Raised, "raise ×4"},
		{"a limit admission did not fill does not bind", gpt, steady(1000).held(500), in(0, 480, 10, 500), 1000, Held, "500 held after the last admission"},
		{"a raise still being launched does not bind", gpt, steady(400).raised(200, nil, nil), in(0, 300, 50, 900), 400, Held, "not binding"},
		{"a raise still starting holds", gpt, steady(400).raised(200, d(-30), nil), Input{Now: t0, DepthAt: t0.Add(-20 * time.Second), Running: 250, Starting: 150, Waiting: 900, PendingRaise: 150}, 400, Held, "150 jobs launched until the last raise filled still starting (the raise added 200)"},
		{"a settled raise waits for a datapoint after it", gpt, steady(400).raised(200, d(-60), d(-10)), in(0, 390, 10, 900), 400, Held, "no datapoint yet"},
		{"a settled, measured raise raises again", gpt, steady(400).raised(200, d(-60), d(-30)), in(0, 390, 10, 900), 1600, Raised, "raise ×4"},
		{"overshoot lowers to the load, keeping no slot when nothing ended", gpt, steady(2000), in(440, 1800, 0, 900), 1800, Lowered, "lower to 1800: depth 440 > target 40, 1800 running+starting"},
		{"overshoot lowers by the excess from the load it measured", gpt, steady(2000).ranAt(20*time.Second, 1900), in(140, 1700, 0, 900), 1850, Lowered, "lower to 1850"},
		{"lowering never raises", gpt, steady(1000), in(100, 1040, 30, 900), 1000, Held, "draining"},
		{"lowering stops at min", Model{Target: 5, Min: 55, Max: 100}, steady(80), in(200, 50, 0, 10), 55, Lowered, "lower to 55"},
		{"a queue none of ours made lowers nothing", gpt, steady(300), in(200, 0, 0, 900), 300, Held, "none of its jobs ran"},
		{"an old ceiling is forgotten: a knee was known, so it doubles", gpt, steady(100).ceiling(150), in(0, 100, 0, 900), 200, Raised, "raise ×2"},
		{"raise stops at max", Model{Target: 40, Min: 1, Max: 1500}, steady(1000), in(0, 1000, 0, 900), 1500, Raised, "raise"},
		{"at max holds", Model{Target: 40, Min: 1, Max: 1000}, steady(1000), in(0, 1000, 0, 900), 1000, Held, "at max 1000"},
		{"a limit of 1 still grows", Model{Target: 5, Min: 1, Max: 100}, steady(1), in(0.02, 1, 0, 10), 2, Raised, "raise ×2"}, // the step taken, 1 → 2, not f
		{"zero limit from state is clamped to min", Model{Target: 5, Min: 3, Max: 100}, steady(0), in(5, 0, 0, 10), 3, Held, "none of its jobs ran"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := Next(DefaultConfig(), c.model, c.state.State, c.in)
			if dec.State.Limit != c.want || dec.Action != c.action {
				t.Errorf("got limit %d (%s), want %d (%s); reason %q", dec.State.Limit, dec.Action, c.want, c.action, dec.Reason)
			}
			if !strings.Contains(dec.Reason, c.reasonHas) {
				t.Errorf("got reason %q, want it to contain %q", dec.Reason, c.reasonHas)
			}
		})
	}
}

func TestDrainKeepsATrickleOfAdmissions(t *testing.T) {
	// 100 jobs ended since the last pass; the depth is far over target. The
	// limit falls, but leaves 10 % of the freed slots to admit.
	input := in(400, 1800, 0, 900)
	input.Ended = 100
	dec := Next(DefaultConfig(), Model{Target: 40, Min: 1, Max: 10000}, State{Limit: 2000}, input)
	if dec.State.Limit != 1810 {
		t.Errorf("got limit %d (%s), want 1810: 1800 running + 10 of the 100 freed slots", dec.State.Limit, dec.Reason)
	}
	if dec.State.Ceiling != 1440 {
		t.Errorf("knee %d, want 1440: the 1800 running less the 360 queued calls past the target", dec.State.Ceiling)
	}
}

// The knee counts running jobs, not slots: after a drain with long
// container starts most slots are starting, and a far-below reading may
// grow the limit by the share the running jobs may grow up to the knee.
func TestKneeCountsRunningJobs(t *testing.T) {
	cfg := DefaultConfig()
	m := Model{Target: 9, Min: 1, Max: 10000}
	st := State{Limit: 532, Ceiling: 394, CeilingAt: t0.Add(-2 * time.Minute)}
	dec := Next(cfg, m, st, in(0, 200, 300, 9000))
	if dec.Action != Raised || dec.State.Limit != 839 {
		t.Errorf("got %s to %d (%s), want a raise to 839: ×(0.8·394/200) of 532, 200 of its slots running", dec.Action, dec.State.Limit, dec.Reason)
	}
	// A drain's later reading pairs the old queue with fewer jobs running:
	// it holds and leaves the knee where the lowering put it.
	st = State{Limit: 500, Ceiling: 394, CeilingAt: t0.Add(-time.Minute), Smoothed: 60, SeenAt: t0.Add(-30 * time.Second)}
	dec = Next(cfg, m, st, in(50, 70, 440, 9000))
	if dec.Action != Held || dec.State.Ceiling != 394 {
		t.Errorf("got %s, knee %d (%s), want a hold with the knee at 394", dec.Action, dec.State.Ceiling, dec.Reason)
	}
}

func TestNextRecordsTheRaiseAndItsDeadTime(t *testing.T) {
	cfg := DefaultConfig()
	m := Model{Target: 40, Min: 1, Max: 10000}
	dec := Next(cfg, m, State{Limit: 100}, in(0, 100, 0, 500))
	if dec.State.RaisedAt != t0 || dec.State.RaisedBy != 300 || !dec.State.FilledAt.IsZero() {
		t.Fatalf("got %+v, want a raise by 300 at t0, not yet filled", dec.State)
	}
	// Next pass: the launches fill the limit.
	next := Input{Now: t0.Add(10 * time.Second), Depth: 0, DepthAt: t0.Add(-10 * time.Second), Running: 100, Starting: 300, Waiting: 200, PendingRaise: 300}
	dec = Next(cfg, m, dec.State, next)
	if dec.State.FilledAt != next.Now || dec.Action != Held {
		t.Fatalf("got %+v (%s), want filled at %v and a hold", dec.State, dec.Reason, next.Now)
	}
	// 30 s later, a third of them run: settled.
	next = Input{Now: t0.Add(40 * time.Second), Depth: 0, DepthAt: t0.Add(20 * time.Second), Running: 200, Starting: 200, Waiting: 200, PendingRaise: 200}
	dec = Next(cfg, m, dec.State, next)
	if dec.State.SettledAt != next.Now {
		t.Fatalf("got SettledAt %v, want %v", dec.State.SettledAt, next.Now)
	}
	if len(dec.State.Recent) != 3 {
		t.Errorf("got %d samples, want 3", len(dec.State.Recent))
	}
}

func TestRecentStaysBounded(t *testing.T) {
	st := State{Limit: 100}
	for i := range 50 {
		input := in(40, 100, 0, 10)
		input.Now = t0.Add(time.Duration(i) * 10 * time.Second)
		st = Next(DefaultConfig(), Model{Target: 40, Min: 1, Max: 1000}, st, input).State
	}
	if len(st.Recent) > recentKeep {
		t.Errorf("got %d samples, want at most %d", len(st.Recent), recentKeep)
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
	bad = DefaultConfig()
	bad.MaxBlocked = 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "max_blocked 1.5 is outside [0, 1]") {
		t.Errorf("got %v, want an error naming max_blocked and its rule", err)
	}
}

// FuzzNext checks the invariants: min ≤ limit ≤ max, a raise only when work
// waits, a lowering never above the current limit, a reason on every decision.
func FuzzNext(f *testing.F) {
	f.Add(40.0, 0.0, 10, 1, 10000, 0, 10, 0, 5000, 0, 0)
	f.Add(5.0, 300.0, 50, 10, 100, 0, 50, 20, 10, 3, 7)
	f.Add(40.0, 20.0, 1000, 1, 10000, 700, 900, 100, 0, 0, 0)
	f.Fuzz(func(t *testing.T, target, depth float64, limit, lo, hi, pin, running, starting, waiting, pending, ended int) {
		if target < 0 || depth < 0 || lo < 0 || running < 0 || starting < 0 || waiting < 0 || pending < 0 || ended < 0 {
			return
		}
		if hi < lo {
			hi = lo
		}
		m := Model{Target: target, Min: lo, Max: hi, Pin: pin}
		st := State{Limit: limit, RaisedBy: pending, FilledAt: t0.Add(-time.Minute)}
		dec := Next(DefaultConfig(), m, st, Input{
			Now: t0, Depth: depth, DepthAt: t0, Running: running, Starting: starting, Waiting: waiting, PendingRaise: pending, Ended: ended,
		})
		if dec.State.Limit < lo || dec.State.Limit > hi {
			t.Fatalf("limit %d outside [%d, %d] (%s)", dec.State.Limit, lo, hi, dec.Reason)
		}
		if dec.Action == Raised && waiting == 0 {
			t.Fatalf("raised with nothing waiting: %s", dec.Reason)
		}
		if dec.Action == Lowered && dec.State.Limit > max(lo, min(limit, hi)) {
			t.Fatalf("lowered from %d to %d", limit, dec.State.Limit)
		}
		if dec.Reason == "" {
			t.Fatal("decision without a reason")
		}
	})
}

// A smoothed depth is as stale as its newest reading: after the limit held
// through an error burst (the breaker open, no datapoints folded in), the
// overshoot read before the burst must not lower the limit after it.
func TestAStaleSmoothedDepthIsForgotten(t *testing.T) {
	st := steady(2180).State
	st.Smoothed, st.SeenAt = 1100, t0.Add(-15*time.Minute)
	dec := Next(DefaultConfig(), Model{Target: 4, Min: 1, Max: 10000}, st, in(0, 33, 0, 14000))
	if dec.Action == Lowered || dec.State.Smoothed != 0 {
		t.Errorf("got %s to %d, smoothed %g (%s); want the fresh 0 alone, no lowering", dec.Action, dec.State.Limit, dec.State.Smoothed, dec.Reason)
	}
}

// withInService adds the gateway's calls in service, of the depth's period.
func withInService(i Input, calls float64) Input {
	i.InService, i.InServiceAt = calls, i.DepthAt
	return i
}

// A period that queued a call shows the provider full: its calls in
// service are the provider's concurrency.
func TestInServiceLearnsTheProviderConcurrency(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000}
	dec := Next(DefaultConfig(), m, State{Limit: 160}, withInService(in(30, 150, 10, 900), 25))
	if dec.State.Conc != 25 || dec.State.ConcAt != t0 {
		t.Errorf("got concurrency %g at %v, want 25 at %v: a call queued with 25 in service", dec.State.Conc, dec.State.ConcAt, t0)
	}
	// Nothing queued: the calls in service say only that the provider
	// serves at least that many.
	dec = Next(DefaultConfig(), m, State{Limit: 40}, withInService(in(0, 40, 0, 900), 12))
	if dec.State.Conc != 0 {
		t.Errorf("got concurrency %g from a period without a queue, want 0 (unknown)", dec.State.Conc)
	}
	// An in-service datapoint of another period than the depth's is not
	// paired with it.
	other := in(30, 150, 10, 900)
	other.InService, other.InServiceAt = 25, other.DepthAt.Add(-10*time.Second)
	if dec = Next(DefaultConfig(), m, State{Limit: 160}, other); dec.State.Conc != 0 {
		t.Errorf("got concurrency %g from another period's in-service datapoint, want 0", dec.State.Conc)
	}
}

// With the provider's concurrency known, a far-below reading raises the
// running jobs up to the knee the calls in service measure (Conc/f +
// target), not ×FastFactor past it: an overshoot drains only as jobs end.
func TestTheInServiceKneeBoundsAFastRaise(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000}
	st := State{Limit: 40, Conc: 25, ConcAt: t0.Add(-10 * time.Minute)}
	// 40 running hold at most 20 calls: f = 0.5, the provider fills at
	// 50 jobs and the depth reaches 2 at 52.
	dec := Next(DefaultConfig(), m, st, withInService(in(0, 40, 0, 900), 20))
	if dec.Action != Raised || dec.State.Limit != 52 {
		t.Errorf("got %s to %d (%s), want a raise to 52: 40 × 25/20 + 2", dec.Action, dec.State.Limit, dec.Reason)
	}
	// Without the in-service datapoint no knee is known: it doubles.
	dec = Next(DefaultConfig(), m, st, in(0, 40, 0, 900))
	if dec.Action != Raised || dec.State.Limit != 80 {
		t.Errorf("got %s to %d (%s), want ×2 to 80 without the metric", dec.Action, dec.State.Limit, dec.Reason)
	}
	// At the knee the fast raise stops; the careful step remains.
	dec = Next(DefaultConfig(), m, State{Limit: 52, Conc: 25, ConcAt: t0}, withInService(in(0, 52, 0, 900), 25))
	if dec.State.Limit != 55 {
		t.Errorf("got %s to %d (%s), want the careful ×1.05 step to 55 at the knee", dec.Action, dec.State.Limit, dec.Reason)
	}
}

// More calls in service than the concurrency learned, with nothing
// queued: the provider grew, and its old knee bounds nothing.
func TestAProviderThatGrewForgetsItsConcurrency(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000}
	st := State{Limit: 52, Conc: 25, ConcAt: t0.Add(-5 * time.Minute)}
	dec := Next(DefaultConfig(), m, st, withInService(in(0, 52, 0, 900), 31))
	if dec.State.Conc != 0 || dec.State.Limit != 104 {
		t.Errorf("got concurrency %g, limit %d (%s); want it forgotten and the limit doubled to 104", dec.State.Conc, dec.State.Limit, dec.Reason)
	}
}

// The operator's configured concurrency gives the knee from the first
// in-service datapoint, before any queue: the first far-below raise stops
// there (a provider of 27 whose 40 jobs hold 24 calls fills at 45 jobs),
// where ×2 would put 80 jobs on it.
func TestAConfiguredConcurrencyGivesTheKneeFirst(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000, Conc: 27}
	dec := Next(DefaultConfig(), m, State{Limit: 40}, withInService(in(0, 40, 0, 900), 24))
	if dec.Action != Raised || dec.State.Limit != 47 {
		t.Errorf("got %s to %d (%s), want a raise to 47: 40 × 27/24 + 2", dec.Action, dec.State.Limit, dec.Reason)
	}
	if dec.State.Conc != 0 {
		t.Errorf("got a learned concurrency of %g from a configuration, want none until a queue measures it", dec.State.Conc)
	}
	// Without the in-service datapoint the configuration alone knows no
	// knee (the share of a job's life in calls is unknown): ×2.
	if dec = Next(DefaultConfig(), m, State{Limit: 40}, in(0, 40, 0, 900)); dec.State.Limit != 80 {
		t.Errorf("got %s to %d (%s), want ×2 to 80 without the metric", dec.Action, dec.State.Limit, dec.Reason)
	}
	// More in service than configured: the configuration is stale (the
	// provider grew) and bounds nothing.
	if dec = Next(DefaultConfig(), m, State{Limit: 40}, withInService(in(0, 40, 0, 900), 31)); dec.State.Limit != 80 {
		t.Errorf("got %s to %d (%s), want ×2 to 80 past a stale configuration", dec.Action, dec.State.Limit, dec.Reason)
	}
}

// A knee from the gateway's configured concurrency ends the fast raise
// however far it is: a large provider's ramp from the initial limit takes
// one cycle, not a ×4 step a cycle (10 jobs holding 6 calls of a provider
// of 2,000 fill it at 3,333).
func TestAKnownKneeIsReachedInOneRaise(t *testing.T) {
	m := Model{Target: 100, Min: 1, Max: 10000, Conc: 2000}
	dec := Next(DefaultConfig(), m, State{Limit: 10}, withInService(in(0, 10, 0, 50000), 6))
	if dec.Action != Raised || dec.State.Limit != 3434 {
		t.Errorf("got %s to %d (%s), want one raise to 3,434: 10 × 2000/6 + 100", dec.Action, dec.State.Limit, dec.Reason)
	}
	// A concurrency learned from a queue may be old or from a corrupt
	// period: its knee bounds the raise, but the step stays ×4.
	learned := State{Limit: 10, Conc: 2000, ConcAt: t0.Add(-time.Hour)}
	if dec = Next(DefaultConfig(), Model{Target: 100, Min: 1, Max: 10000}, learned, withInService(in(0, 10, 0, 50000), 6)); dec.State.Limit != 40 {
		t.Errorf("got %s to %d (%s), want ×4 to 40 toward a learned knee", dec.Action, dec.State.Limit, dec.Reason)
	}
	// The model's max still bounds it.
	m.Max = 500
	if dec = Next(DefaultConfig(), m, State{Limit: 10}, withInService(in(0, 10, 0, 50000), 6)); dec.State.Limit != 500 {
		t.Errorf("got %s to %d (%s), want max_limit 500", dec.Action, dec.State.Limit, dec.Reason)
	}
}

// The slots a running job needs are 1 + start/life, each from Little's law
// on counts and rates averaged over Turnover: short jobs behind long
// starts run in waves, and one pass on a crest or in a trough says little.
// Until the averages span a Turnover they are not used.
func TestSlotsPerRunningIsAveragedOverTurnover(t *testing.T) {
	cfg := DefaultConfig().withDefaults()
	m := Model{Target: 9, Min: 1, Max: 10000, Pin: 900} // pinned: only the bookkeeping runs
	var st State
	now := t0
	for k := range 120 { // twenty minutes of passes, crest and trough in turn
		// From a crest to a trough 330 end and 30 begin running; from a
		// trough to a crest 30 end and 330 begin.
		running, starting, ended := 150, 450, 330
		if k%2 == 1 {
			running, starting, ended = 450, 150, 30
		}
		i := Input{Now: now, Running: running, Starting: starting, Ended: ended, Waiting: 1000}
		st = Next(cfg, m, st, i).State
		if k == 0 && st.slotsPerRunning(cfg, now) != 0 {
			t.Fatalf("the first pass gives a ratio of %g, want none until the averages span %v", st.slotsPerRunning(cfg, now), cfg.Turnover)
		}
		now = now.Add(10 * time.Second)
	}
	// 300 starting and 300 running on average, 18 a second through each:
	// 2 slots a running job, whatever the last pass saw.
	if r := st.slotsPerRunning(cfg, now); r < 1.9 || r > 2.1 {
		t.Errorf("slots per running job %g, want ~2: 1 + (300/18 s)/(300/18 s)", r)
	}
}

// The slots still starting count whenever they were claimed: a raise that
// fills over several passes has its Mark late, and the refills claimed
// before it are no raise. Leaving out the jobs pending at the Mark left
// them out, and measured two thirds of the slots held. Jobs that start
// for 80 s and run for 20 s need 5.
func TestSlotsPerRunningCountsTheRefillsOfARaise(t *testing.T) {
	cfg := DefaultConfig().withDefaults()
	m := Model{Target: 9, Min: 1, Max: 10000, Pin: 900}
	var st State
	now := t0
	for range 60 {
		// 15 a second end after 20 s running; as many begin after 80 s
		// starting. Most of those starting were claimed before the Mark.
		i := Input{Now: now, Running: 300, Starting: 1200, PendingRaise: 1000, Ended: 150, Waiting: 1000}
		st = Next(cfg, m, st, i).State
		now = now.Add(10 * time.Second)
	}
	if r := st.slotsPerRunning(cfg, now); r < 4.9 || r > 5.1 {
		t.Errorf("slots per running job %g, want 5: 1 + (1,200/15 s)/(300/15 s)", r)
	}
}

// The limit a breaker holds is the highest of the passes within MaxAge
// before the hold: a lowering then read the queue of a provider failing
// before the breaker could tell. An older lowering stands.
func TestARefillRestoresALoweringOfTheFailuresFirstMinute(t *testing.T) {
	st := State{Limit: 18, Recent: []Sample{
		{At: t0.Add(-150 * time.Second), Limit: 30}, // before MaxAge: a real overload lowered it to 21
		{At: t0.Add(-60 * time.Second), Limit: 21},
		{At: t0.Add(-30 * time.Second), Limit: 21}, // this pass lowered it to 18
	}}
	got := st.Refill(DefaultConfig(), t0, 3)
	if got.Limit != 21 || got.RaisedBy != 18 {
		t.Errorf("refilled to %d (raise of %d), want 21 (a raise of 18 over the 3 held): the limit before the failure's first minute", got.Limit, got.RaisedBy)
	}
	// A pass exactly MaxAge before the last one is within the window.
	st.Recent[0].At = st.Recent[2].At.Add(-DefaultConfig().MaxAge)
	if got := st.Refill(DefaultConfig(), t0, 3); got.Limit != 30 {
		t.Errorf("refilled to %d, want the 30 a pass began with MaxAge before the last", got.Limit)
	}
}

// The window ends where the gateway's error rate first showed the
// failure, not at the hold: the breaker may open passes later, and the
// limit the provider took is the one before the failure. The pass that
// first read the failure began with a limit set on the failing provider's
// readings, and is left out (testdata/refill.txt has both; here the edges:
// no pass in the window, and a healthy reading forgets the failure).
func TestARefillEndsWhereTheErrorRateFirstShowedTheFailure(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	m := Model{Target: 2, Min: 1, Max: 10000}
	// failing runs the passes from..to (10 s apart) that read the provider
	// failing: they hold, and the breaker has not opened yet.
	failing := func(st State, from, to int) State {
		for s := from; s <= to; s += 10 {
			i := in(0, 100, 0, 5000)
			i.Now, i.DepthAt, i.Failing = at(s), at(s-20), true
			d := Next(DefaultConfig(), m, st, i)
			if d.Action != Held {
				t.Fatalf("a failing pass: %s (%s), want a hold", d.Action, d.Reason)
			}
			st = d.State
		}
		return st
	}
	st := State{Limit: 908, Recent: []Sample{
		{At: at(-300), Limit: 1300}, // more than MaxAge before the failure showed: no part of it
		{At: at(-150), Limit: 1012},
		{At: at(-130), Limit: 1043},
		{At: at(-120), Limit: 1043}, // this pass lowered to 908 on a reading near the failure
		{At: at(-110), Limit: 908},
	}}
	st = failing(st, -100, -10) // the breaker opens 100 s after the error rate showed
	if got := st.Refill(DefaultConfig(), t0, 100); got.Limit != 1043 || got.RaisedBy != 943 {
		t.Errorf("refilled to %d (a raise of %d), want 1043 (943 over the 100 held): the limit before the failure showed", got.Limit, got.RaisedBy)
	}
	st = State{Limit: 1175, Recent: []Sample{
		{At: at(-40), Limit: 872},
		{At: at(-30), Limit: 872}, // this pass raised to 1,175 on the failing provider's empty queue
	}}
	if got := failing(st, -20, -10).Refill(DefaultConfig(), t0, 100); got.Limit != 872 {
		t.Errorf("refilled to %d, want 872: the raise read from the failure is no measure of the provider", got.Limit)
	}
	// No pass within MaxAge before the failure showed (the passes before
	// it came before an earlier hold): the limit held stands.
	st = State{Limit: 1140, Recent: []Sample{{At: at(-1000), Limit: 300}}}
	if got := failing(st, -20, -10).Refill(DefaultConfig(), t0, 100); got.Limit != 1140 {
		t.Errorf("refilled to %d, want the 1140 held", got.Limit)
	}
	// A pass that reads the provider healthy again forgets it.
	i := in(1, 100, 0, 5000)
	i.Now, i.DepthAt = at(0), at(-20)
	if d := Next(DefaultConfig(), m, failing(st, -20, -10), i); d.State.BeforeFailing != 0 {
		t.Errorf("a healthy reading kept the limit before a failure: %d", d.State.BeforeFailing)
	}
}

// The pass the breaker closes, the newest datapoint may have been measured
// while it held the limit: a failing provider's queue, paired with the jobs
// running before the hold. It steers nothing; the first one measured after
// the hold does.
func TestADatapointMeasuredWhileTheBreakerHeldIsNotRead(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	m := Model{Target: 2, Min: 1, Max: 10000}
	st := State{Limit: 347, Recent: []Sample{{At: at(-120), Running: 11, Limit: 347}}}
	for s := -60; s <= -10; s += 10 {
		st = st.Refill(DefaultConfig(), at(s), 0) // the breaker holds
	}
	// The breaker closes; the jobs that ran into the failure have ended.
	// A queue of 8 on a target of 2, measured 20 s ago, in the hold: read,
	// it paired with the 11 jobs of the last sample before the hold and
	// lowered the refill to 10.
	i := in(8, 0, 0, 5000)
	i.Now, i.DepthAt = t0, at(-20)
	d := Next(DefaultConfig(), m, st, i)
	if d.Action != Held || d.State.Limit != 347 || !strings.Contains(d.Reason, "while the breaker held") {
		t.Fatalf("%s to %d (%s): want the refill of 347 held, the datapoint measured in the hold", d.Action, d.State.Limit, d.Reason)
	}
	// The refill's jobs run; a queue measured after the hold is acted on:
	// a drain (the limit is the load), stopping starting tasks.
	i.Now, i.Running, i.Starting = at(10), 300, 47
	d = Next(DefaultConfig(), m, d.State, i)
	i.Now, i.DepthAt = at(30), at(10)
	if d = Next(DefaultConfig(), m, d.State, i); d.Yield == 0 || !strings.Contains(d.Reason, "draining") {
		t.Fatalf("%s, yield %d (%s): want the queue measured after the hold read, a drain stopping starts", d.Action, d.Yield, d.Reason)
	}
}

// Where a job starts for longer than it runs, a raise launched at once
// runs as a wave: the pass admits the jobs that ended and growth at the
// knee's turnover, PaceKnee per job life. Where jobs run longer than they
// start, and for a pinned limit, there is no pace.
func TestAdmissionsOfShortJobsBehindLongStartsArePaced(t *testing.T) {
	// 20 running jobs of 10 s behind 60-s starts: 7 slots a running job.
	short := State{Limit: 165, PaceKnee: 22, AvgRunning: 20, AvgStarting: 120, AvgEnter: 2, AvgEnd: 2, AvgSince: t0.Add(-time.Hour),
		Recent: []Sample{{At: t0.Add(-20 * time.Second)}, {At: t0.Add(-10 * time.Second)}}}
	i := in(0.5, 20, 60, 5000)
	i.Ended = 5
	m := Model{Target: 2, Min: 1, Max: 10000}
	if d := Next(DefaultConfig(), m, short, i); d.Pace != 5+22 {
		t.Errorf("pace %d (%s), want 27: the 5 that ended and the knee's 22 per 10-s life over a 10-s pass", d.Pace, d.Reason)
	}
	// A 40-s life: a quarter of the knee a pass.
	short.AvgRunning, short.AvgEnd = 80, 2
	short.AvgStarting = 160 // 80-s starts: 3 slots a running job
	if d := Next(DefaultConfig(), m, short, i); d.Pace != 5+6 {
		t.Errorf("pace %d, want 11: the 5 that ended and ⌈22·10/40⌉", d.Pace)
	}
	long := short
	long.AvgStarting = 60 // 30-s starts of 40-s jobs: 1.75 slots a running job
	if d := Next(DefaultConfig(), m, long, i); d.Pace != 0 {
		t.Errorf("pace %d, want none: jobs run longer than they start", d.Pace)
	}
	pinned := m
	pinned.Pin = 300
	if d := Next(DefaultConfig(), pinned, short, i); d.Pace != 0 {
		t.Errorf("pace %d, want none: the operator pinned the limit", d.Pace)
	}
	// A raise toward the knee the operator's concurrency gives records it.
	cold := State{Limit: 12, AvgRunning: 10, AvgStarting: 60, AvgEnter: 1, AvgEnd: 1, AvgSince: t0.Add(-time.Hour),
		Recent: []Sample{{At: t0.Add(-30 * time.Second), Running: 10}, {At: t0.Add(-10 * time.Second), Running: 10}}}
	r := in(0, 10, 2, 5000)
	r.InService, r.InServiceAt = 6, r.DepthAt
	conc := Model{Target: 2, Min: 1, Max: 10000, Conc: 12}
	d := Next(DefaultConfig(), conc, cold, r)
	if d.Action != Raised || d.State.PaceKnee < 19 || d.State.PaceKnee > 23 || d.Pace <= 0 || d.Pace >= d.State.Limit-12 {
		t.Errorf("%s to %d (%s), knee %g, pace %d; want a raise toward a knee of ~20 running jobs (12 calls at a share of 0.6), admitted at its turnover, not at once",
			d.Action, d.State.Limit, d.Reason, d.State.PaceKnee, d.Pace)
	}
}

// Each queued call is a container blocked at the gateway, so the target
// is at most MaxBlocked of the running jobs: a target of 7 on a provider
// that runs 20 jobs would have them wait a third of their time. The old
// controller held the limit at an Average depth of 2.5 on 20 jobs
// (blocked 0.125), inside its band of 3.5..10.5; now it lowers. Where the
// operator's target is the smaller, it binds.
func TestTheTargetIsAtMostTheBlockedShareOfTheRunningJobs(t *testing.T) {
	small := Model{Target: 7, Min: 1, Max: 10000}
	dec := Next(DefaultConfig(), small, State{Limit: 30}, in(2.5, 20, 0, 100))
	if dec.Action != Lowered || dec.State.Limit != 20 || !strings.Contains(dec.Reason, "target 1 (7 bounded to 0.05 of 20 running)") {
		t.Errorf("got %s to %d (%s), want a lowering to the 20 running on a target of 1 (5 %% of 20)", dec.Action, dec.State.Limit, dec.Reason)
	}
	large := Model{Target: 40, Min: 1, Max: 10000}
	dec = Next(DefaultConfig(), large, State{Limit: 2000}, in(30, 2000, 0, 100))
	if dec.Action != Held || !strings.Contains(dec.Reason, "within 20..60 of target 40") || strings.Contains(dec.Reason, "bounded") {
		t.Errorf("got %s (%s), want a hold within the operator's band: 5 %% of 2,000 is 100 > 40", dec.Action, dec.Reason)
	}
}

// Over the target the jobs still starting would run into the queue: the
// decision yields them, at most the excess's jobs too many and the
// starting ones, and only once per datapoint.
func TestAnOvershootYieldsTasksStillStarting(t *testing.T) {
	m := Model{Target: 40, Min: 1, Max: 10000}
	// 360 calls over the target on 1,000 running: 180 jobs too many
	// (LowerGain 0.5), and 900 starting. With 90-s starts and 100-s lives
	// a running job needs 1.9 slots: the slots beyond want are 342, more
	// than the queue says.
	st := State{Limit: 2000, AvgRunning: 1000, AvgStarting: 900, AvgEnter: 10, AvgEnd: 10, AvgSince: t0.Add(-time.Hour)}
	dec := Next(DefaultConfig(), m, st, in(400, 1000, 900, 100))
	if dec.Yield != 180 || !strings.Contains(dec.Reason, "stop 180 starting") {
		t.Fatalf("yield %d (%s), want 180: the jobs LowerGain of the excess depth names", dec.Yield, dec.Reason)
	}
	if again := Next(DefaultConfig(), m, dec.State, in(400, 1000, 720, 100)); again.Yield != 0 {
		t.Errorf("the same datapoint read again yields %d (%s), want 0: its first pass's stops are still landing", again.Yield, again.Reason)
	}
	few := Next(DefaultConfig(), m, st, in(400, 1000, 50, 100))
	if few.Yield != 50 {
		t.Errorf("yield %d with 50 starting, want all 50", few.Yield)
	}
	// At the target nothing yields; below it neither.
	for _, depth := range []float64{40, 5} {
		if dec := Next(DefaultConfig(), m, st, in(depth, 1000, 900, 100)); dec.Yield != 0 {
			t.Errorf("depth %g: yield %d, want 0", depth, dec.Yield)
		}
	}
}

// A provider that lost capacity shows it in the calls in service of the
// first period that queues, while the queue itself is still small: the
// pass lowers to the knee those calls give (InService over the jobs' call
// share), and stops the tasks starting beyond it, not the few jobs the
// queue names so far.
func TestADropTheGatewayMeasuresLowersToItsKneeAtOnce(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000, Conc: 23}
	// Nothing queued: 15 calls in service on 60 running, a quarter of a
	// job's life in a call.
	dec := Next(DefaultConfig(), m, State{Limit: 100}, withInService(in(0, 60, 40, 3000), 15))
	if dec.State.CallShare != 0.25 || dec.State.ShareConc != 23 {
		t.Fatalf("call share %g at concurrency %g, want 0.25 at the configured 23", dec.State.CallShare, dec.State.ShareConc)
	}
	// A period that queued says nothing of the call share: the provider
	// was full.
	if q := Next(DefaultConfig(), m, State{Limit: 100}, withInService(in(6, 60, 40, 3000), 23)); q.State.CallShare != 0 {
		t.Errorf("call share %g from a queued period, want 0 (not seen)", q.State.CallShare)
	}
	// Ten seconds on, a queued period with 10 calls in service: the knee
	// is 10/0.25 + 2 = 42 running, 20 of the 62 too many, while the
	// smoothed queue (4.2 on a target of 2) names one.
	next := in(6, 62, 40, 3000)
	next.Now, next.DepthAt = t0.Add(10*time.Second), t0.Add(-10*time.Second)
	next = withInService(next, 10)
	drop := Next(DefaultConfig(), m, dec.State, next)
	if drop.Yield != 20 || !strings.Contains(drop.Reason, "provider serves 10 calls, was 23: knee 42 running") {
		t.Errorf("yield %d (%s), want 20 starting stopped: 62 running on a knee of 42", drop.Yield, drop.Reason)
	}
	// The provider serving what it did, with 100 running: the queue's
	// jobs only, LowerGain of the excess. The call share is a Maximum's
	// and may overstate: its knee (23/0.25 + 2 = 94) is no reason to stop
	// more while the provider lost nothing.
	same := next
	same.Running, same.InService = 100, 23
	if d := Next(DefaultConfig(), m, dec.State, same); d.Yield != 2 {
		t.Errorf("yield %d (%s) with the provider unchanged, want 2: ceil(0.5 × 2.2)", d.Yield, d.Reason)
	}
}

// A period that began with none of the model's jobs running served only
// the first calls of jobs that came up within it: its Maximum in service
// over them is no running job's share, and records none (the decisions:
// testdata/raise.txt). A period some jobs ran through is read as before.
func TestAPeriodTheJobsCameUpInGivesNoKnee(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000, Conc: 55}
	measuredAt := t0.Add(-20 * time.Second) // in()'s DepthAt
	first := State{Limit: 55, Recent: []Sample{
		{At: measuredAt.Add(-10 * time.Second), Running: 0},
		{At: measuredAt, Running: 32, Pending: 23},
	}}
	dec := Next(DefaultConfig(), m, first, withInService(in(0, 55, 0, 900), 20))
	if dec.Action != Held || !strings.Contains(dec.Reason, "began with none") {
		t.Errorf("got %s to %d (%s), want a hold: the period began with no job running", dec.Action, dec.State.Limit, dec.Reason)
	}
	if dec.State.CallShare != 0 {
		t.Errorf("got a call share of %g from the cohort's first calls, want none recorded", dec.State.CallShare)
	}
	// The same reading of a period 30 jobs ran through: the knee is read,
	// 32 × 55/20 + 2 = 90 running jobs, and the limit goes there.
	through := first
	// The 23 jobs still starting then grow with the 32 (a slot a job
	// until the turnover is known), so the limit is the knee's 90 too.
	through.Recent = []Sample{{At: measuredAt.Add(-10 * time.Second), Running: 30}, {At: measuredAt, Running: 32, Pending: 23}}
	dec = Next(DefaultConfig(), m, through, withInService(in(0, 55, 0, 900), 20))
	if dec.Action != Raised || dec.State.Limit != 90 {
		t.Errorf("got %s to %d (%s), want a raise to the knee's 90", dec.Action, dec.State.Limit, dec.Reason)
	}
	if dec.State.CallShare != 20.0/32 {
		t.Errorf("got a call share of %g, want 20/32 from a period jobs ran through", dec.State.CallShare)
	}
}

// The stretch's first minutes measure the slots a running job needs
// before the averages span Turnover: jobs launched together, up 40 s
// later, a few seconds each.
func TestSlotsAtLeastFromTheStretchsFirstMinutes(t *testing.T) {
	cfg := DefaultConfig()
	m := Model{Target: 3, Min: 1, Max: 10000, Pin: 200} // pinned: only the bookkeeping runs
	var st State
	pass := func(k, running, starting, ended int) {
		st = Next(cfg, m, st, Input{Now: t0.Add(time.Duration(k) * 10 * time.Second), Running: running, Starting: starting, Ended: ended}).State
	}
	pass(0, 0, 0, 0) // nothing held yet
	pass(1, 0, 200, 0)
	pass(2, 0, 200, 0)
	pass(3, 0, 200, 0)
	if got := st.slotsAtLeast(); got != 0 {
		t.Fatalf("slots at least %g before any job ran, want none", got)
	}
	pass(5, 20, 180, 0) // a pass skipped: the first running jobs at 40 s
	pass(6, 30, 150, 20)
	pass(7, 25, 125, 30)
	// 20 × 10 s + 30 × 10 s of running over 50 ended: lives of 10 s
	// behind starts of at least 40 s.
	if got := st.slotsAtLeast(); got != 5 {
		t.Errorf("slots at least %g, want 1 + 40/10 = 5", got)
	}
	if r := st.slotsPerRunning(cfg.withDefaults(), t0.Add(70*time.Second)); r != 0 {
		t.Errorf("the averages give %g a minute in, want none: slotsAtLeast stands in", r)
	}
	// The model held nothing at one pass: its next stretch starts over.
	pass(8, 0, 0, 25)
	if st.slotsAtLeast() != 0 || !st.StretchStartAt.IsZero() {
		t.Errorf("got %g from a stretch that ended (%+v)", st.slotsAtLeast(), st)
	}
	// A stretch first seen with jobs running began before it was
	// watched: no start to measure.
	pass(9, 10, 5, 0)
	pass(10, 10, 5, 3)
	if !st.StretchStartAt.IsZero() || st.slotsAtLeast() != 0 {
		t.Errorf("got a start from a stretch first seen running (%+v)", st)
	}
}

// Before the averages span Turnover, a raise toward a knee counted one slot
// a job, and short jobs behind long starts need many: the stretch's low
// estimate of them steps further, at most ×FastFactor.
func TestAYoungRaiseCountsTheSlotsShortJobsNeed(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000, Conc: 12}
	// 10 running jobs holding 5 calls: a knee of 10 × 12/5 = 24 jobs and
	// 0.05 × 24 = 1.2 more. The datapoint's slots run the 10 and 5 of the
	// raise's launches still starting; the other 105 slots are refills
	// still starting.
	young := func(start time.Duration, ranSec float64, ended int) State {
		return State{Limit: 120, StretchStartAt: t0.Add(-3 * time.Minute), StretchRunAt: t0.Add(-3*time.Minute + start),
			StretchRanSec: ranSec, StretchEnded: ended, Recent: []Sample{
				{At: t0.Add(-30 * time.Second), Running: 8},
				{At: t0.Add(-20 * time.Second), Running: 10, Pending: 5}}}
	}
	i := withInService(in(0, 10, 110, 9000), 5)
	cases := []struct {
		name  string
		st    State
		want  int
		trail string
	}{
		// No job ended yet: the knee's jobs in the datapoint's slots,
		// 120 × 25.2/15.
		{"no estimate", State{Limit: 120, Recent: young(0, 0, 0).Recent}, 202, "one slot a job"},
		// 60-s starts, 5-s lives (50 s of running before this pass, 200
		// in it, over 50 ended): 13 slots a job, 25.2 × 13 = 328.
		{"short jobs", young(time.Minute, 50, 50), 328, "13 slots a job"},
		// 2-min starts, 2.5-s lives ((50 + 200) s over 100 ended): 49
		// slots a job, ×10 the limit: ×FastFactor.
		{"bounded", young(2*time.Minute, 50, 100), 480, "×4"},
	}
	for _, c := range cases {
		dec := Next(DefaultConfig(), m, c.st, i)
		if dec.Action != Raised || dec.State.Limit != c.want {
			t.Errorf("%s: got %s to %d (%s), want %d (%s)", c.name, dec.Action, dec.State.Limit, dec.Reason, c.want, c.trail)
		}
	}

	// Toward a lowering's knee, without the gateway's metric: 0.8 × 100
	// running jobs, the datapoint's slots running 10 and starting 60 of
	// the raise's launches. One slot a job: 120 × 80/70 = 138. Starts of
	// 60 s and lives of 15 s ((550 + 200) s over 50 ended) need 1 + 60/15
	// = 5 slots a job: 80 × 5 = 400.
	lowered := func(st State) State {
		st.Ceiling, st.CeilingAt, st.Recent[1].Pending = 100, t0.Add(-time.Minute), 60
		return st
	}
	i = in(0, 10, 110, 9000)
	m.Conc = 0
	if dec := Next(DefaultConfig(), m, lowered(State{Limit: 120, Recent: young(0, 0, 0).Recent}), i); dec.State.Limit != 138 {
		t.Errorf("no estimate, a lowering's knee: got %s to %d (%s), want 138", dec.Action, dec.State.Limit, dec.Reason)
	}
	if dec := Next(DefaultConfig(), m, lowered(young(time.Minute, 550, 50)), i); dec.State.Limit != 400 {
		t.Errorf("15-s lives behind 60-s starts, a lowering's knee: got %s to %d (%s), want 400", dec.Action, dec.State.Limit, dec.Reason)
	}
}

// A concurrency learned from a queue lately is used as the operator's
// configured one: its knee is reached in one raise. An old one keeps the
// ×FastFactor bound: make chaos met a tiers-saturated run whose crash left
// 20 jobs running on a limit of 96, and a one raise to a concurrency
// learned an hour before went ×6.12 to 588 slots (depth 474 on a target of
// 6).
func TestALearnedConcurrencyIsUsedAsConfiguredWhileFresh(t *testing.T) {
	m := Model{Target: 6, Min: 1, Max: 10000}
	// 20 jobs hold 10 calls: knee 20 × 290/10 + 6 = 586 running, which
	// the 96 slots of then (20 running, 76 starting) approach.
	input := withInService(in(0, 20, 76, 5000), 10)
	input.PendingRaise = 76
	for _, c := range []struct {
		name string
		age  time.Duration
		want int
	}{
		{"learned 5 min ago", 5 * time.Minute, 586},
		{"learned at the CeilingTTL", 15 * time.Minute, 586},
		{"learned an hour ago", time.Hour, 384},
	} {
		st := State{Limit: 96, Conc: 290, ConcAt: t0.Add(-c.age)}
		dec := Next(DefaultConfig(), m, st, input)
		if dec.Action != Raised || dec.State.Limit != c.want {
			t.Errorf("%s: got %s to %d (%s), want %d", c.name, dec.Action, dec.State.Limit, dec.Reason, c.want)
		}
		if got, fresh := dec.State.Limit, c.age <= DefaultConfig().CeilingTTL; !fresh && float64(got) > DefaultConfig().FastFactor*96 {
			t.Errorf("%s: a stale learned value jumped ×%.2f", c.name, float64(got)/96)
		}
	}
	// Without its time a learned value is old (an operator's edit that
	// gave none).
	if dec := Next(DefaultConfig(), m, State{Limit: 96, Conc: 290}, input); dec.State.Limit != 384 {
		t.Errorf("a learned value without its time: got %d (%s), want ×4 to 384", dec.State.Limit, dec.Reason)
	}
	// The operator's configured one stands in only until one is learned.
	if dec := Next(DefaultConfig(), Model{Target: 6, Min: 1, Max: 10000, Conc: 290}, State{Limit: 96}, input); dec.State.Limit != 586 {
		t.Errorf("configured: got %d (%s), want one raise to 586", dec.State.Limit, dec.Reason)
	}
}

// SteerTarget is the operator's target bounded by MaxBlocked of the jobs
// running (status shows it).
func TestSteerTarget(t *testing.T) {
	cfg := DefaultConfig()
	if got := (State{}).SteerTarget(cfg, 40, 100); got != 5 {
		t.Errorf("100 running, target 40: got %g, want 5", got)
	}
	if got := (State{AvgRunning: 2000}).SteerTarget(cfg, 40, 100); got != 40 {
		t.Errorf("2,000 running averaged, target 40: got %g, want 40", got)
	}
}

// A drop the calls in service show lowers the limit to the knee's slots in
// the same pass, neither held by the slots held nor trickled, and stops
// the tasks starting beyond them; on a model nobody configured too (the
// calls served without a queue are a floor of its concurrency).
func TestADropLowersToItsKneeWithoutATrickle(t *testing.T) {
	m := Model{Target: 2, Min: 1, Max: 10000}
	dec := Next(DefaultConfig(), m, State{Limit: 100}, withInService(in(0, 60, 40, 3000), 15))
	if dec.State.CallShare != 0.25 || dec.State.ShareConc != 15 {
		t.Fatalf("call share %g at concurrency %g, want 0.25 at the 15 served without a queue", dec.State.CallShare, dec.State.ShareConc)
	}
	next := in(6, 62, 40, 3000)
	next.Now, next.DepthAt, next.Ended = t0.Add(10*time.Second), t0.Add(-10*time.Second), 30
	next = withInService(next, 10)
	drop := Next(DefaultConfig(), m, dec.State, next)
	// The knee: 10/0.25 + 2 = 42 running, 20 of the 62 too many; the
	// slots 62 + 40 − 20 = 82.
	if drop.Action != Lowered || drop.State.Limit != 82 || drop.Yield != 20 {
		t.Errorf("got %s to %d, yield %d (%s); want lowered to 82 at once, 20 starting stopped", drop.Action, drop.State.Limit, drop.Yield, drop.Reason)
	}
}
