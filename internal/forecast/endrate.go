package forecast

import (
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// smoothFrom is how long the smoothed end rate must have been kept before
// the forecast goes by it instead of the breaker's 5-minute window.
const smoothFrom = 5 * time.Minute

// EndRate is the end rate status and the forecast go by, in jobs a
// minute: the smoothed one (scheduler.EndRate, τ = 30 min) once it covers
// smoothFrom, else the breaker's window. The window alone made an ETA jump
// 3h16m → 2h2m → 53m → 1h55m in ten minutes as waves of jobs ended.
func EndRate(st scheduler.ModelState, now time.Time) float64 {
	if st.Ended.Covers(now) >= smoothFrom {
		return st.Ended.PerMinute(now)
	}
	return endedRate(st.Breaker.Buckets, now)
}

// endedRate is jobs ended per minute over the breaker's buckets.
func endedRate(buckets []breaker.Bucket, now time.Time) float64 {
	if len(buckets) == 0 {
		return 0
	}
	n := 0
	for _, b := range buckets {
		n += b.OK + b.Failed
	}
	span := now.Sub(buckets[0].Start).Minutes()
	if span <= 0 || n == 0 {
		return 0
	}
	return float64(n) / span
}
