package sandboxkit

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 7 ":                           7 * time.Second,
		"-3":                            0,
		"soon":                          0,
		"Tue, 01 Dec 2026 12:00:30 GMT": 30 * time.Second,
		"Tue, 01 Dec 2026 11:59:00 GMT": 0, // in the past
	}
	for v, want := range cases {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q = %s, want %s", v, got, want)
		}
	}
}

// Backoff draws from [0, min(MaxDelay, BaseDelay·2^(n−1))]: the ceiling
// doubles, then stays at MaxDelay, and the draws spread over the range.
func TestBackoff(t *testing.T) {
	p := RetryPolicy{}.withDefaults() // 500 ms base, 20 s cap
	rng := rand.New(rand.NewPCG(1, 2))
	for n, ceiling := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 7: 20 * time.Second, 60: 20 * time.Second} {
		var lo, hi time.Duration = ceiling, 0
		for range 2000 {
			d := p.Backoff(n, rng)
			if d < 0 || d > ceiling {
				t.Fatalf("retry %d: backoff %s outside [0, %s]", n, d, ceiling)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo > ceiling/10 || hi < ceiling*9/10 {
			t.Errorf("retry %d: 2000 draws span [%s, %s] of [0, %s]: not full jitter", n, lo, hi, ceiling)
		}
	}
}
