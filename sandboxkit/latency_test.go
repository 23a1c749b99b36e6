package sandboxkit

import (
	"math"
	"testing"
	"time"
)

// The summary's numbers on a known distribution: 1..1000 ms, one each.
func TestLatencyQuantiles(t *testing.T) {
	l := NewLatency()
	for i := 1; i <= 1000; i++ {
		l.Record(time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond, time.Duration(i)*time.Microsecond*10)
	}
	s := l.Summary()
	// HDR at 3 significant digits: each value within 0.1 % of the exact one.
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want*0.001+1e-9 {
			t.Errorf("%s = %g, want %g ±0.1 %%", name, got, want)
		}
	}
	if s.TTFT.Count != 1000 || s.TPOT.Count != 1000 {
		t.Fatalf("counts %d, %d; want 1000 each", s.TTFT.Count, s.TPOT.Count)
	}
	near("TTFT p50", s.TTFT.P50, 500)
	near("TTFT p90", s.TTFT.P90, 900)
	near("TTFT p99", s.TTFT.P99, 990)
	near("TTFT max", s.TTFT.Max, 1000)
	near("TTFT mean", s.TTFT.Mean, 500.5)
	near("TPOT p50", s.TPOT.P50, 5)
	near("TPOT p99", s.TPOT.P99, 9.9)
}

func TestLatencyEdges(t *testing.T) {
	l := NewLatency()
	if s := l.Summary(); s.TTFT.Count != 0 || s.TTFT.Max != 0 {
		t.Errorf("empty summary %+v, want zeros", s)
	}
	l.Record(0, 0, 0)                 // a zero TTFT is clamped to 1 µs; a zero TPOT (one token) is not recorded
	l.Record(time.Hour, time.Hour, 0) // over the 10-minute range: clamped, not dropped
	s := l.Summary()
	if s.TTFT.Count != 2 || s.TPOT.Count != 0 {
		t.Errorf("counts TTFT %d TPOT %d, want 2 and 0", s.TTFT.Count, s.TPOT.Count)
	}
	if s.TTFT.Max < 599_000 || s.TTFT.Max > 601_000 {
		t.Errorf("max %g ms, want the 10-minute clamp (600000 ms)", s.TTFT.Max)
	}
}
