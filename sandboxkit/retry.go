package sandboxkit

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy says how a call retries provider failures (429, 5xx, a cut
// stream, a network error); zero fields take the defaults.
type RetryPolicy struct {
	MaxAttempts   int           // requests per call, the first included; default 5
	BaseDelay     time.Duration // default 500 ms
	MaxDelay      time.Duration // the backoff's cap; default 20 s
	MaxRetryAfter time.Duration // a Retry-After longer than this ends the call at once; default 60 s
	MaxWait       time.Duration // all waits of one call (backoff, Retry-After, an open breaker) together; default 2 min
}

// check names the first field that cannot work.
func (p RetryPolicy) check() error {
	switch {
	case p.MaxAttempts < 0:
		return fmt.Errorf("retry: MaxAttempts %d: must be ≥ 1 (0 takes the default)", p.MaxAttempts)
	case p.BaseDelay < 0, p.MaxDelay < 0, p.MaxRetryAfter < 0, p.MaxWait < 0:
		return fmt.Errorf("retry: BaseDelay %s, MaxDelay %s, MaxRetryAfter %s, MaxWait %s: none may be negative",
			p.BaseDelay, p.MaxDelay, p.MaxRetryAfter, p.MaxWait)
	}
	return nil
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	p.MaxAttempts = cmp.Or(p.MaxAttempts, 5)
	p.BaseDelay = cmp.Or(p.BaseDelay, 500*time.Millisecond)
	p.MaxDelay = cmp.Or(p.MaxDelay, 20*time.Second)
	p.MaxRetryAfter = cmp.Or(p.MaxRetryAfter, 60*time.Second)
	p.MaxWait = cmp.Or(p.MaxWait, 2*time.Minute)
	return p
}

// Backoff is the wait before retry n (n ≥ 1): "full jitter", a uniform draw
// in [0, min(MaxDelay, BaseDelay·2^(n−1))]. Full jitter spreads the retries of
// many sandboxes that failed together instead of sending them back in waves.
func (p RetryPolicy) Backoff(n int, rng *rand.Rand) time.Duration {
	ceiling := p.MaxDelay
	if n-1 < 32 {
		ceiling = min(p.MaxDelay, p.BaseDelay<<(n-1))
	}
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(ceiling) + 1))
}

// RetryAfter reads a Retry-After header, in seconds or as an HTTP date; 0 if
// absent or unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
