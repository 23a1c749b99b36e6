package limits

import (
	"fmt"
	"math"
	"time"
)

// Config tunes the controller; it is shared by every model. A zero MaxAge,
// FastFactor, LowerGain or BindingShare takes the default of DefaultConfig.
type Config struct {
	MaxAge       time.Duration // a datapoint older than this is stale: hold
	Band         float64       // hold while depth is within target·(1±Band)
	FastFactor   float64       // raise factor at depth 0
	LowerGain    float64       // jobs removed per queued call above target
	BindingShare float64       // the limit binds when running+starting ≥ BindingShare·limit
	ConfirmBelow time.Duration // depth must stay under the band this long before a raise
	RaiseSettled float64       // share of the previous raise's launches that must be running
}

// DefaultConfig returns the tuning measured in the simulator (see BENCHMARKS.md).
func DefaultConfig() Config {
	return Config{
		MaxAge:       90 * time.Second,
		Band:         0.5,
		FastFactor:   2,
		LowerGain:    1,
		BindingShare: 0.9,
		ConfirmBelow: 0,
		RaiseSettled: 0.5,
	}
}

// Validate names the first field that breaks its rule.
func (c Config) Validate() error {
	switch {
	case c.MaxAge <= 0:
		return fmt.Errorf("limits: max_age %v must be positive", c.MaxAge)
	case c.Band < 0 || c.Band >= 1:
		return fmt.Errorf("limits: band %g is outside [0, 1)", c.Band)
	case c.FastFactor < 1:
		return fmt.Errorf("limits: fast_factor %g must be at least 1", c.FastFactor)
	case c.LowerGain <= 0:
		return fmt.Errorf("limits: lower_gain %g must be positive", c.LowerGain)
	case c.BindingShare <= 0 || c.BindingShare > 1:
		return fmt.Errorf("limits: binding_share %g is outside (0, 1]", c.BindingShare)
	case c.ConfirmBelow < 0:
		return fmt.Errorf("limits: confirm_below %v must not be negative", c.ConfirmBelow)
	case c.RaiseSettled < 0 || c.RaiseSettled > 1:
		return fmt.Errorf("limits: raise_settled %g is outside [0, 1]", c.RaiseSettled)
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
	Limit      int
	RaisedAt   time.Time // the pass that last raised the limit
	RaisedBy   int       // by how much it raised it
	BelowSince time.Time // when the depth went under the band; zero while it is not
}

// Input is what the pass observed of the model.
type Input struct {
	Now      time.Time
	Depth    float64   // gateway queue depth of the newest datapoint
	DepthAt  time.Time // when it was measured; zero = no datapoint
	Running  int       // tasks running
	Starting int       // claimed or launched, not yet running
	Waiting  int       // jobs waiting for a slot
	// PendingRaise counts the jobs launched at or before State.RaisedAt that
	// are not yet running: the previous raise's launches still in dead time.
	PendingRaise int
}

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
	hold := func(format string, a ...any) Decision {
		return Decision{State: next, Action: Held, Reason: "hold: " + fmt.Sprintf(format, a...)}
	}

	// 1. Pinned: the operator knows best.
	if m.Pin > 0 {
		next.Limit = clamp(m.Pin, m.Min, m.Max)
		next.BelowSince = time.Time{}
		return Decision{State: next, Action: Pinned, Reason: fmt.Sprintf("pinned at %d", next.Limit)}
	}

	// 2. Blind: without a fresh datapoint there is nothing to steer by.
	if in.DepthAt.IsZero() {
		return hold("no depth datapoint")
	}
	if age := in.Now.Sub(in.DepthAt); age > cfg.MaxAge {
		return hold("depth datapoint %s old > %s", age.Round(time.Second), cfg.MaxAge)
	}

	load := in.Running + in.Starting
	low, high := m.Target*(1-cfg.Band), m.Target*(1+cfg.Band)
	switch {
	// 3. Over: lower in proportion to the overshoot, anchored on the load.
	case in.Depth > high:
		next.BelowSince = time.Time{}
		excess := in.Depth - m.Target
		want := clamp(load-int(math.Ceil(cfg.LowerGain*excess)), m.Min, m.Max)
		if want >= cur {
			return hold("depth %s > target %s but load %d already ≤ limit after draining", num(in.Depth), num(m.Target), load)
		}
		next.Limit = want
		return Decision{State: next, Action: Lowered, Reason: fmt.Sprintf(
			"lower to %d: depth %s > target %s, %d running+starting", want, num(in.Depth), num(m.Target), load)}

	// 4. Under: raise, once the evidence is worth acting on.
	case in.Depth < low:
		if next.BelowSince.IsZero() {
			next.BelowSince = in.DepthAt
		}
		if in.Waiting == 0 {
			return hold("depth %s < target %s, nothing waiting", num(in.Depth), num(m.Target))
		}
		if float64(load) < cfg.BindingShare*float64(cur) {
			return hold("limit %d not binding (%d running+starting)", cur, load)
		}
		if below := in.DepthAt.Sub(next.BelowSince); below < cfg.ConfirmBelow {
			return hold("depth under target for %s < %s", below.Round(time.Second), cfg.ConfirmBelow)
		}
		if st.RaisedBy > 0 && float64(in.PendingRaise) > (1-cfg.RaiseSettled)*float64(st.RaisedBy) {
			return hold("%d of the last raise's %d launches still starting", in.PendingRaise, st.RaisedBy)
		}
		gap := (m.Target - in.Depth) / m.Target
		if m.Target <= 0 {
			gap = 1
		}
		f := 1 + (cfg.FastFactor-1)*gap*gap
		want := clamp(int(math.Ceil(float64(cur)*f)), m.Min, m.Max)
		if want == cur && cur < m.Max {
			want = cur + 1
		}
		if want <= cur {
			return hold("at max %d", m.Max)
		}
		next.Limit = want
		next.RaisedAt = in.Now
		next.RaisedBy = want - cur
		return Decision{State: next, Action: Raised, Reason: fmt.Sprintf(
			"raise ×%.2g: depth %s < target %s, %d waiting", f, num(in.Depth), num(m.Target), in.Waiting)}
	}
	next.BelowSince = time.Time{}
	return hold("depth %s within %s..%s of target %s", num(in.Depth), num(low), num(high), num(m.Target))
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxAge == 0 {
		c.MaxAge = d.MaxAge
	}
	if c.FastFactor == 0 {
		c.FastFactor = d.FastFactor
	}
	if c.LowerGain == 0 {
		c.LowerGain = d.LowerGain
	}
	if c.BindingShare == 0 {
		c.BindingShare = d.BindingShare
	}
	return c
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}

// num prints a depth without noise: 3, 40, 2.5.
func num(v float64) string {
	return fmt.Sprintf("%.3g", v)
}
