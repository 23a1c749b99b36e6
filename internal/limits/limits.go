package limits

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Config tunes the controller; it is shared by every model. A zero MaxAge,
// FastFactor, ProbeFactor, StepGain, LowerGain, BindingShare, Smoothing,
// Turnover or MaxBlocked takes the default of DefaultConfig.
type Config struct {
	MaxAge       time.Duration // a datapoint older than this is stale: hold
	Band         float64       // hold while the smoothed depth is within target·(1±Band)
	Smoothing    float64       // weight of a new datapoint in the smoothed depth, (0, 1]
	FarBelow     float64       // readings all ≤ FarBelow·target since the last raise settled: far below
	FastFactor   float64       // raise factor when far below, toward a known knee
	ProbeFactor  float64       // raise factor when far below with no knee known, once one was
	FastUpTo     float64       // ... up to this share of the load at which the provider saturated before
	StepGain     float64       // near target: raise ×(1 + StepGain·gap)
	LowerGain    float64       // jobs removed per queued call above target
	BindingShare float64       // the limit binds when running+starting ≥ BindingShare·limit
	RaiseSettled float64       // share of the previous raise's launches that must be running
	DrainShare   float64       // a lowering takes at most this share of the slots freed by ended jobs
	CeilingTTL   time.Duration // the saturation load is remembered this long (providers change)
	Turnover     time.Duration // the jobs starting and running, and the rates they begin and end at, are averaged over this long
	MaxBlocked   float64       // the target depth is at most this share of the running jobs (blockedBound)
}

// DefaultConfig returns the tuning measured in the simulator (see BENCHMARKS.md).
func DefaultConfig() Config {
	return Config{
		MaxAge:       90 * time.Second,
		Band:         0.5,
		Smoothing:    0.7,
		FarBelow:     0.25,
		FastFactor:   4,
		ProbeFactor:  2,
		FastUpTo:     0.8,
		StepGain:     0.05,
		LowerGain:    0.5,
		BindingShare: 0.9,
		RaiseSettled: 0.3,
		DrainShare:   0.9,
		CeilingTTL:   15 * time.Minute,
		// A few container starts and short jobs: the slots a running job
		// needs are (start + life)/life, and the averages must span a
		// cycle of a start and a life to see it. Fargate starts take up
		// to two minutes; where life is much longer the ratio is near 1
		// and its error small.
		Turnover: 5 * time.Minute,
		// Half the family's bar for a lane (0.10): the steady queue takes
		// at most half, and a provider's drop or a raise's overshoot,
		// which the jobs already running must drain, the rest.
		MaxBlocked: 0.05,
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
	case c.FastFactor < 1:
		return fmt.Errorf("limits: fast_factor %g must be at least 1", c.FastFactor)
	case c.ProbeFactor < 1:
		return fmt.Errorf("limits: probe_factor %g must be at least 1", c.ProbeFactor)
	case c.FastUpTo < 0 || c.FastUpTo > 1:
		return fmt.Errorf("limits: fast_up_to %g is outside [0, 1]", c.FastUpTo)
	case c.StepGain < 0:
		return fmt.Errorf("limits: step_gain %g must not be negative", c.StepGain)
	case c.LowerGain <= 0:
		return fmt.Errorf("limits: lower_gain %g must be positive", c.LowerGain)
	case c.BindingShare <= 0 || c.BindingShare > 1:
		return fmt.Errorf("limits: binding_share %g is outside (0, 1]", c.BindingShare)
	case c.RaiseSettled < 0 || c.RaiseSettled > 1:
		return fmt.Errorf("limits: raise_settled %g is outside [0, 1]", c.RaiseSettled)
	case c.DrainShare < 0 || c.DrainShare > 1:
		return fmt.Errorf("limits: drain_share %g is outside [0, 1]", c.DrainShare)
	case c.CeilingTTL < 0:
		return fmt.Errorf("limits: ceiling_ttl %v must not be negative", c.CeilingTTL)
	case c.Turnover < 0:
		return fmt.Errorf("limits: turnover %v must not be negative", c.Turnover)
	case c.MaxBlocked < 0 || c.MaxBlocked > 1:
		return fmt.Errorf("limits: max_blocked %g is outside [0, 1] (0: the default)", c.MaxBlocked)
	}
	return nil
}

// Model is one model's operator configuration.
type Model struct {
	Target float64 // mean gateway depth to aim at; the controller steers to at most Config.MaxBlocked of the running jobs
	Min    int     // the limit never goes below this (≥ 0)
	Max    int     // ... nor above this (≥ Min)
	Pin    int     // > 0: the operator fixed the limit
	// Conc is the provider's concurrency as the operator configured the
	// gateway: the calls it sends the provider at once before it queues
	// (0: not configured). Until a queued period measures it (State.Conc),
	// it gives the knee from the first in-service datapoint, before any
	// raise has overshot. Ignored once the gateway serves more than it
	// (the configuration is stale).
	Conc float64
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
	// Ceiling is the knee: the running jobs at which the depth reaches the
	// target, from the last reading past it (running then − excess depth:
	// past the knee each job more queues one call). A far-below raise
	// grows the running jobs fast up to FastUpTo of it and carefully
	// beyond. It counts running jobs, not slots: the provider sees only
	// those, and with long container starts most slots are starting.
	// 0 = not yet seen.
	Ceiling   int
	CeilingAt time.Time // when Ceiling was last seen
	// Recent holds the running count of the last passes, so a datapoint
	// measured a while ago is compared with the load it measured.
	Recent []Sample
	// Held is the slots held once the last pass had admitted (running +
	// starting + admitted): what admission measured against Limit. The
	// pass sets it after admission; 0 = not known (the load stands in).
	Held int
	// Conc is the provider's concurrency as the gateway showed it: its
	// calls in service in the newest period that also queued a call (a
	// gateway queues a call only when the provider is full, so the calls
	// in service then are all it serves at once). 0 = not seen, no
	// in-service metric, or the provider has since served more (it grew).
	Conc   float64
	ConcAt time.Time // when Conc was last seen
	// The model's jobs averaged over Config.Turnover: those running and
	// starting, and the rates (per second) at which they enter running and
	// end. By Little's law, stage by stage, a job starts for
	// AvgStarting/AvgEnter and runs for AvgRunning/AvgEnd, so a running
	// job needs 1 + start/life slots: short jobs behind long container
	// starts need three or four. Counts at one pass would not do: such
	// jobs start, run and end in waves, and a pass on a crest sees twice
	// the running jobs of one in the trough. Nor would the ratio of the
	// averaged counts: while the limit grows, the slots starting hold next
	// minute's running jobs, and leaving a raise's launches out left out
	// the refills claimed with them, and measured two thirds of the slots
	// a running job held (TestSlotsPerRunningCountsTheRefillsOfARaise).
	AvgRunning  float64
	AvgStarting float64
	AvgEnter    float64   // jobs a second that began running
	AvgEnd      float64   // jobs a second that ended after running (Input.Ended)
	AvgSince    time.Time // the first pass averaged; zero = none yet
	// KneeSeen: a knee was known once (a lowering's, a concurrency the
	// gateway measured or the operator configured). Past it a far-below
	// raise with no knee known probes (Config.ProbeFactor).
	KneeSeen bool
	// CallShare is the share of a running job's life spent in a call: the
	// gateway's calls in service over the jobs running, from the newest
	// datapoint whose period queued nothing (0 = not seen). ShareConc is
	// the provider's concurrency known then (Conc, else the operator's).
	// A period that queues while serving fewer calls than ShareConc says
	// the provider lost capacity since, and its knee is those calls over
	// CallShare (droppedKnee), a metric delay or more before the queue
	// shows it.
	CallShare float64
	ShareConc float64
	// DrainCarry is the share of freed slots a drain still owes its
	// trickle (Config.DrainShare), below one slot.
	DrainCarry float64
	// BeforeFailing is the highest limit the passes began with within
	// MaxAge before the first pass that read the provider failing
	// (Input.Failing), while the passes since still read it; 0 = none
	// does. The breaker's refill goes back to it (Refill).
	BeforeFailing int
	// HeldAt is the last pass at which the breaker held the limit
	// (Refill); zero = never. A datapoint measured at or before it is the
	// failing provider's queue, or its probes': no measure of the limit.
	HeldAt time.Time
	// PaceKnee is the knee, in running jobs, of the last raise that knew
	// one (the gateway's, the operator's concurrency, or FastUpTo of a
	// lowering's): what the pace lets the jobs grow to within a job's
	// life (Decision.Pace). 0 = none known yet.
	PaceKnee float64
	// The stretch since the model last held no slots, read by
	// slotsAtLeast while the averages are younger than Turnover: the
	// first pass of it that saw a job starting (none running), the first
	// after that saw one running, and since then the running
	// job-seconds and the jobs that ended. Zero until seen; reset by a
	// pass that sees none of the model's jobs starting or running.
	StretchStartAt time.Time
	StretchRunAt   time.Time
	StretchRanSec  float64
	StretchEnded   int
	// RampSpan is the time over which the last raise releases its slots
	// (Decision.Pace), from RaisedAt; 0 = all at once. A cold model's
	// ×FastFactor step is released over one container start (rampSpan),
	// so that when the first queue shows, most of its launches are still
	// starting and the pass can stop them (firstKnee).
	RampSpan time.Duration
}

// rampSpan is one container start, as the model's jobs showed it: the
// stretch's first start (the first pass that saw a job running less the
// first that saw one starting: the fastest start, a low estimate) or, once
// a raise settled, the time its launches took to settle from when the raise
// filled, whichever is longer. 0 = not known yet.
func (s State) rampSpan() time.Duration {
	span := time.Duration(0)
	if !s.StretchStartAt.IsZero() && s.StretchRunAt.After(s.StretchStartAt) {
		span = s.StretchRunAt.Sub(s.StretchStartAt)
	}
	if !s.FilledAt.IsZero() && s.SettledAt.After(s.FilledAt) {
		span = max(span, s.SettledAt.Sub(s.FilledAt))
	}
	return span
}

// slotsAtLeast is a low estimate of the slots a running job needs, 1 +
// start/life, from the stretch's first minutes, for the raises before the
// turnover averages span Turnover (0: not known; slotsPerRunning replaces
// it then).
//
// Until then a raise counted a slot a job: the limit grew by the share
// the datapoint's jobs (running, and the raise's still starting) may grow.
// Where jobs run for a few seconds behind starts of a minute that is one
// running job for every four to nine slots it needs, and the limit met
// its knee a dead time a step later than it could, launching half the
// launch budget, and the jobs finished short of a fixed cap's
// (testdata/raise.txt, a-young-raise-counts-the-slots-short-jobs-need).
//
// Each part errs toward fewer slots. The start is the span from the
// first pass that saw a job starting to the first that saw one running:
// the first jobs were launched the pass before the first and came up
// after the pass before the second, so their fastest start was longer.
// The life is the running job-seconds over the jobs ended, which counts
// the jobs still running too. Where lives are heavy-tailed the short ones
// end first, and the life may come out short and the slots many; the
// bound on a step (FastFactor) covers that. Long jobs end late: until
// they do the estimate is near 1 and says nothing the slots' count did
// not.
func (s State) slotsAtLeast() float64 {
	if s.StretchStartAt.IsZero() || s.StretchRunAt.IsZero() || s.StretchEnded < 1 || s.StretchRanSec <= 0 {
		return 0
	}
	start := s.StretchRunAt.Sub(s.StretchStartAt).Seconds()
	life := s.StretchRanSec / float64(s.StretchEnded)
	return 1 + start/life
}

// stretch folds this pass into the stretch's measure (slotsAtLeast).
func (s State) stretch(in Input) State {
	switch {
	case in.Running == 0 && in.Starting == 0:
		s.StretchStartAt, s.StretchRunAt, s.StretchRanSec, s.StretchEnded = time.Time{}, time.Time{}, 0, 0
	case s.StretchStartAt.IsZero():
		// A stretch is measured from its first launches only: one
		// first seen with jobs running began before this state did.
		if in.Running == 0 {
			s.StretchStartAt = in.Now
		}
	case s.StretchRunAt.IsZero():
		if in.Running > 0 {
			s.StretchRunAt = in.Now
		}
	case len(s.Recent) > 0:
		prev := s.Recent[len(s.Recent)-1]
		if dt := in.Now.Sub(prev.At).Seconds(); dt > 0 {
			s.StretchRanSec += float64(prev.Running) * dt
			s.StretchEnded += max(0, in.Ended)
		}
	}
	return s
}

// slotsPerRunning is the slots a running job needs, 1 + start/life from
// the averages, or 0 while they span less than one Turnover or too few
// jobs ran and ended to tell.
func (s State) slotsPerRunning(cfg Config, now time.Time) float64 {
	if s.AvgRunning < 1 || s.AvgEnter <= 0 || s.AvgEnd <= 0 || s.AvgSince.IsZero() || now.Sub(s.AvgSince) < cfg.Turnover {
		return 0
	}
	start, life := s.AvgStarting/s.AvgEnter, s.AvgRunning/s.AvgEnd
	return 1 + start/life
}

// turnover folds this pass's counts into the averages (State.AvgRunning).
// The jobs that began running since the last pass are the growth of the
// running count plus the jobs that ended; a running job that left without
// an outcome (Input.Ended) is missed there and in the end rate alike, so
// in steady state the two cancel in start/life.
func (s State) turnover(cfg Config, in Input) State {
	running, starting := float64(in.Running), float64(in.Starting)
	if s.AvgSince.IsZero() || len(s.Recent) == 0 {
		s.AvgRunning, s.AvgStarting, s.AvgEnter, s.AvgEnd, s.AvgSince = running, starting, 0, 0, in.Now
		return s
	}
	prev := s.Recent[len(s.Recent)-1]
	dt := in.Now.Sub(prev.At).Seconds()
	if dt <= 0 {
		return s
	}
	a := min(1, dt/cfg.Turnover.Seconds())
	enter := float64(max(0, in.Running-prev.Running+in.Ended)) / dt
	end := float64(max(0, in.Ended)) / dt
	s.AvgRunning += a * (running - s.AvgRunning)
	s.AvgStarting += a * (starting - s.AvgStarting)
	s.AvgEnter += a * (enter - s.AvgEnter)
	s.AvgEnd += a * (end - s.AvgEnd)
	return s
}

// Refill marks a held limit's free slots as a raise still to be
// launched: when the breaker holds the limit through an error burst, the
// jobs that fill it again once the provider heals are in dead time as a
// raise's launches are, and a datapoint measured before they run (an empty
// queue, few jobs running) says nothing of the limit. Without it the first
// pass after the burst read depth 0 under a binding limit and raised it ×4,
// four times its knee (testdata/refill.txt).
//
// The limit it refills is the highest a pass began with within MaxAge
// before the provider was first read failing: it fails a metric delay
// and a period or two before anyone can tell, and a lowering in that
// time read the queue of a provider that was failing, or about to, and
// took minutes after it healed to climb back. The first failing reading is the
// gateway's error rate (Input.Failing), which may come passes, even
// minutes, before the breaker opens on it; the first pass to read it keeps
// the limit (State.BeforeFailing); without that metric, the hold ends the
// window. A window ending at the hold missed a limit the passes that read
// the failure held on to (the breaker opens passes after the error rate
// shows), and the limit never came back; a raise read from a failing
// provider's emptied queue was refilled as if the provider took it, and
// launched at once into a queue (testdata/refill.txt).
func (s State) Refill(cfg Config, now time.Time, load int) State {
	cfg = cfg.withDefaults()
	if n := len(s.Recent); n > 0 && s.Recent[n-1].Failing && s.BeforeFailing > 0 {
		// The limit now came from passes that read the failure, or from
		// the pass before them, whose reading was already the failing
		// provider's: it is no measure of the provider.
		s.Limit = s.BeforeFailing
	} else if n > 0 {
		s.Limit = max(s.Limit, highestWithin(cfg, s.Recent, s.Recent[n-1].At))
	}
	s.RaisedAt, s.RaisedBy = now, max(1, s.Limit-load)
	s.FilledAt, s.SettledAt, s.PeakSince = time.Time{}, time.Time{}, 0
	s.HeldAt = now
	return s
}

// highestWithin is the highest limit a pass of recent began with within
// MaxAge up to end, 0 for none.
func highestWithin(cfg Config, recent []Sample, end time.Time) int {
	highest := 0
	for _, r := range recent {
		if !r.At.After(end) && !r.At.Before(end.Add(-cfg.MaxAge)) {
			highest = max(highest, r.Limit)
		}
	}
	return highest
}

// Sample is the running count at one pass, the last raise's launches
// still starting then (Input.PendingRaise), and the limit the pass began
// with.
type Sample struct {
	At      time.Time
	Running int
	Pending int
	Limit   int
	// Failing: the pass read the provider failing (Input.Failing); the
	// limits before the first such pass are the provider's (Refill).
	Failing bool
}

// recentKeep bounds State.Recent: enough passes to cover MaxAge at 10 s.
const recentKeep = 12

// sampleAt returns the sample of the newest pass at or before t, or
// fallback when none is that old.
func (s State) sampleAt(t time.Time, fallback Sample) Sample {
	for i := len(s.Recent) - 1; i >= 0; i-- {
		if !s.Recent[i].At.After(t) {
			return s.Recent[i]
		}
	}
	return fallback
}

// cohortOnly reports whether the period of a datapoint paired with the
// pass sample then began with none of the model's jobs running: the pass
// before then saw none. Every call the period served was then a call of a
// job that came up within it, and the jobs it is paired with held calls
// for part of it only: the Maximum in service over them says nothing of a
// running job's share, and read as one it put the knee past the
// provider's (testdata/raise.txt, a-period-the-jobs-came-up-in-gives-no-knee).
// Where some jobs ran through the period the end's count stands: pairing
// the calls with the fewer of the start's and end's counts lowered the
// steady knee by the jobs that ended within the period, and cost
// throughput on a tenth of the lanes.
func (s State) cohortOnly(then Sample) bool {
	for i := len(s.Recent) - 1; i >= 0; i-- {
		if s.Recent[i].At.Before(then.At) {
			return s.Recent[i].Running == 0
		}
	}
	return false
}

// Input is what the pass observed of the model.
type Input struct {
	Now      time.Time
	Depth    float64   // gateway queue depth of the newest datapoint: the period's Average, the mean queue
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
	// InService is the gateway's calls in service to the model's provider,
	// the Maximum over the depth's period, when the operator configured
	// that metric; InServiceAt is the end of its period (zero: no metric
	// or no datapoint). It is read only with a depth of the same period.
	InService   float64
	InServiceAt time.Time
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
	// Yield is how many of the model's tasks still starting the pass
	// should stop, the job going back to waiting (0: none). Over the
	// target, lowering the limit stops only new admissions: the jobs
	// already launched run into the queue as their containers come up, and
	// with container starts of a minute or two after a provider's drop
	// they are most of the overshoot. A task still starting has done no
	// work, so stopping it costs only its start.
	Yield int
	// Pace is the most jobs the pass may admit for the model, 0 for no
	// bound (State.pace): where jobs start for longer than they run, the
	// jobs launched together run together, and a raise launched at once
	// is a wave the limit was not sized for; and while a cold step
	// releases its slots over one container start (State.rampPace), the
	// tighter of the two.
	Pace int
}

// Next decides the model's limit for this pass, and the pace of its
// admissions.
func Next(cfg Config, m Model, st State, in Input) Decision {
	cfg = cfg.withDefaults()
	d := step(cfg, m, st, in)
	if m.Pin <= 0 {
		d.Pace = d.State.pace(cfg, in)
		if ramp := d.State.rampPace(in); ramp > 0 && (d.Pace == 0 || ramp < d.Pace) {
			d.Pace = ramp // the tighter bound
		}
	}
	return d
}

// step decides the model's limit for this pass (Next without the pace):
// the bookkeeping every pass does, then the regime its reading is in.
func step(cfg Config, m Model, st State, in Input) Decision {
	if m.Max < m.Min {
		m.Max = m.Min
	}
	p := begin(cfg, m, st, in)
	if m.Pin > 0 {
		return p.pinned()
	}
	p.deadTime()
	if d, blind := p.blind(); blind {
		return d
	}
	p.read()
	low, high := p.target*(1-cfg.Band), p.target*(1+cfg.Band)
	switch {
	case p.firstSlots > 0 && p.firstSlots < p.load:
		// Before over and under: the first queue's knee wins whatever
		// the depth, which lags the launches coming up into it.
		return p.firstQueue()
	case p.depth > high:
		return p.over()
	case p.depth < low:
		return p.under()
	}
	return p.hold("depth %s within %s..%s of target %s", num(p.depth), num(low), num(high), p.tgt)
}

// pass is what one pass knows of the model, shared by the regimes: the
// state it began with and the one it leaves (next), and what its reading
// says.
type pass struct {
	cfg  Config
	m    Model
	st   State // as the pass found it
	in   Input
	next State // what the pass leaves, whatever it decides
	cur  int   // the limit the pass began with, within Min..Max
	// Set by deadTime.
	load    int  // running + starting
	held    int  // the slots admission measured against the limit
	binds   bool // the limit is full
	settled bool // no raise, or the last one's launches mostly run
	// Set by read.
	fresh      bool    // the datapoint is newer than the last one folded in
	depth      float64 // the smoothed depth
	then       Sample  // the pass the datapoint was measured at
	measured   int     // the jobs running then
	cohort     bool    // its period began with none of them running (cohortOnly)
	target     float64 // the target steered to (blockedBound)
	tgt        string  // the target as the reasons name it
	inService  bool    // the calls in service are of the depth's period
	first      float64 // the knee the first period to queue shows (firstKnee), 0 = none
	firstSlots int     // the slots its jobs need
}

// hold is the decision to keep the limit.
func (p *pass) hold(format string, a ...any) Decision {
	return Decision{State: p.next, Action: Held, Reason: "hold: " + fmt.Sprintf(format, a...)}
}

// begin folds the pass's counts into the state: every pass does, whatever
// it decides.
func begin(cfg Config, m Model, st State, in Input) *pass {
	cur := clamp(st.Limit, m.Min, m.Max)
	next := st
	next.Limit = cur
	next.DrainCarry = 0 // kept only while a drain's trickle binds
	next = next.turnover(cfg, in)
	next = next.stretch(in)
	next.Recent = append(slices.Clone(st.Recent[max(0, len(st.Recent)-recentKeep+1):]), Sample{At: in.Now, Running: in.Running, Pending: in.PendingRaise, Limit: cur, Failing: in.Failing})
	switch {
	case !in.Failing:
		next.BeforeFailing = 0
	case next.BeforeFailing == 0:
		// The first pass to read the failure: the limits before it are
		// the provider's, and a breaker that opens later refills to them.
		next.BeforeFailing = cmp.Or(highestWithin(cfg, st.Recent, in.Now), cur)
	}
	return &pass{cfg: cfg, m: m, st: st, in: in, next: next, cur: cur}
}

// pinned: the operator knows best.
func (p *pass) pinned() Decision {
	p.next.Limit = clamp(p.m.Pin, p.m.Min, p.m.Max)
	return Decision{State: p.next, Action: Pinned, Reason: fmt.Sprintf("pinned at %d", p.next.Limit)}
}

// deadTime tracks the last raise: it is launched once the load fills it,
// and settled once most of its launches run; only datapoints measured
// after that say anything about it.
func (p *pass) deadTime() {
	cfg, st, in := p.cfg, p.st, p.in
	p.load = in.Running + in.Starting
	// The limit binds when admission finds it full. The load now misses
	// the jobs that ended since the last pass filled it: with short jobs
	// behind long container starts a fifth of the slots turn over between
	// two passes, and the load alone would never look like it fills the
	// limit that admission keeps hitting.
	p.held = max(p.load, st.Held)
	p.binds = float64(p.held) >= cfg.BindingShare*float64(p.cur)
	switch {
	case st.RaisedBy == 0: // never raised: every datapoint counts
	case p.next.FilledAt.IsZero():
		if p.binds {
			p.next.FilledAt = in.Now
		}
	case p.next.SettledAt.IsZero() && float64(in.PendingRaise) <= (1-cfg.RaiseSettled)*float64(st.RaisedBy):
		p.next.SettledAt, p.next.PeakSince = in.Now, 0
	}
	p.settled = st.RaisedBy == 0 || !p.next.SettledAt.IsZero()
}

// blind holds when there is no datapoint to steer by.
func (p *pass) blind() (Decision, bool) {
	cfg, st, in := p.cfg, p.st, p.in
	if in.DepthAt.IsZero() {
		return p.hold("no depth datapoint"), true
	}
	if age := in.Now.Sub(in.DepthAt); age > cfg.MaxAge {
		return p.hold("depth datapoint %s old > %s", age.Round(time.Second), cfg.MaxAge), true
	}
	if !in.DepthAt.After(st.HeldAt) {
		// The refill is a raise in dead time, so no raise reads this
		// datapoint; nor may a lowering. Paired with the jobs a pass saw
		// running before the hold (passes that hold keep no sample), a
		// failing provider's queue would read as too many jobs and lower
		// the refill to its floor the pass the breaker closed, where it
		// may stay for the rest of the run.
		return p.hold("depth datapoint measured while the breaker held the limit"), true
	}
	return Decision{}, false
}

// read folds a fresh datapoint into the smoothed depth, pairs it with the
// jobs running when it was measured, and learns what its calls in service
// say of the provider.
func (p *pass) read() {
	cfg, m, st, in := p.cfg, p.m, p.st, p.in
	next := &p.next
	p.fresh = in.DepthAt.After(st.SeenAt)
	if p.fresh {
		if st.SeenAt.IsZero() || in.DepthAt.Sub(st.SeenAt) > cfg.MaxAge {
			// The smoothed depth is as stale as its newest reading: after
			// the limit held (a breaker open through an error burst, no
			// datapoints) it is no part of the depth now.
			next.Smoothed = in.Depth
		} else {
			next.Smoothed = cfg.Smoothing*in.Depth + (1-cfg.Smoothing)*st.Smoothed
		}
		next.SeenAt = in.DepthAt
		if p.settled && !in.DepthAt.Before(next.SettledAt) {
			next.PeakSince = max(next.PeakSince, in.Depth)
		}
	}
	p.depth = next.Smoothed

	// The datapoint measured the jobs running then, not the load now.
	p.then = st.sampleAt(in.DepthAt, Sample{Running: in.Running, Pending: in.PendingRaise})
	p.measured = p.then.Running
	p.cohort = p.measured > 0 && st.cohortOnly(p.then)
	// The running jobs the target is bounded by: averaged over Turnover,
	// or the datapoint's own while no average is known.
	running := max(1, cmp.Or(next.AvgRunning, float64(p.measured)))
	p.target = blockedBound(cfg, m.Target, running)
	// The reasons name the target steered to, and the operator's when the
	// bound lowered it.
	p.tgt = num(p.target)
	if p.target < m.Target {
		p.tgt = fmt.Sprintf("%s (%s bounded to %s of %s running)", p.tgt, num(m.Target), num(cfg.MaxBlocked), num(running))
	}
	p.inService = !in.InServiceAt.IsZero() && in.InServiceAt.Equal(in.DepthAt)
	next.KneeSeen = next.KneeSeen || next.Ceiling > 0 || next.Conc > 0 || m.Conc > 0
	if p.inService && p.fresh {
		if p.first = firstKnee(*next, in, p.target); p.first > 0 {
			spr := cmp.Or(next.slotsPerRunning(cfg, in.Now), next.slotsAtLeast(), 1)
			p.firstSlots = clamp(int(math.Ceil(p.first*max(1, spr))), m.Min, m.Max)
		}
		next.Conc, next.ConcAt = concurrency(*next, in)
		if in.Depth == 0 && p.measured > 0 && in.InService > 0 && !p.cohort {
			// The provider served these calls without a queue: its
			// concurrency is at least that, known or not, and a later
			// queue at fewer calls in service is a loss of capacity
			// (droppedKnee) on a model nobody configured too.
			next.CallShare, next.ShareConc = in.InService/float64(p.measured), max(cmp.Or(next.Conc, m.Conc), in.InService)
		}
	}
}

// over: the depth is above the band; lower in proportion to the
// overshoot, anchored on the load.
func (p *pass) over() Decision {
	cfg, m, in, next := p.cfg, p.m, p.in, p.next
	depth, target, tgt, measured := p.depth, p.target, p.tgt, p.measured
	cur, load, held, inService, fresh := p.cur, p.load, p.held, p.inService, p.fresh
	hold := func(format string, a ...any) Decision {
		return Decision{State: next, Action: Held, Reason: "hold: " + fmt.Sprintf(format, a...)}
	}
	// The datapoint measured the jobs running then; jobs that ended
	// since have already lowered the load.
	excess := depth - target
	if measured == 0 {
		// None of ours ran when the depth was measured: the queue is
		// someone else's (or a failing provider's), not a sign of too
		// many jobs. Lowering now would throw the limit to its floor.
		return hold("depth %s > target %s, but none of its jobs ran when it was measured", num(depth), tgt)
	}
	// Each running job past the knee queues one call: LowerGain of
	// the excess are too many, and in steady state each running job
	// needs slotsPerRunning slots. The starting slots now would not
	// do: a drain stops admissions, the starting ones run, and a
	// limit of running + starting follows them down pass after pass,
	// to half the knee's slots within one crest.
	keep := float64(measured) - cfg.LowerGain*excess
	// A provider that lost capacity: the queue still builds for a
	// metric delay and more, and the excess it shows at first is a
	// fraction of the jobs too many: the limit came down a few slots
	// a pass while admissions went on, and the drain queued for
	// minutes. The calls in service show the loss in the first period
	// that queues.
	dropped := droppedKnee(next, in, inService, target)
	lost := ""
	if dropped > 0 && dropped < keep {
		keep = dropped
		lost = fmt.Sprintf(" (provider serves %s calls, was %s: knee %s running)", num(in.InService), num(next.ShareConc), num(dropped))
	}
	tooMany := float64(measured) - keep // the jobs the readings say are too many
	want := measured + in.Starting - int(math.Ceil(tooMany))
	r := next.slotsPerRunning(cfg, in.Now)
	if r > 0 {
		want = int(math.Ceil(keep * r))
	}
	want = clamp(want, m.Min, m.Max)
	drop, stop := lost != "", tooMany
	if drop {
		// A provider that lost capacity: every task still starting
		// beyond its knee's slots is one more job the provider
		// cannot serve, and the limit goes to the knee at once,
		// neither held by the slots held nor trickled (the family's
		// drop bar, scenarios/README.md: the limit at or below the
		// dropped knee within two passes of the first datapoint that
		// can show the drop, and no task starting beyond it).
		stop = float64(in.Starting)
	}
	yield := yieldCount(in, fresh, load-want, stop)
	// A lowering takes off the slots of the jobs the queue says are
	// too many, and no more: the slots held (at most the limit) less
	// those jobs' slots. Re-derived from the jobs running at the
	// datapoint alone, a small excess also took off every slot the
	// jobs that ended since had freed: short jobs behind long starts
	// run in waves, a datapoint over the band pairs a crest's queue
	// with whatever count the trough left, and the limit fell far
	// below its need, then took a dead time a step to climb back,
	// and the mean queue sat at half its target. A drop's large excess
	// still lowers to the steady want. The yield is decided above, on
	// that want: the tasks starting beyond it are the queue's.
	if floor := min(cur, held) - int(math.Ceil(tooMany*max(1, r))); want < floor && !drop {
		want = floor
	}
	// Lowering evicts nothing: running jobs drain as they end. Falling
	// at most DrainShare of the slots they free keeps a trickle of
	// admissions, so tiers and project turns still act during a drain.
	// The share left is carried from pass to pass: rounded each pass,
	// one or two ends a pass were all refilled, and a small provider
	// that lost capacity drained at half speed or less, admitting a job
	// every pass for as long as the queue stood.
	refill, rest := p.drainRefill()
	if trickle := load + refill; trickle > want && !drop {
		want, next.DrainCarry = trickle, rest
	}
	if want >= cur {
		d := hold("depth %s > target %s%s, draining: %d running+starting, limit %d%s", num(depth), tgt, lost, load, cur, yieldNote(yield))
		d.Yield = yield
		return d
	}
	// The knee, where the depth is the target, from the reading that
	// lowered; a drain's later readings pair an old queue with the
	// fewer jobs left running and would put it far too low.
	next.Ceiling, next.CeilingAt = max(1, measured-int(math.Ceil(excess))), in.Now
	next.Limit, next.RampSpan = want, 0
	return Decision{State: next, Action: Lowered, Yield: yield, Reason: fmt.Sprintf(
		"lower to %d: depth %s > target %s%s, %d running+starting%s", want, num(depth), tgt, lost, load, yieldNote(yield))}
}

// firstQueue: the first period to queue on a model whose provider nobody
// knew shows the knee (firstKnee), and the slots held are past its slots.
// The limit goes to them at once and every task still starting beyond them
// stops, as on a drop, whatever the depth: it is a period old and a metric
// delay, and shows a queue that is only beginning, while a cold step's
// launches come up into it; within the band or over it, each job past the
// knee queues a call for the rest of its life.
//
// The knee is known from here on (Ceiling; the period's Conc too), so a
// cold step's pacing ends (RampSpan): what it has not released yet would
// go past the knee.
func (p *pass) firstQueue() Decision {
	in, next, want := p.in, p.next, p.firstSlots
	yield := yieldCount(in, p.fresh, p.load-want, float64(in.Starting))
	next.Ceiling, next.CeilingAt = max(1, int(p.first)), in.Now
	next.RampSpan = 0
	// Unlike a drop, the drain keeps its trickle (over): the slots left
	// after the yield, and the refills the ending jobs earn, so tiers and
	// project turns still act while the jobs past the knee drain. The
	// knee errs low (firstKnee), so the trickle costs little.
	refill, rest := p.drainRefill()
	if trickle := p.load - yield + refill; trickle > want {
		want, next.DrainCarry = trickle, rest
	}
	reason := fmt.Sprintf("first queue: provider serves %s calls, %s a running job: knee %s running, %d slots; %d running+starting%s",
		num(in.InService), num(p.st.CallShare), num(p.first), want, p.load, yieldNote(yield))
	if want >= p.cur {
		return Decision{State: next, Action: Held, Yield: yield, Reason: "hold: " + reason}
	}
	next.Limit = want
	return Decision{State: next, Action: Lowered, Yield: yield, Reason: fmt.Sprintf("lower to %d: %s", want, reason)}
}

// drainRefill is a drain's trickle (over): the admissions the jobs that
// ended since the last pass earn, (1 − DrainShare) of the slots they free,
// with the fraction left carried from the last pass, and the fraction
// carried on.
func (p *pass) drainRefill() (refill int, rest float64) {
	carry := p.st.DrainCarry + (1-p.cfg.DrainShare)*float64(max(0, p.in.Ended))
	r := math.Floor(carry + 1e-9)
	return int(r), carry - r
}

// under: the depth is below the band; raise once the evidence is worth
// acting on.
func (p *pass) under() Decision {
	in, st, depth, tgt, cur, load := p.in, p.st, p.depth, p.tgt, p.cur, p.load
	binds, settled, cohort, inService, measured, next := p.binds, p.settled, p.cohort, p.inService, p.measured, p.next
	if in.Waiting == 0 {
		return p.hold("depth %s < target %s, nothing waiting", num(depth), tgt)
	}
	if in.Failing {
		return p.hold("depth %s < target %s, but the gateway's error rate says the provider fails", num(depth), tgt)
	}
	if !binds {
		return p.hold("limit %d not binding (%d running+starting, %d held after the last admission)", cur, load, st.Held)
	}
	// (A raise still being launched is not binding: handled above.)
	switch {
	case !settled:
		// PendingRaise counts every job claimed until the raise
		// filled, refills of ended jobs too, so it may exceed the
		// raise ("196 of the last raise's 69 launches" read as a
		// miscount).
		return p.hold("%d jobs launched until the last raise filled still starting (the raise added %d)", in.PendingRaise, st.RaisedBy)
	case in.DepthAt.Before(next.SettledAt):
		return p.hold("no datapoint yet since the last raise's launches ran")
	case cohort && inService:
		// A model's first jobs, or the first after it had none
		// running: the next period reads them.
		return p.hold("the datapoint's period began with none of its %d jobs running: it measured their first calls only", measured)
	}
	return p.raise()
}

// raise decides how far to raise: toward a knee known or measured, fast
// while every reading was far below the target, else a step in proportion
// to the gap.
func (p *pass) raise() Decision {
	cfg, m, in, next := p.cfg, p.m, p.in, p.next
	depth, target, tgt, measured, then, cur := p.depth, p.target, p.tgt, p.measured, p.then, p.cur
	hold := func(format string, a ...any) Decision {
		return Decision{State: next, Action: Held, Reason: "hold: " + fmt.Sprintf(format, a...)}
	}
	gap := 1.0
	if target > 0 {
		gap = (target - depth) / target
	}
	f := 1 + cfg.StepGain*gap
	want := int(math.Ceil(float64(cur) * f))
	if next.Ceiling > 0 && cfg.CeilingTTL > 0 && in.Now.Sub(next.CeilingAt) > cfg.CeilingTTL {
		next.Ceiling = 0 // an old saturation says little about the provider now
	}
	fastTo := cfg.FastUpTo * float64(next.Ceiling)
	kst, configured := withConc(cfg, next, m, in)
	oneRaise := false
	k := knee(cfg, kst, in, m.Target, measured)
	if k > 0 {
		// The gateway measured the knee before the depth rose: it
		// replaces the one a past overshoot left, and is no guess, so
		// the fast raise goes up to it, not to a share of it.
		fastTo, oneRaise = k, configured
	}
	if fastTo > 0 {
		next.PaceKnee = fastTo // the pace's knee (Decision.Pace)
	}
	// The jobs the datapoint's slots will run: those running then and
	// the last raise's launches still starting then. A raise settles
	// once RaiseSettled of its launches run, so most of a large one
	// may still be starting when its first datapoint is measured;
	// growing the limit by knee / running-then would count them
	// twice, and overshoot the knee by a quarter.
	base := measured + then.Pending
	// slotsFor is the limit that runs n jobs. The knee counts running
	// jobs; each needs slotsPerRunning slots in steady state. Until
	// those averages are known, the limit grows by the share the
	// datapoint's jobs may grow: its starting slots grow with them.
	r := next.slotsPerRunning(cfg, in.Now)
	least := 0.0 // while the averages are young (slotsAtLeast)
	if r == 0 {
		least = next.slotsAtLeast()
	}
	slotsFor := func(n float64) float64 {
		if r > 0 {
			return n * r
		}
		return max(float64(cur)*n/float64(base), n*least)
	}
	cold := false // a ×FastFactor step toward no knee ever known (rampPace)
	if next.PeakSince <= cfg.FarBelow*target && (fastTo == 0 || float64(base) < fastTo) {
		// Every reading since the last raise settled was far below:
		// fast, but not up to where the provider saturated before.
		f = cfg.FastFactor
		cold = fastTo == 0 && !next.KneeSeen
		switch {
		case fastTo == 0 && next.KneeSeen:
			// A knee was known and is no more (the provider grew,
			// or the memory of its saturation expired): the limit
			// sits near the old knee, and the provider may saturate
			// a step past it. An overshoot cannot be undone (running
			// jobs drain only as they end, slowed by the queue they
			// make), so the raise probes by doubling, as a slow
			// start after a loss, not ×FastFactor (×4 put four
			// times its knee of long jobs on a provider that had
			// grown a little, and they blocked for their life). A cold model's
			// limit is the operator's small initial limit: ×4
			// reaches a large provider in a few cycles.
			f = cfg.ProbeFactor
		case oneRaise && base > 0 && r == 0:
			// FastFactor bounds a step toward a knee nobody knows;
			// one from the gateway's own setting, or a concurrency
			// learned lately (State.LearnedFresh), is the step's end,
			// however far: a large provider's ramp takes one cycle,
			// not six. An old learned one keeps the bound.
			// Once the slots a running job needs are known (r > 0)
			// the step is theirs too, and they come from turnover
			// averages young after one Turnover: where a job starts
			// for many times its life they make the step a multiple
			// of the limit, launched as one cohort the provider
			// meets at once (×6.4 put several times the knee's jobs
			// on a small provider). That step takes the bound below,
			// and so does the step the stretch's low estimate of
			// those slots adds (slotsAtLeast): they are as young.
			f = max(1, fastTo/float64(base), min(cfg.FastFactor, slotsFor(fastTo)/float64(cur)))
		case fastTo > 0 && base > 0:
			f = max(1, min(f, slotsFor(fastTo)/float64(cur)))
		}
	} else if k > 0 && r > 0 && float64(base) < k {
		// Near the target with the knee measured: step to it, not
		// ×(1 + StepGain·gap). Short jobs behind long starts run in
		// waves, and a reading on a crest keeps the fast raise off
		// for good: creeping 5 % a dead time, the limit never met
		// the knee.
		f = max(f, min(cfg.FastFactor, slotsFor(k)/float64(cur)))
	}
	want = clamp(max(want, int(math.Ceil(float64(cur)*f))), m.Min, m.Max)
	if want == cur && cur < m.Max {
		want = cur + 1
	}
	if want <= cur {
		return hold("at max %d", m.Max)
	}
	next.Limit = want
	next.RampSpan = 0
	if cold {
		next.RampSpan = next.rampSpan() // before the last raise's marks go
	}
	next.RaisedAt, next.RaisedBy = in.Now, want-cur
	next.FilledAt, next.SettledAt, next.PeakSince = time.Time{}, time.Time{}, 0
	// The reason gives the step taken, want/cur: f alone misreports
	// it where the normal step or the one slot set want (a knee's f
	// of 1 read "raise ×1" on a raise of 4 %).
	return Decision{State: next, Action: Raised, Reason: fmt.Sprintf(
		"raise ×%.3g: depth %s < target %s, %d waiting", float64(want)/float64(cur), num(depth), tgt, in.Waiting)}
}

// pace is the most jobs a pass may admit (Decision.Pace), 0 for no bound:
// the jobs that ended since the last pass, whose slots their refills take
// in the same phase of the wave, and growth at the rate the running jobs
// turn over at the knee, PaceKnee per job life.
//
// It binds only where a job starts for at least as long as it runs
// (slotsPerRunning ≥ 2). There the limit is several slots a running job,
// most of them starting, and a raise launched in one pass or two is a
// cohort: its containers come up within a start's spread and run together,
// not spread over the start as the slots' count assumes. Short jobs behind
// long starts ran as waves several times the knee: the provider overloaded,
// every call slowed, the jobs lived longer and the wave grew, and the
// blocked share was near double the paced one's.
// Launched at the knee's turnover they come up as a stream. Where jobs run
// longer than they start, a cohort's jobs are never more than the slots
// the limit sized for them, and the pace would only slow a refill.
func (s State) pace(cfg Config, in Input) int {
	r := s.slotsPerRunning(cfg, in.Now)
	if r < 2 || s.PaceKnee <= 0 || len(s.Recent) < 2 {
		return 0
	}
	dt := in.Now.Sub(s.Recent[len(s.Recent)-2].At).Seconds()
	if dt <= 0 {
		return 0
	}
	life := s.AvgRunning / s.AvgEnd
	return max(0, in.Ended) + int(math.Ceil(s.PaceKnee*dt/max(life, dt)))
}

// rampPace is the most jobs a pass may admit while a cold step releases
// its slots (State.RampSpan), 0 for no bound: the jobs that ended since the
// last pass, whose slots their refills take, and the step's share of the
// pass's time in the span.
//
// A ×FastFactor step nobody knows the knee of, launched in one pass, comes
// up within a start's spread: by the time the first period that queued
// shows (a period and a metric delay after the running jobs passed the
// knee) every launch is running or about to, and a small provider holds
// several times its knee of jobs that drain only as they end. Released
// across one start, the later launches are still starting when that period
// shows, and the pass stops them (firstKnee).
func (s State) rampPace(in Input) int {
	if s.RampSpan <= 0 || s.RaisedBy <= 0 || len(s.Recent) < 2 || !in.Now.Before(s.RaisedAt.Add(s.RampSpan)) {
		return 0
	}
	dt := in.Now.Sub(s.Recent[len(s.Recent)-2].At)
	if dt <= 0 {
		return 0
	}
	return max(0, in.Ended) + int(math.Ceil(float64(s.RaisedBy)*min(1, dt.Seconds()/s.RampSpan.Seconds())))
}

// yieldCount is how many starting tasks a reading over the target stops
// (Decision.Yield): the jobs the slots hold beyond want, but no more than
// the starting ones, and no more than tooMany (the jobs the readings say
// are too many: the slots' count beyond want rests on
// slotsPerRunning, which with short jobs behind long starts counts several
// slots a job, and stopping by it threw away whole waves of starts, a
// third of the throughput). Only a fresh
// datapoint stops: the passes between two datapoints read the same queue,
// and the tasks the first stopped are still stopping (their slots held)
// until ECS reports them stopped.
func yieldCount(in Input, fresh bool, over int, tooMany float64) int {
	if !fresh || in.Starting <= 0 || over <= 0 {
		return 0
	}
	return min(in.Starting, over, int(math.Ceil(tooMany)))
}

// droppedKnee is the knee, in running jobs, of a provider that lost
// capacity since its jobs' call share was measured (State.CallShare), or 0
// when the datapoint shows no loss: a period that queued (the provider was
// full) serving fewer calls than the provider served then. Each running
// job holds a call CallShare of its life, so the provider fills at
// InService/CallShare jobs and the target's more queue the target. The
// in-service datapoint is a Maximum, and CallShare one too: the knee may
// come out low, which on a drop errs toward the drain it shortens.
func droppedKnee(st State, in Input, inService bool, target float64) float64 {
	if !inService || in.Depth <= 0 || in.InService <= 0 || st.CallShare <= 0 || in.InService >= st.ShareConc {
		return 0
	}
	return max(1, in.InService/st.CallShare+target)
}

// firstKnee is the knee, in running jobs, that the first period to queue
// shows on a model whose provider's concurrency nobody knew (st.KneeSeen,
// read's: none learned, none configured, no knee seen), or 0: the provider filled at the calls
// it serves now, and each running job held a call CallShare of its life
// when a period queued nothing, so it fills at InService/CallShare jobs and
// the target's more queue the target. The queue's excess alone is a
// fraction of the jobs too many at first (it builds for a metric delay and
// more), and a cold step's launches still starting would run into it; the
// pass lowers to this knee and stops them as on a drop. Both shares are
// Maximums, so the knee errs low, toward the overshoot it spares.
func firstKnee(st State, in Input, target float64) float64 {
	if st.KneeSeen || in.InService < st.ShareConc {
		return 0 // known, or fewer calls than served without a queue: a drop (droppedKnee)
	}
	// droppedKnee's formula, with no concurrency to fall below.
	return droppedKnee(State{CallShare: st.CallShare, ShareConc: math.Inf(1)}, in, true, target)
}

// yieldNote is the reason's note of a yield.
func yieldNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; stop %d starting", n)
}

// blockedBound is the target the controller steers to: the operator's,
// but at most MaxBlocked of the jobs running.
//
// The depth is the mean queue over a period, and each queued call is a
// job's container blocked at the gateway (a job makes one call at a time),
// so depth/running is the share of the running containers' time blocked,
// what the operator pays for and gets nothing. A target of a few per cent
// of the provider's concurrency is a tenth or more of a small provider's
// running jobs (a target of 2 on 20 jobs), and would have them wait a tenth
// of their time; on a large provider the operator's target binds.
func blockedBound(cfg Config, target, running float64) float64 {
	return min(target, cfg.MaxBlocked*running)
}

// concurrency updates the provider's concurrency from an in-service
// datapoint paired with its period's depth.
func concurrency(st State, in Input) (float64, time.Time) {
	switch {
	case in.Depth > 0 && in.InService > 0:
		// A call queued: the provider was full, and served this many.
		return in.InService, in.Now
	case in.InService > st.Conc:
		// More in service than the provider's concurrency, with nothing
		// queued: it grew, and the old knee says nothing now.
		return 0, time.Time{}
	}
	return st.Conc, st.ConcAt
}

// withConc is st with the operator's configured concurrency standing in
// for a learned one (not learned yet, and the gateway serves no more than
// the configuration says, else it is stale), and whether the concurrency
// is trusted as a configured one: the operator's, or a learned one younger
// than CeilingTTL (LearnedFresh).
func withConc(cfg Config, st State, m Model, in Input) (State, bool) {
	if st.Conc <= 0 && m.Conc > 0 && in.InService <= m.Conc {
		st.Conc = m.Conc
		return st, true
	}
	return st, st.LearnedFresh(cfg, in.Now)
}

// LearnedFresh reports whether the learned concurrency (State.Conc, set
// by a queued period or by the operator's edit of the model state) is
// young enough to be used as a configured one is: its knee reached in one
// raise, however far. An old one may be another provider's: a provider
// that lost capacity since shows it only in a period that queues, and a
// model idle since shows nothing. Its knee still bounds a raise, at
// ×FastFactor a step, as a knee nobody configured does (a one raise to an
// hour-old knee went ×6.12 to 588 slots in make chaos, depth 474 on a
// target of 6, where ×4 put 384). A learned value without its time is old.
func (s State) LearnedFresh(cfg Config, now time.Time) bool {
	cfg = cfg.withDefaults()
	return s.Conc > 0 && !s.ConcAt.IsZero() && !now.Before(s.ConcAt) && now.Sub(s.ConcAt) <= cfg.CeilingTTL
}

// SteerTarget is the target depth the controller steers to for an
// operator's target: at most MaxBlocked of the running jobs, averaged over
// Turnover (blockedBound), or of running while no average is known.
func (s State) SteerTarget(cfg Config, target float64, running int) float64 {
	cfg = cfg.withDefaults()
	return blockedBound(cfg, target, max(1, cmp.Or(s.AvgRunning, float64(running))))
}

// knee returns the running jobs at which the depth reaches the target, as
// the gateway's calls in service measure it (0 = unknown). Below the knee
// each running job holds a call a share f = inService/running of its
// life, so the provider fills at Conc/f jobs; past it each job more queues
// one call (closed-loop Little's law), so the depth is the target at
// Conc/f + target. The in-service datapoint is a Maximum over the period,
// which overstates f and so puts the knee early: cautious.
func knee(cfg Config, st State, in Input, target float64, measured int) float64 {
	if st.Conc <= 0 || in.InService <= 0 || measured <= 0 || in.InServiceAt.IsZero() || !in.InServiceAt.Equal(in.DepthAt) {
		return 0
	}
	// A period that queued already had its provider full: the knee is
	// the jobs running then plus the calls short of the target. The
	// target is bounded by the jobs running at the knee, not now.
	full := float64(measured) * st.Conc / in.InService
	return max(1, full+blockedBound(cfg, target, max(1, full))-in.Depth)
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.MaxAge = cmp.Or(c.MaxAge, d.MaxAge)
	c.FastFactor = cmp.Or(c.FastFactor, d.FastFactor)
	c.ProbeFactor = cmp.Or(c.ProbeFactor, d.ProbeFactor)
	c.StepGain = cmp.Or(c.StepGain, d.StepGain)
	c.Smoothing = cmp.Or(c.Smoothing, d.Smoothing)
	c.LowerGain = cmp.Or(c.LowerGain, d.LowerGain)
	c.BindingShare = cmp.Or(c.BindingShare, d.BindingShare)
	c.Turnover = cmp.Or(c.Turnover, d.Turnover)
	c.MaxBlocked = cmp.Or(c.MaxBlocked, d.MaxBlocked)
	return c
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}

// num prints a depth without noise: 3, 40, 2.5.
func num(v float64) string {
	return fmt.Sprintf("%.3g", v)
}
