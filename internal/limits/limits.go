package limits

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Config tunes the controller; it is shared by every model. A zero MaxAge,
// Growth, BindingShare or Smoothing takes the default of DefaultConfig.
type Config struct {
	MaxAge       time.Duration // a datapoint older than this is stale: hold
	Band         float64       // hold while the smoothed depth is within target·(1±Band)
	Smoothing    float64       // weight of a new datapoint in the smoothed depth, (0, 1]
	FarBelow     float64       // readings all ≤ FarBelow·target since the last raise settled: far below
	Growth       float64       // far below: the running jobs may grow at most ×Growth over the measured ones
	BindingShare float64       // the limit binds when the slots held at the last pass ≥ BindingShare·limit
	RaiseSettled float64       // share of the previous raise's launches that must be running
	DrainShare   float64       // a lowering takes at most this share of the slots freed by ended jobs
}

// DefaultConfig returns the defaults. None is a fit to a scenario: Growth 2
// is slow start's doubling (TCP, BBR's startup), the most a load can grow
// past one that was measured below saturation and still overshoot the knee
// by at most the load it had; Band, Smoothing and FarBelow separate a
// depth's jitter from a trend; BindingShare, RaiseSettled and DrainShare
// are the shares BENCHMARKS.md explains.
func DefaultConfig() Config {
	return Config{
		MaxAge:       90 * time.Second,
		Band:         0.5,
		Smoothing:    0.7,
		FarBelow:     0.25,
		Growth:       2,
		BindingShare: 0.9,
		RaiseSettled: 0.3,
		DrainShare:   0.9,
	}
}

// Validate names the first field that breaks its rule.
func (c Config) Validate() error {
	switch {
	case c.MaxAge <= 0:
		return fmt.Errorf("limits: max_age %v must be positive", c.MaxAge)
	case c.Band < 0 || c.Band >= 1:
		return fmt.Errorf("limits: band %g is outside [0, 1)", c.Band)
	case c.Smoothing <= 0 || c.Smoothing > 1:
		return fmt.Errorf("limits: smoothing %g is outside (0, 1]", c.Smoothing)
	case c.FarBelow < 0 || c.FarBelow >= 1:
		return fmt.Errorf("limits: far_below %g is outside [0, 1)", c.FarBelow)
	case c.Growth <= 1:
		return fmt.Errorf("limits: growth %g must be above 1", c.Growth)
	case c.BindingShare <= 0 || c.BindingShare > 1:
		return fmt.Errorf("limits: binding_share %g is outside (0, 1]", c.BindingShare)
	case c.RaiseSettled < 0 || c.RaiseSettled > 1:
		return fmt.Errorf("limits: raise_settled %g is outside [0, 1]", c.RaiseSettled)
	case c.DrainShare < 0 || c.DrainShare > 1:
		return fmt.Errorf("limits: drain_share %g is outside [0, 1]", c.DrainShare)
	}
	return nil
}

// Model is one model's operator configuration.
type Model struct {
	Target float64 // gateway depth to aim at
	Min    int     // the limit never goes below this (≥ 0)
	Max    int     // ... nor above this (≥ Min)
	Pin    int     // > 0: the operator fixed the limit
}

// State is what the controller carries between passes; the store persists it.
type State struct {
	Limit     int
	RaisedAt  time.Time // the pass that last raised the limit
	RaisedBy  int       // by how much it raised it
	FilledAt  time.Time // when the load first filled the raised limit; zero until then
	SettledAt time.Time // when enough of that raise's launches ran; zero until then
	Smoothed  float64   // exponentially smoothed depth
	SeenAt    time.Time // measurement time of the newest datapoint folded in
	PeakSince float64   // highest datapoint measured since SettledAt
	// Ceiling is the knee: the running jobs at which the gateway queue
	// starts, from the last datapoint that saw a queue (running − depth),
	// or raised by a far-below reading at a load at or past it. A raise
	// below it may go straight back to it; past it, only probes. It is
	// never forgotten by time: only a new reading moves it. 0 = not seen.
	Ceiling   int
	CeilingAt time.Time // when Ceiling was last set
	// Probe is the last raise past the knee: each confirmed far-below
	// reading past it doubles the next one; a queue resets it.
	Probe int
	// Recent holds the counts of the last passes, so a datapoint measured
	// a while ago is compared with the load it measured.
	Recent []Sample
}

// Sample is what one pass counted.
type Sample struct {
	At      time.Time
	Running int
	// Steady is the slots in steady use: running, and starting in place
	// of ended jobs; a raise's own launches still starting are left out
	// (they hold slots, but no datapoint has seen them yet).
	Steady int
}

// recentKeep bounds State.Recent: enough passes to cover MaxAge at 10 s.
const recentKeep = 12

// at returns the sample of the newest pass at or before t, or fallback
// when none is that old.
func (s State) at(t time.Time, fallback Sample) Sample {
	for i := len(s.Recent) - 1; i >= 0; i-- {
		if r := s.Recent[i]; !r.At.After(t) {
			if r.Steady == 0 {
				r.Steady = r.Running // a sample from before Steady was kept
			}
			return r
		}
	}
	return fallback
}

// Input is what the pass observed of the model.
type Input struct {
	Now      time.Time
	Depth    float64   // gateway queue depth of the newest datapoint
	DepthAt  time.Time // when it was measured; zero = no datapoint
	Running  int       // tasks running
	Starting int       // claimed or launched, not yet running
	Waiting  int       // jobs waiting for a slot
	Ended    int       // jobs that ended since the previous pass
	// PendingRaise counts the jobs claimed at or before State.Mark() that
	// are not yet running: the previous raise's launches still in dead time.
	PendingRaise int
	// Failing: the gateway's error rate says the provider fails now. Calls
	// that fail fast leave the queue empty, which is no spare capacity:
	// never raise on it.
	Failing bool
}

// Mark is the time up to which claimed jobs count as the last raise's
// launches: the pass at which the load filled the raised limit (a raise may
// take several passes to launch within the launch budget). Zero while the
// raise is still being launched.
func (s State) Mark() time.Time { return s.FilledAt }

// Action names what the controller did.
type Action string

// The actions, for logs and metrics.
const (
	Pinned  Action = "pin"
	Held    Action = "hold"
	Raised  Action = "raise"
	Lowered Action = "lower"
)

// Decision is the next limit with the reason for it.
type Decision struct {
	State  State
	Action Action
	Reason string
}

// Next decides the model's limit for this pass.
func Next(cfg Config, m Model, st State, in Input) Decision {
	cfg = cfg.withDefaults()
	if m.Max < m.Min {
		m.Max = m.Min
	}
	cur := clamp(st.Limit, m.Min, m.Max)
	next := st
	next.Limit = cur
	// The raise's own launches still starting: PendingRaise counts the jobs
	// claimed by the mark, so it holds replacements of ended jobs too; at
	// most the raise itself is left out.
	raising := min(in.PendingRaise, st.RaisedBy)
	now := Sample{At: in.Now, Running: in.Running, Steady: in.Running + max(0, in.Starting-raising)}
	next.Recent = append(slices.Clone(st.Recent[max(0, len(st.Recent)-recentKeep+1):]), now)
	hold := func(format string, a ...any) Decision {
		return Decision{State: next, Action: Held, Reason: "hold: " + fmt.Sprintf(format, a...)}
	}

	// 1. Pinned: the operator knows best.
	if m.Pin > 0 {
		next.Limit = clamp(m.Pin, m.Min, m.Max)
		return Decision{State: next, Action: Pinned, Reason: fmt.Sprintf("pinned at %d", next.Limit)}
	}

	// 2. The dead time: a raise is launched once the load fills it, and
	// settled once most of its launches run; only datapoints measured after
	// that say anything about it. The slots held at the last pass are the
	// load now plus the jobs that ended since: with short jobs a tenth of
	// the load may end between two passes, and the load alone would never
	// look like it fills the limit it does fill.
	load := in.Running + in.Starting
	held := load + in.Ended
	binds := float64(held) >= cfg.BindingShare*float64(cur)
	switch {
	case st.RaisedBy == 0: // never raised: every datapoint counts
	case next.FilledAt.IsZero():
		if binds {
			next.FilledAt = in.Now
		}
	case next.SettledAt.IsZero() && float64(in.PendingRaise) <= (1-cfg.RaiseSettled)*float64(st.RaisedBy):
		next.SettledAt, next.PeakSince = in.Now, 0
	}
	settled := st.RaisedBy == 0 || !next.SettledAt.IsZero()

	// 3. Blind: without a fresh datapoint there is nothing to steer by.
	if in.DepthAt.IsZero() {
		return hold("no depth datapoint")
	}
	if age := in.Now.Sub(in.DepthAt); age > cfg.MaxAge {
		return hold("depth datapoint %s old > %s", age.Round(time.Second), cfg.MaxAge)
	}
	fresh := in.DepthAt.After(st.SeenAt)
	if fresh {
		if st.SeenAt.IsZero() {
			next.Smoothed = in.Depth
		} else {
			next.Smoothed = cfg.Smoothing*in.Depth + (1-cfg.Smoothing)*st.Smoothed
		}
		next.SeenAt = in.DepthAt
		if settled && !in.DepthAt.Before(next.SettledAt) {
			next.PeakSince = max(next.PeakSince, in.Depth)
		}
	}
	depth := next.Smoothed

	// The datapoint measured the load of its time, not the limit nor the
	// load now. Below the knee each running job keeps some calls at the
	// gateway, all in service; past it the provider serves no more, so
	// each job more adds a queued call (Little's law in a closed loop:
	// depth = running − knee). The limit counts slots, and in steady use a
	// share of them start in place of ended jobs, so one slot more adds at
	// most one queued call: steering by the slots in steady use when the
	// depth was measured errs on the side of too few.
	m0 := st.at(in.DepthAt, now)
	measured := m0.Steady
	if fresh && m0.Running > 0 && depth > cfg.FarBelow*m.Target {
		// A queue: the knee is where it would be empty.
		next.Ceiling, next.CeilingAt, next.Probe = max(1, measured-int(math.Round(depth))), in.Now, 0
	}

	low, high := m.Target*(1-cfg.Band), m.Target*(1+cfg.Band)
	switch {
	// 4. Over: aim at the load where the depth is the target.
	case depth > high:
		if m0.Running == 0 {
			// None of ours ran when the depth was measured: the queue is
			// someone else's (or a failing provider's), not a sign of too
			// many jobs. Lowering now would throw the limit to its floor.
			return hold("depth %s > target %s, but none of its jobs ran when it was measured", num(depth), num(m.Target))
		}
		want := clamp(measured-int(math.Ceil(depth-m.Target)), m.Min, m.Max)
		// Lowering evicts nothing: running jobs drain as they end. Falling
		// at most DrainShare of the slots they free keeps a trickle of
		// admissions, so tiers and project turns still act during a drain.
		trickle := load + in.Ended - int(math.Floor(cfg.DrainShare*float64(in.Ended)+1e-9))
		if trickle > want {
			want = trickle
		}
		if want >= cur {
			return hold("depth %s > target %s, draining: %d running+starting, limit %d", num(depth), num(m.Target), load, cur)
		}
		next.Limit = want
		return Decision{State: next, Action: Lowered, Reason: fmt.Sprintf(
			"lower to %d: depth %s > target %s with %d slots in use when measured", want, num(depth), num(m.Target), measured)}

	// 5. Under: raise once the evidence is worth acting on, by no more
	// than the measured load supports.
	case depth < low:
		switch {
		case in.Waiting == 0:
			return hold("depth %s < target %s, nothing waiting", num(depth), num(m.Target))
		case in.Failing:
			return hold("depth %s < target %s, but the gateway's error rate says the provider fails", num(depth), num(m.Target))
		case !binds:
			return hold("limit %d not binding (%d running+starting, %d ended)", cur, load, in.Ended)
		case !settled:
			return hold("%d of the last raise's %d launches still starting", in.PendingRaise, st.RaisedBy)
		case in.DepthAt.Before(next.SettledAt):
			return hold("no datapoint yet since the last raise's launches ran")
		case m0.Running == 0:
			return hold("none of its jobs ran when the depth was measured")
		}
		// Every raise is bounded by the load a datapoint measured after the
		// last raise settled, not by the limit: the launches of that raise
		// still starting then are left out of it (no datapoint saw them).
		var aim int
		var why string
		grown := int(math.Ceil(cfg.Growth * float64(measured)))
		switch {
		case next.PeakSince > cfg.FarBelow*m.Target:
			// A queue under the target: the knee is measured; aim where
			// the depth is the target.
			aim = min(grown, measured+int(math.Ceil(m.Target-depth)))
			why = fmt.Sprintf("depth %s < target %s with %d in use", num(depth), num(m.Target), measured)
		case next.Ceiling > 0 && measured < next.Ceiling:
			// Far below a knee seen before: back to it, at most ×Growth.
			aim = min(grown, next.Ceiling+int(math.Ceil(m.Target)))
			why = fmt.Sprintf("far below with %d in use, knee %d", measured, next.Ceiling)
		case next.Ceiling > 0:
			// Far below at or past the knee: it moved (the provider grew).
			// Probe past it, each confirmed step twice the last, as TCP's
			// congestion avoidance would not: a provider that tripled
			// should not take an hour to find.
			next.Ceiling, next.CeilingAt = measured, in.Now
			next.Probe = max(int(math.Ceil(m.Target)), 2*st.Probe, 1)
			aim = min(grown, measured+next.Probe)
			why = fmt.Sprintf("far below with %d in use, at or past the knee: probe +%d", measured, next.Probe)
		default:
			// No knee yet: slow start.
			aim = grown
			why = fmt.Sprintf("far below with %d in use, no knee yet: ×%.3g", measured, cfg.Growth)
		}
		want := clamp(aim, m.Min, m.Max)
		if want <= cur {
			if cur >= m.Max {
				return hold("at max %d", m.Max)
			}
			return hold("%s: limit %d already covers %d", why, cur, aim)
		}
		next.Limit = want
		next.RaisedAt, next.RaisedBy = in.Now, want-cur
		next.FilledAt, next.SettledAt, next.PeakSince = time.Time{}, time.Time{}, 0
		return Decision{State: next, Action: Raised, Reason: fmt.Sprintf(
			"raise to %d: %s, %d waiting", want, why, in.Waiting)}
	}
	return hold("depth %s within %s..%s of target %s", num(depth), num(low), num(high), num(m.Target))
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.MaxAge = cmp.Or(c.MaxAge, d.MaxAge)
	c.Growth = cmp.Or(c.Growth, d.Growth)
	c.Smoothing = cmp.Or(c.Smoothing, d.Smoothing)
	c.BindingShare = cmp.Or(c.BindingShare, d.BindingShare)
	return c
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}

// num prints a depth without noise: 3, 40, 2.5.
func num(v float64) string {
	return fmt.Sprintf("%.3g", v)
}
