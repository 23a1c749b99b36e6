package status

import (
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/forecast"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestETAText(t *testing.T) {
	pass := 10 * time.Second
	tests := []struct {
		e    forecast.ETA
		want string
	}{
		{forecast.ETA{StartS: -1, DoneS: -1}, "-"},
		{forecast.ETA{StartS: 10, DoneS: -1}, "starts next pass"},
		{forecast.ETA{StartS: 10, DoneS: 610}, "starts next pass, done ~10m"},
		{forecast.ETA{StartS: 4800, DoneS: 7200}, "starts by 1h20m, done ~2h"},
		{forecast.ETA{StartS: 20, DoneS: 45}, "starts by 20s, done ~45s"},
		{forecast.ETA{StartS: 200000, DoneS: -1}, "starts by 55h33m"},
	}
	for _, tc := range tests {
		if got := etaText(tc.e, pass); got != tc.want {
			t.Errorf("etaText(%v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestSampledETACountsTheExpectedStop: a sampled batch's waiting jobs are
// cut, for its ETA, to those it is expected to admit before its stop rule
// holds; other batches and a batch whose stop is not known keep theirs.
func TestSampledETACountsTheExpectedStop(t *testing.T) {
	queues := []scheduler.Queue{
		{Batch: "sampled", Registered: 40000, Waiting: 38000}, // 2,000 admitted
		{Batch: "plain", Registered: 100, Waiting: 100},
		{Batch: "unknown", Registered: 500, Waiting: 400},
	}
	bs := []BatchView{{Sampling: &SampledView{ExpectedResults: 7300}}, {}, {Sampling: &SampledView{ExpectedResults: -1}}}
	got, ok := expectedWaiting(queues, bs)
	if !ok || got[0].Waiting != 5300 || got[1].Waiting != 100 || got[2].Waiting != 400 {
		t.Errorf("got waiting %d, %d, %d (cut %v); want 5300 (7300 expected − 2000 admitted), 100, 400", got[0].Waiting, got[1].Waiting, got[2].Waiting, ok)
	}
	if queues[0].Waiting != 38000 {
		t.Error("the snapshot's queues were changed")
	}
}
