package breaker

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

// Phase is the state of a model's breaker.
type Phase string

const (
	Closed   Phase = "CLOSED"    // admits as the limits allow
	Open     Phase = "OPEN"      // admits nothing
	HalfOpen Phase = "HALF_OPEN" // admits a few probes
)

// stallCooldowns is how many cooldowns a HALF_OPEN breaker that has admitted
// all its probes waits for their outcomes before it decides on what it has.
const stallCooldowns = 4

// DefaultGatewayThreshold is the gateway error rate below which a provider
// counts as healed when the operator publishes the error metric. A provider
// in good health answers a few percent of calls with 429/5xx, a failing one
// (an outage, a burst) half or more: a fifth lies between with a margin on
// either side, and a run of healthyCalls calls below it has at most
// healthyCalls/5 − 1 = 0 errors, which a provider failing half its calls
// shows with probability 1/32.
const DefaultGatewayThreshold = 0.2

// A tripped breaker closes on the gateway's error rate once the datapoints
// below the threshold span healthyFor (more than one period: one lucky
// period is not a trend) and hold at least healthyCalls calls.
const (
	healthyFor   = 20 * time.Second
	healthyCalls = 5
)

// Config tunes the breaker. A zero field means its default (DefaultConfig).
type Config struct {
	Window     time.Duration // outcomes older than this are forgotten (default 5m)
	Bucket     time.Duration // granularity of the window (default 30s)
	Threshold  float64       // open when provider-failed / ended >= Threshold (default 0.5)
	MinSamples int           // ... and at least this many jobs ended in the window (default 20)
	Cooldown   time.Duration // OPEN admits nothing for this long, then HALF_OPEN (default 2m)
	Probes     int           // HALF_OPEN admits at most this many jobs in all (default 3)
	// GatewayThreshold > 0: the gateway's error rate is read (the operator
	// publishes the metric), and a tripped breaker closes as soon as the
	// rate stays below it (see Gateway). 0 (the default): exit codes only.
	GatewayThreshold float64
}

// DefaultConfig returns the defaults: a 5-minute window in 30-second buckets,
// open at 50 % provider failures of at least 20 jobs, cool down for 2 minutes,
// then probe with 3 jobs.
func DefaultConfig() Config {
	return Config{
		Window:     5 * time.Minute,
		Bucket:     30 * time.Second,
		Threshold:  0.5,
		MinSamples: 20,
		Cooldown:   2 * time.Minute,
		Probes:     3,
	}
}

// Validate reports every field that breaks its rule. Zero fields are valid:
// they take their default.
func (c Config) Validate() error {
	var errs []error
	if c.Window < 0 {
		errs = append(errs, fmt.Errorf("breaker: window %v must be positive (0 means the default)", c.Window))
	}
	if c.Bucket < 0 {
		errs = append(errs, fmt.Errorf("breaker: bucket %v must be positive (0 means the default)", c.Bucket))
	} else if w := c.effective().Window; c.Bucket > w {
		errs = append(errs, fmt.Errorf("breaker: bucket %v is longer than the window %v", c.Bucket, w))
	}
	if c.Threshold != 0 && !validThreshold(c.Threshold) {
		errs = append(errs, fmt.Errorf("breaker: threshold %v is outside (0, 1]", c.Threshold))
	}
	if c.MinSamples < 0 {
		errs = append(errs, fmt.Errorf("breaker: min samples %d must be at least 1 (0 means the default)", c.MinSamples))
	}
	if c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("breaker: cooldown %v must be positive (0 means the default)", c.Cooldown))
	}
	if c.Probes < 0 {
		errs = append(errs, fmt.Errorf("breaker: probes %d must be at least 1 (0 means the default)", c.Probes))
	}
	if c.GatewayThreshold != 0 && !validThreshold(c.GatewayThreshold) {
		errs = append(errs, fmt.Errorf("breaker: gateway threshold %v is outside (0, 1] (0 means the error rate is not read)", c.GatewayThreshold))
	}
	return errors.Join(errs...)
}

func validThreshold(t float64) bool { return t > 0 && t <= 1 } // false for NaN

// effective returns the config Step works with: every field that is zero or
// breaks its rule takes its default, and Bucket is at most Window.
func (c Config) effective() Config {
	d := DefaultConfig()
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if c.Bucket <= 0 {
		c.Bucket = d.Bucket
	}
	c.Bucket = min(c.Bucket, c.Window)
	if !validThreshold(c.Threshold) {
		c.Threshold = d.Threshold
	}
	if c.MinSamples <= 0 {
		c.MinSamples = d.MinSamples
	}
	if c.Cooldown <= 0 {
		c.Cooldown = d.Cooldown
	}
	if c.Probes <= 0 {
		c.Probes = d.Probes
	}
	if !validThreshold(c.GatewayThreshold) {
		c.GatewayThreshold = 0
	}
	return c
}

// Bucket counts the jobs that ended in [Start, Start+Config.Bucket).
type Bucket struct {
	Start  time.Time
	OK     int // succeeded, or failed for their own reasons
	Failed int // failed with a provider error
}

// State is a plain value the store persists between passes.
type State struct {
	Phase                Phase     // "" means Closed
	Since                time.Time // when the current phase began
	Buckets              []Bucket  // oldest first, only those inside Window
	ProbesAdmitted       int       // HALF_OPEN: probes admitted so far
	ProbeOK, ProbeFailed int       // HALF_OPEN: outcomes seen since HALF_OPEN began

	// The gateway's evidence of healing while OPEN or HALF_OPEN (only with
	// Config.GatewayThreshold): the current run of error-rate datapoints
	// below the threshold, from HealthyAt to RateAt, and its calls.
	RateAt       time.Time // the newest datapoint folded in (or the trip)
	HealthyAt    time.Time // the run's first datapoint; zero: no run
	HealthyCalls float64
}

// Outcomes are the jobs of one model that ended since the previous pass.
type Outcomes struct{ OK, ProviderFailed int }

// Gateway is the gateway's newest error-rate datapoint of the model: the
// share of its calls the provider answered with an error in one period.
type Gateway struct {
	Rate  float64
	Calls float64
	At    time.Time // end of the period; zero: none (no metric, or no calls)
}

// Decision is what Step decided for one model in one pass.
type Decision struct {
	State  State
	Allow  int    // jobs this model may admit this pass: -1 = no breaker limit (CLOSED), 0 (OPEN), probes left (HALF_OPEN)
	Reason string // short and operator-readable
}

// Step folds in the outcomes seen since the last pass and the gateway's
// newest error rate (zero Gateway: none), and moves the phase at time now.
// It never panics and never modifies st's Buckets in place.
func Step(cfg Config, st State, seen Outcomes, gw Gateway, now time.Time) Decision {
	// 1. Clean the inputs: defaults for the config, no negative counts, no
	// monotonic clock reading (states are compared and persisted by wall time).
	cfg = cfg.effective()
	now = now.Round(0)
	seen.OK, seen.ProviderFailed = max(seen.OK, 0), max(seen.ProviderFailed, 0)
	st.ProbesAdmitted = max(st.ProbesAdmitted, 0)
	st.ProbeOK, st.ProbeFailed = max(st.ProbeOK, 0), max(st.ProbeFailed, 0)
	if st.Since.After(now) {
		st.Since = now
	}
	if st.RateAt.After(now) {
		st.RateAt = now
	}
	if st.HealthyAt.After(st.RateAt) || !(st.HealthyCalls > 0) {
		st.HealthyAt, st.HealthyCalls = time.Time{}, 0
	}

	// 2. Fold the outcomes into the window, the error rate into the
	// evidence of healing.
	st.Buckets = fold(cfg, st.Buckets, seen, now)
	st = observe(cfg, st, gw, now)

	// 3. Move the phase: a tripped breaker whose provider has healed by the
	// gateway's count closes at once, whatever its cooldown or probes.
	switch st.Phase {
	case Open, HalfOpen:
		if st.healed() {
			// The failures in the window belong to the outage the gateway
			// says is over: kept, they would reopen the breaker at once.
			reason := fmt.Sprintf("closed: gateway error rate below %s for %v over %.0f calls",
				percent(cfg.GatewayThreshold), st.RateAt.Sub(st.HealthyAt).Round(time.Second), st.HealthyCalls)
			return Decision{State: State{Phase: Closed, Since: now, RateAt: st.RateAt}, Allow: -1, Reason: reason}
		}
	}
	switch st.Phase {
	case Open:
		return stepOpen(cfg, st, now)
	case HalfOpen:
		return stepHalfOpen(cfg, st, seen, now)
	case Closed, "":
		return stepClosed(cfg, st, now, "")
	default:
		note := fmt.Sprintf("unknown phase %q treated as closed", st.Phase)
		st.Since = now
		return stepClosed(cfg, st, now, note)
	}
}

// Admitted records that n jobs were admitted this pass. In HALF_OPEN they are
// probes; in other phases it is a no-op. Call it with the jobs admitted after
// Step, on the State of Step's Decision.
func (s State) Admitted(n int) State {
	if s.Phase != HalfOpen || n <= 0 {
		return s
	}
	s.ProbesAdmitted = addSat(max(s.ProbesAdmitted, 0), n)
	return s
}

// stepClosed opens the breaker when the window holds at least MinSamples
// ended jobs and their provider-failed share reaches Threshold.
func stepClosed(cfg Config, st State, now time.Time, note string) Decision {
	st.Phase = Closed
	st.ProbesAdmitted, st.ProbeOK, st.ProbeFailed = 0, 0, 0
	st.HealthyAt, st.HealthyCalls = time.Time{}, 0
	ok, failed := totals(st.Buckets)
	ended := addSat(ok, failed)
	if ended >= cfg.MinSamples && float64(failed)/float64(ended) >= cfg.Threshold {
		st.Phase, st.Since = Open, now
		if cfg.GatewayThreshold > 0 {
			// Only datapoints measured after the trip are evidence of healing.
			st.RateAt = later(st.RateAt, now)
		}
		reason := fmt.Sprintf("open: %d of %d jobs failed with provider errors in %v (threshold %s)",
			failed, ended, cfg.Window, percent(cfg.Threshold))
		return Decision{State: st, Allow: 0, Reason: withNote(reason, note)}
	}
	return Decision{State: st, Allow: -1, Reason: withNote("closed", note)}
}

// stepOpen admits nothing until the cooldown is over, then turns HALF_OPEN
// with fresh probe counters and an empty window.
func stepOpen(cfg Config, st State, now time.Time) Decision {
	st.ProbesAdmitted, st.ProbeOK, st.ProbeFailed = 0, 0, 0
	elapsed := now.Sub(st.Since)
	if elapsed >= cfg.Cooldown {
		st = State{Phase: HalfOpen, Since: now, RateAt: st.RateAt, HealthyAt: st.HealthyAt, HealthyCalls: st.HealthyCalls}
		return Decision{State: st, Allow: cfg.Probes,
			Reason: fmt.Sprintf("half-open: cooldown %v over, %s left", cfg.Cooldown, count(cfg.Probes, "probe"))}
	}
	left := (cfg.Cooldown - elapsed).Round(time.Second)
	reason := fmt.Sprintf("open: half-open in %v", left)
	if ok, failed := totals(st.Buckets); failed > 0 {
		reason = fmt.Sprintf("open: %d of %d jobs failed with provider errors in %v; half-open in %v",
			failed, addSat(ok, failed), cfg.Window, left)
	}
	return Decision{State: st, Allow: 0, Reason: reason}
}

// stepHalfOpen counts probe outcomes and decides, in order:
//  1. verdict: once ProbeOK+ProbeFailed ≥ Probes, close if the failed share
//     is below Threshold, else reopen;
//  2. early: reopen as soon as ProbeFailed ≥ Probes × Threshold;
//  3. stalled: all probes admitted, 4 × Cooldown since HALF_OPEN began and
//     still no verdict: close if some probes ended and their failed share is
//     below Threshold, else reopen to try again;
//  4. otherwise stay, admitting the probes that are left.
func stepHalfOpen(cfg Config, st State, seen Outcomes, now time.Time) Decision {
	st.ProbeOK = addSat(st.ProbeOK, seen.OK)
	st.ProbeFailed = addSat(st.ProbeFailed, seen.ProviderFailed)
	ended := addSat(st.ProbeOK, st.ProbeFailed)
	good := ended > 0 && float64(st.ProbeFailed)/float64(ended) < cfg.Threshold

	closed := func(reason string) Decision {
		return Decision{State: State{Phase: Closed, Since: now, Buckets: st.Buckets, RateAt: st.RateAt}, Allow: -1, Reason: reason}
	}
	reopened := func(reason string) Decision {
		return Decision{State: State{Phase: Open, Since: now, Buckets: st.Buckets,
			RateAt: st.RateAt, HealthyAt: st.HealthyAt, HealthyCalls: st.HealthyCalls}, Allow: 0, Reason: reason}
	}

	if cfg.GatewayThreshold > 0 {
		return probeOn(cfg, st, ended, closed)
	}
	// 1. Verdict.
	if ended >= cfg.Probes {
		if good {
			return closed(fmt.Sprintf("closed: %d of %d probes succeeded", st.ProbeOK, ended))
		}
		return reopened(fmt.Sprintf("open: %d of %d probes failed with provider errors (threshold %s)",
			st.ProbeFailed, ended, percent(cfg.Threshold)))
	}
	// 2. Early: enough probes failed that the verdict cannot be good.
	if float64(st.ProbeFailed) >= float64(cfg.Probes)*cfg.Threshold {
		return reopened(fmt.Sprintf("open: %d of %s failed with provider errors (threshold %s)",
			st.ProbeFailed, count(cfg.Probes, "probe"), percent(cfg.Threshold)))
	}
	// 3. Stalled.
	if stall := mulSat(cfg.Cooldown, stallCooldowns); st.ProbesAdmitted >= cfg.Probes && now.Sub(st.Since) >= stall {
		if good {
			return closed(fmt.Sprintf("closed: %d of %d ended probes succeeded, the rest still running after %v",
				st.ProbeOK, ended, stall))
		}
		if ended == 0 {
			return reopened(fmt.Sprintf("open: no probe ended in %v, trying again", stall))
		}
		return reopened(fmt.Sprintf("open: %d of %d ended probes failed with provider errors in %v, trying again",
			st.ProbeFailed, ended, stall))
	}
	// 4. Keep probing.
	left := max(cfg.Probes-st.ProbesAdmitted, 0)
	reason := fmt.Sprintf("half-open: %s left", count(left, "probe"))
	if ended > 0 {
		reason += fmt.Sprintf(", %d ok and %d failed so far", st.ProbeOK, st.ProbeFailed)
	}
	return Decision{State: st, Allow: left, Reason: reason}
}

// observe folds the gateway's datapoint into the evidence of healing: CLOSED
// only notes its time; OPEN and HALF_OPEN extend the run of datapoints below
// the threshold, and one at or above it ends the run. A datapoint not newer
// than the last one, without calls, or not a share is no evidence.
func observe(cfg Config, st State, gw Gateway, now time.Time) State {
	if cfg.GatewayThreshold == 0 || gw.At.IsZero() || gw.At.After(now) || !gw.At.After(st.RateAt) ||
		!(gw.Calls > 0) || !(gw.Rate >= 0 && gw.Rate <= 1) {
		return st
	}
	st.RateAt = gw.At.Round(0)
	switch {
	case st.Phase != Open && st.Phase != HalfOpen:
		st.HealthyAt, st.HealthyCalls = time.Time{}, 0
	case gw.Rate >= cfg.GatewayThreshold:
		st.HealthyAt, st.HealthyCalls = time.Time{}, 0
	default:
		if st.HealthyAt.IsZero() {
			st.HealthyAt = st.RateAt
		}
		st.HealthyCalls = min(st.HealthyCalls+gw.Calls, math.MaxInt32)
	}
	return st
}

// healed reports whether the run of healthy datapoints is long enough.
func (s State) healed() bool {
	return !s.HealthyAt.IsZero() && s.RateAt.Sub(s.HealthyAt) >= healthyFor && s.HealthyCalls >= healthyCalls
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// probeOn is HALF_OPEN when the gateway's error rate is read: the rate, not
// the probes' exits, tells when the provider healed (Step closes on it), so
// a failed probe does not reopen the breaker for another cooldown: it is
// replaced, keeping Probes jobs in flight. Their calls are what the rate is
// measured on, and a probe that fails costs one container start and one
// fast-failing call. Probes ending well close the breaker too, so a gateway
// that publishes nothing (a misnamed metric) cannot hold it HALF_OPEN for
// ever.
func probeOn(cfg Config, st State, ended int, closed func(string) Decision) Decision {
	if st.ProbeOK >= cfg.Probes {
		return closed(fmt.Sprintf("closed: %d probes succeeded", st.ProbeOK))
	}
	inFlight := max(0, st.ProbesAdmitted-ended)
	left := max(0, cfg.Probes-inFlight)
	reason := fmt.Sprintf("half-open: %d probes in flight, %d to admit; waiting for the gateway error rate below %s",
		inFlight, left, percent(cfg.GatewayThreshold))
	if !st.HealthyAt.IsZero() {
		reason += fmt.Sprintf(" (%v, %.0f calls so far)", st.RateAt.Sub(st.HealthyAt).Round(time.Second), st.HealthyCalls)
	}
	return Decision{State: st, Allow: left, Reason: reason}
}

// fold returns a new window: the buckets of in re-aligned to cfg.Bucket,
// those from the future merged into the current one, those Window old or
// older dropped, the outcomes seen added to the bucket containing now, then
// sorted oldest first with equal starts merged and empty buckets left out.
func fold(cfg Config, in []Bucket, seen Outcomes, now time.Time) []Bucket {
	cur := bucketStart(now, cfg.Bucket)
	out := make([]Bucket, 0, len(in)+1)
	for _, b := range in {
		b.Start = bucketStart(b.Start.Round(0), cfg.Bucket)
		b.OK, b.Failed = max(b.OK, 0), max(b.Failed, 0)
		if b.Start.After(cur) {
			b.Start = cur // the clock went back: keep the counts
		}
		if now.Sub(b.Start) >= cfg.Window {
			continue
		}
		out = append(out, b)
	}
	out = append(out, Bucket{Start: cur, OK: seen.OK, Failed: seen.ProviderFailed})
	slices.SortStableFunc(out, func(a, b Bucket) int { return a.Start.Compare(b.Start) })

	merged := out[:0]
	for _, b := range out {
		switch n := len(merged); {
		case b.OK == 0 && b.Failed == 0:
		case n > 0 && merged[n-1].Start.Equal(b.Start):
			merged[n-1].OK = addSat(merged[n-1].OK, b.OK)
			merged[n-1].Failed = addSat(merged[n-1].Failed, b.Failed)
		default:
			merged = append(merged, b)
		}
	}
	if len(merged) == 0 {
		return nil
	}
	return merged
}

// bucketStart truncates t to a multiple of d since the Unix epoch (time's own
// Truncate counts from year 1, which differs for d that do not divide a day).
// It computes (sec·1e9 + nsec) mod d in 128 bits, so it is exact for any t.
func bucketStart(t time.Time, d time.Duration) time.Time {
	b := int64(d)
	m := t.Unix() % b
	if m < 0 {
		m += b
	}
	hi, lo := bits.Mul64(uint64(m), uint64(time.Second))
	lo, carry := bits.Add64(lo, uint64(t.Nanosecond()), 0)
	rem := bits.Rem64(hi+carry, lo, uint64(b))
	return t.Add(-time.Duration(rem))
}

func totals(bs []Bucket) (ok, failed int) {
	for _, b := range bs {
		ok, failed = addSat(ok, b.OK), addSat(failed, b.Failed)
	}
	return ok, failed
}

// addSat adds two non-negative ints, saturating at math.MaxInt.
func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// mulSat multiplies a positive duration, saturating at the largest duration.
func mulSat(d time.Duration, n int64) time.Duration {
	if d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

func percent(f float64) string { return fmt.Sprintf("%.4g%%", f*100) }

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func withNote(reason, note string) string {
	if note == "" {
		return reason
	}
	return reason + "; " + note
}
