package main

import (
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
)

func TestEndedRateAndDrain(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC)
	buckets := []breaker.Bucket{
		{Start: now.Add(-4 * time.Minute), OK: 30, Failed: 2},
		{Start: now.Add(-2 * time.Minute), OK: 8},
	}
	if got := endedRate(buckets, now); got != 10 {
		t.Errorf("got %v jobs a minute, want 40 over 4 minutes = 10", got)
	}
	if got := endedRate(nil, now); got != 0 {
		t.Errorf("got %v without buckets, want 0", got)
	}
	for s, want := range map[float64]string{-1: "-", 600: "10m0s", 11400: "3h10m0s"} {
		if got := human(s); got != want {
			t.Errorf("human(%v) = %q, want %q", s, got, want)
		}
	}
}
