package scheduler

import (
	"math"
	"time"
)

// EndRateTau is the time constant of a model's smoothed end rate: long
// against the swings of jobs that start in waves and end in waves (a
// 5-minute window of a model whose jobs last 10 minutes sees a wave or none),
// short against a day's changes of pace. Waves of ends T apart ripple the
// estimate by at most a factor e^(T/τ) peak to trough, the bound for waves
// that end all at once: 1.40 for T = 10 min; spread-out waves ripple less.
// The price: a real change of pace shows 63 % of itself after τ.
const EndRateTau = 30 * time.Minute

// EndRate is a model's rate of ended jobs, smoothed: an exponentially
// decaying count of the jobs that ended, Sum(t) = Σ e^(−(t−tᵢ)/τ) over the
// ends tᵢ, kept by the pass that acknowledges them. At a steady rate λ since
// Since, Sum(t) = λτ(1 − e^(−(t−Since)/τ)), so PerMinute divides that factor
// out: no start-up bias, and no write while nothing ends (the count decays
// when read).
type EndRate struct {
	Sum   float64
	At    time.Time // when Sum was last updated
	Since time.Time // the first update: what the estimate covers begins here
}

// Add counts n jobs that ended by now.
func (r EndRate) Add(n int, now time.Time) EndRate {
	if n <= 0 {
		return r
	}
	if r.Since.IsZero() {
		r.Since = now
	}
	r.Sum = r.decayed(now) + float64(n)
	r.At = now
	return r
}

func (r EndRate) decayed(now time.Time) float64 {
	if r.At.IsZero() {
		return 0
	}
	return r.Sum * math.Exp(-max(now.Sub(r.At), 0).Seconds()/EndRateTau.Seconds())
}

// Covers is how long the estimate has been kept at now.
func (r EndRate) Covers(now time.Time) time.Duration {
	if r.Since.IsZero() {
		return 0
	}
	return now.Sub(r.Since)
}

// PerMinute is the smoothed rate at now, in jobs a minute; 0 before the
// first end.
func (r EndRate) PerMinute(now time.Time) float64 {
	covered := r.Covers(now).Seconds()
	if covered <= 0 {
		return 0
	}
	tau := EndRateTau.Seconds()
	return r.decayed(now) / (tau * (1 - math.Exp(-covered/tau))) * 60
}
