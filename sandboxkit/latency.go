package sandboxkit

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency records, per successful call, the time to first token (request
// sent → first token of any kind, reasoning included), the time to the
// answer (request sent → first answer token; the TTFT when the model does
// not stream its reasoning) and the time per output token (Response.TPOT)
// into HDR histograms: microsecond
// values from 1 µs to 10 min at 3 significant digits, so p99 and max are exact
// to 0.1 % at any scale with fixed memory (~40 KB each) however many calls.
type Latency struct {
	mu     sync.Mutex
	ttft   *hdrhistogram.Histogram
	answer *hdrhistogram.Histogram
	tpot   *hdrhistogram.Histogram
}

const latencyMaxMicros = int64(10 * time.Minute / time.Microsecond)

// NewLatency returns empty histograms.
func NewLatency() *Latency {
	return &Latency{
		ttft:   hdrhistogram.New(1, latencyMaxMicros, 3),
		answer: hdrhistogram.New(1, latencyMaxMicros, 3),
		tpot:   hdrhistogram.New(1, latencyMaxMicros, 3),
	}
}

// Record adds one call; a zero tpot (a one-token answer) is not recorded.
func (l *Latency) Record(ttft, toAnswer, tpot time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.ttft.RecordValue(micros(ttft)) // micros clamps to the range: no error
	_ = l.answer.RecordValue(micros(toAnswer))
	if tpot > 0 {
		_ = l.tpot.RecordValue(micros(tpot))
	}
}

func micros(d time.Duration) int64 {
	return min(max(d.Microseconds(), 1), latencyMaxMicros)
}

// Quantiles summarises one histogram in milliseconds.
type Quantiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// LatencySummary is what a job reports of its calls' latency.
type LatencySummary struct {
	TTFT         Quantiles `json:"ttft"`
	TimeToAnswer Quantiles `json:"time_to_answer"`
	TPOT         Quantiles `json:"tpot"`
}

// Summary reads the histograms.
func (l *Latency) Summary() LatencySummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LatencySummary{TTFT: quantiles(l.ttft), TimeToAnswer: quantiles(l.answer), TPOT: quantiles(l.tpot)}
}

func quantiles(h *hdrhistogram.Histogram) Quantiles {
	if h.TotalCount() == 0 {
		return Quantiles{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Quantiles{
		Count: h.TotalCount(),
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		Max:   ms(h.Max()),
		Mean:  h.Mean() / 1000,
	}
}
