package sandboxkit

import (
	"cmp"
	"fmt"
	"math"
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
	Answered   Verdict = iota // the gateway answered, rightly or with the job's own error (a 4xx)
	Overloaded                // 429 or 503: the provider sheds load
	Failed                    // another 5xx (500, 502, 504): the provider or the gateway failed
	Abandoned                 // no verdict (the caller gave up, a network error): a probe slot is freed, nothing counted
)

// failure reports whether the verdict counts against the provider.
func (v Verdict) failure() bool { return v == Overloaded || v == Failed }

// BreakerConfig tunes a Breaker; zero fields take the defaults.
type BreakerConfig struct {
	Window     time.Duration // outcomes counted over the last Window; default 10 s
	Buckets    int           // the window's resolution; default 10
	MinSamples int           // no trip on the failure share with fewer calls in the window; default 20
	Threshold  float64       // the failure share that trips it, with enough evidence (below); default 0.25
	// NoiseRate is the failure share a healthy provider may show: the
	// window's failures must be more than NoiseRate would give by chance
	// (Significance) before the share trips the breaker. Default
	// Threshold/2; it must be below Threshold.
	NoiseRate float64
	// Significance bounds the chance that a window of a provider failing
	// at NoiseRate shows the failures that trip it; default 1e-4.
	Significance float64
	// Consecutive failures in a row trip it whatever the window holds, so a
	// sandbox making few calls still stops on an outage; default 5 (one
	// call's retries, all refused).
	Consecutive int
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
	c.NoiseRate = cmp.Or(c.NoiseRate, c.Threshold/2)
	c.Significance = cmp.Or(c.Significance, 1e-4)
	c.Consecutive = cmp.Or(c.Consecutive, 5)
	c.CooldownMin = cmp.Or(c.CooldownMin, 5*time.Second)
	c.CooldownMax = max(cmp.Or(c.CooldownMax, 10*time.Second), c.CooldownMin)
	c.Probes = cmp.Or(c.Probes, 3)
	c.ProbeWait = cmp.Or(c.ProbeWait, 250*time.Millisecond)
	return c
}

// Breaker is a three-state circuit breaker over the calls one sandbox makes
// to the gateway. Many sandboxes hammering a provider that answers 429 make
// its overload worse and burn their own retries; the breaker stops this
// sandbox's calls for a cooldown when the provider sheds load or fails.
//
//	CLOSED ── Consecutive failures in a row, or the window's share trips (below) ──▶ OPEN
//	OPEN ── cooldown (uniform in [CooldownMin, CooldownMax], so sandboxes do not return in step) ──▶ HALF_OPEN
//	HALF_OPEN ── Probes answered ──▶ CLOSED (window cleared)
//	HALF_OPEN ── one probe overloaded or failed (any 5xx) ──▶ OPEN (a new cooldown)
//
// A failure is a 429 or any 5xx. The share trips it when the window (the
// last Window) holds n ≥ MinSamples calls and k failures with k ≥
// Threshold·n and n·KL(k/n ‖ NoiseRate) ≥ ln(1/Significance), KL the
// Bernoulli relative entropy: by the Chernoff bound, a provider failing at
// NoiseRate shows so many failures in a window less often than
// Significance. The share alone, checked after every call over windows of
// 20 calls, tripped on a 10 % error rate within a minute in about 40 % of
// runs: 5 failures in 20 calls are common at 10 %. With the defaults, 20
// calls trip at 11 failures, 100 at 29; a steady share well over Threshold
// trips within a window.
//
// Only calls Allow let through in HALF_OPEN are probes: a call started
// before the trip that ends in HALF_OPEN or after is not counted, nor one
// started in an earlier CLOSED spell. Time is an input: Allow and Record
// take now.
type Breaker struct {
	cfg      BreakerConfig
	evidence float64 // ln(1/Significance)

	mu        sync.Mutex
	rng       *rand.Rand
	state     State
	spell     uint64 // counts the state changes: a Permit names the spell it was given in
	openUntil time.Time
	inFlight  int // HALF_OPEN probes not yet recorded
	answered  int // HALF_OPEN probes answered
	run       int // CLOSED: failures since the last answer
	buckets   []bucket
}

// Permit is a call Allow let through; Record takes it back with the call's
// verdict.
type Permit struct {
	spell uint64
}

type bucket struct {
	start    time.Time // the bucket's slot start; zero = unused
	calls    int
	failures int
}

// NewBreaker returns a closed breaker.
func NewBreaker(cfg BreakerConfig) (*Breaker, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Threshold <= 0 || cfg.Threshold > 1:
		return nil, fmt.Errorf("breaker: threshold %g: must be in (0, 1]", cfg.Threshold)
	case cfg.NoiseRate <= 0 || cfg.NoiseRate >= cfg.Threshold:
		return nil, fmt.Errorf("breaker: noise rate %g: must be in (0, threshold %g)", cfg.NoiseRate, cfg.Threshold)
	case cfg.Significance <= 0 || cfg.Significance >= 1:
		return nil, fmt.Errorf("breaker: significance %g: must be in (0, 1)", cfg.Significance)
	case cfg.Consecutive < 1 || cfg.MinSamples < 1 || cfg.Probes < 1:
		return nil, fmt.Errorf("breaker: consecutive %d, min samples %d, probes %d: each must be at least 1", cfg.Consecutive, cfg.MinSamples, cfg.Probes)
	case cfg.Window < time.Duration(cfg.Buckets) || cfg.Buckets < 1:
		return nil, fmt.Errorf("breaker: window %s over %d buckets: need at least one bucket of 1ns", cfg.Window, cfg.Buckets)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Breaker{
		cfg: cfg, evidence: -math.Log(cfg.Significance),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), buckets: make([]bucket, cfg.Buckets),
	}, nil
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
// asking again. An allowed call must be followed by one Record of its Permit.
func (b *Breaker) Allow(now time.Time) (Permit, bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	switch b.state {
	case Open:
		return Permit{}, false, b.openUntil.Sub(now)
	case HalfOpen:
		if b.inFlight+b.answered >= b.cfg.Probes {
			return Permit{}, false, b.cfg.ProbeWait
		}
		b.inFlight++
	}
	return Permit{spell: b.spell}, true, 0
}

// Record counts the verdict of a call Allow let through. A call let through
// in another spell of the breaker than the current one (before a trip, or
// before the last close) changes nothing: it tells of the gateway as it was.
func (b *Breaker) Record(now time.Time, p Permit, v Verdict) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if p.spell != b.spell {
		return
	}
	switch b.state {
	case Closed:
		if v == Abandoned {
			return
		}
		bk := b.bucketAt(now)
		bk.calls++
		if !v.failure() {
			b.run = 0
			return
		}
		bk.failures++
		b.run++
		if b.run >= b.cfg.Consecutive || b.shareTrips(b.counts(now)) {
			b.trip(now)
		}
	case HalfOpen:
		b.inFlight = max(b.inFlight-1, 0)
		switch {
		case v.failure():
			b.trip(now)
		case v == Answered:
			b.answered++
			if b.answered >= b.cfg.Probes {
				b.state, b.answered, b.inFlight, b.run = Closed, 0, 0, 0
				b.spell++
				clear(b.buckets)
			}
		}
	}
}

// shareTrips is the window's test: at least MinSamples calls, a failure
// share of at least Threshold, and more failures than NoiseRate explains.
func (b *Breaker) shareTrips(calls, failures int) bool {
	if calls < b.cfg.MinSamples || float64(failures) < b.cfg.Threshold*float64(calls) {
		return false
	}
	return float64(calls)*bernoulliKL(float64(failures)/float64(calls), b.cfg.NoiseRate) >= b.evidence
}

// bernoulliKL is KL(q ‖ p) = q·ln(q/p) + (1−q)·ln((1−q)/(1−p)), for p in (0, 1).
func bernoulliKL(q, p float64) float64 {
	kl := 0.0
	if q > 0 {
		kl += q * math.Log(q/p)
	}
	if q < 1 {
		kl += (1 - q) * math.Log((1-q)/(1-p))
	}
	return kl
}

func (b *Breaker) advance(now time.Time) {
	if b.state == Open && !now.Before(b.openUntil) {
		b.state, b.inFlight, b.answered = HalfOpen, 0, 0
		b.spell++
	}
}

func (b *Breaker) trip(now time.Time) {
	span := b.cfg.CooldownMax - b.cfg.CooldownMin
	cooldown := b.cfg.CooldownMin
	if span > 0 {
		cooldown += time.Duration(b.rng.Int64N(int64(span) + 1))
	}
	b.state, b.openUntil, b.inFlight, b.answered, b.run = Open, now.Add(cooldown), 0, 0, 0
	b.spell++
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
func (b *Breaker) counts(now time.Time) (calls, failures int) {
	oldest := now.Truncate(b.width()).Add(-b.cfg.Window + b.width())
	for _, bk := range b.buckets {
		if !bk.start.IsZero() && !bk.start.Before(oldest) && !bk.start.After(now) {
			calls += bk.calls
			failures += bk.failures
		}
	}
	return calls, failures
}
