package sandboxkit

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// State is a breaker's state.
type State int

const (
	Closed   State = iota // calls flow; outcomes are counted
	Open                  // calls are refused until the cooldown ends
	HalfOpen              // a few probe calls test the gateway
)

func (s State) String() string {
	switch s {
	case Closed:
		return "CLOSED"
	case Open:
		return "OPEN"
	case HalfOpen:
		return "HALF_OPEN"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Verdict is what one call tells the breaker.
type Verdict int

const (
	Answered   Verdict = iota // the gateway answered, rightly or with the job's own error
	Overloaded                // 429 or 503: the provider sheds load
	Abandoned                 // no verdict (the caller gave up, a network error): a probe slot is freed, nothing counted
)

// BreakerConfig tunes a Breaker; zero fields take the defaults.
type BreakerConfig struct {
	Window      time.Duration // outcomes counted over the last Window; default 10 s
	Buckets     int           // the window's resolution; default 10
	MinSamples  int           // no trip on fewer calls in the window; default 20
	Threshold   float64       // trip when overloaded/calls ≥ Threshold; default 0.25
	CooldownMin time.Duration // OPEN lasts a uniform draw in [CooldownMin, CooldownMax]; default 5 s
	CooldownMax time.Duration // default 10 s
	Probes      int           // calls let through in HALF_OPEN; all must be answered to close; default 3
	ProbeWait   time.Duration // how long a refused call waits in HALF_OPEN before asking again; default 250 ms
	Seed        uint64        // the cooldown jitter's seed; 0 draws one
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	c.Window = cmp.Or(c.Window, 10*time.Second)
	c.Buckets = cmp.Or(c.Buckets, 10)
	c.MinSamples = cmp.Or(c.MinSamples, 20)
	c.Threshold = cmp.Or(c.Threshold, 0.25)
	c.CooldownMin = cmp.Or(c.CooldownMin, 5*time.Second)
	c.CooldownMax = max(cmp.Or(c.CooldownMax, 10*time.Second), c.CooldownMin)
	c.Probes = cmp.Or(c.Probes, 3)
	c.ProbeWait = cmp.Or(c.ProbeWait, 250*time.Millisecond)
	return c
}

// Breaker is a three-state circuit breaker over the calls one sandbox makes
// to the gateway. Many sandboxes hammering a provider that answers 429 make
// its overload worse and burn their own retries; the breaker stops this
// sandbox's calls for a cooldown when the provider sheds load.
//
//	CLOSED ── calls ≥ MinSamples and overloaded/calls ≥ Threshold over Window ──▶ OPEN
//	OPEN ── cooldown (uniform in [CooldownMin, CooldownMax], so sandboxes do not return in step) ──▶ HALF_OPEN
//	HALF_OPEN ── Probes answered ──▶ CLOSED (window cleared)
//	HALF_OPEN ── one probe overloaded ──▶ OPEN (a new cooldown)
//
// Time is an input: Allow and Record take now.
type Breaker struct {
	cfg BreakerConfig

	mu        sync.Mutex
	rng       *rand.Rand
	state     State
	openUntil time.Time
	inFlight  int // HALF_OPEN probes not yet recorded
	answered  int // HALF_OPEN probes answered
	buckets   []bucket
}

type bucket struct {
	start      time.Time // the bucket's slot start; zero = unused
	calls      int
	overloaded int
}

// NewBreaker returns a closed breaker.
func NewBreaker(cfg BreakerConfig) (*Breaker, error) {
	cfg = cfg.withDefaults()
	if cfg.Threshold <= 0 || cfg.Threshold > 1 {
		return nil, fmt.Errorf("breaker: threshold %g: must be in (0, 1]", cfg.Threshold)
	}
	if cfg.Window < time.Duration(cfg.Buckets) || cfg.Buckets < 1 {
		return nil, fmt.Errorf("breaker: window %s over %d buckets: need at least one bucket of 1ns", cfg.Window, cfg.Buckets)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Breaker{cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), buckets: make([]bucket, cfg.Buckets)}, nil
}

// State is the breaker's state at now (OPEN turns HALF_OPEN once its cooldown
// has passed).
func (b *Breaker) State(now time.Time) State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	return b.state
}

// Allow says whether a call may start at now; if not, how long to wait before
// asking again. An allowed call must be followed by one Record.
func (b *Breaker) Allow(now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	switch b.state {
	case Open:
		return false, b.openUntil.Sub(now)
	case HalfOpen:
		if b.inFlight+b.answered >= b.cfg.Probes {
			return false, b.cfg.ProbeWait
		}
		b.inFlight++
	}
	return true, 0
}

// Record counts the verdict of a call Allow let through.
func (b *Breaker) Record(now time.Time, v Verdict) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	switch b.state {
	case Closed:
		if v == Abandoned {
			return
		}
		bk := b.bucketAt(now)
		bk.calls++
		if v == Overloaded {
			bk.overloaded++
		}
		if calls, over := b.counts(now); calls >= b.cfg.MinSamples && float64(over) >= b.cfg.Threshold*float64(calls) {
			b.trip(now)
		}
	case HalfOpen:
		b.inFlight = max(b.inFlight-1, 0)
		switch v {
		case Overloaded:
			b.trip(now)
		case Answered:
			b.answered++
			if b.answered >= b.cfg.Probes {
				b.state, b.answered, b.inFlight = Closed, 0, 0
				clear(b.buckets)
			}
		}
	case Open:
		// A call allowed before the trip ended late: the trip already counted the window.
	}
}

func (b *Breaker) advance(now time.Time) {
	if b.state == Open && !now.Before(b.openUntil) {
		b.state, b.inFlight, b.answered = HalfOpen, 0, 0
	}
}

func (b *Breaker) trip(now time.Time) {
	span := b.cfg.CooldownMax - b.cfg.CooldownMin
	cooldown := b.cfg.CooldownMin
	if span > 0 {
		cooldown += time.Duration(b.rng.Int64N(int64(span) + 1))
	}
	b.state, b.openUntil, b.inFlight, b.answered = Open, now.Add(cooldown), 0, 0
	clear(b.buckets)
}

func (b *Breaker) width() time.Duration { return b.cfg.Window / time.Duration(b.cfg.Buckets) }

// bucketAt is the bucket of now's slot, emptied if it last held an older slot.
func (b *Breaker) bucketAt(now time.Time) *bucket {
	w := b.width()
	slot := now.Truncate(w)
	n := int64(len(b.buckets))
	bk := &b.buckets[((slot.UnixNano()/int64(w))%n+n)%n]
	if !bk.start.Equal(slot) {
		*bk = bucket{start: slot}
	}
	return bk
}

// counts sums the buckets whose slot lies within Window of now.
func (b *Breaker) counts(now time.Time) (calls, overloaded int) {
	oldest := now.Truncate(b.width()).Add(-b.cfg.Window + b.width())
	for _, bk := range b.buckets {
		if !bk.start.IsZero() && !bk.start.Before(oldest) && !bk.start.After(now) {
			calls += bk.calls
			overloaded += bk.overloaded
		}
	}
	return calls, overloaded
}
