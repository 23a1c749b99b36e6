package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/limits"
)

// At 2,000 busy models one pass line would be ~570 KB, past the 256 KB a
// CloudWatch Logs event takes: Lines splits it, every model in exactly one
// line, the summary in the first.
func TestReportLinesStayUnderTheLogEventLimit(t *testing.T) {
	rep := Report{At: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Claimed: 7}
	for i := range 2000 {
		rep.Plan.Models = append(rep.Plan.Models, ModelPlan{Model: fmt.Sprintf("model-%04d", i), Running: 3, Waiting: 40,
			Why: "waiting for a slot: limit reached"})
	}
	rep.Plan.Models = append(rep.Plan.Models, ModelPlan{Model: "idle"}) // nothing to say: not logged
	lines := rep.Lines(LogModelsPerLine)
	if len(lines) != 10 {
		t.Fatalf("got %d lines, want 10 of 200 models", len(lines))
	}
	seen := map[string]int{}
	for i, v := range lines {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("pass", "pass", v)
		if buf.Len() > 256*1024 {
			t.Errorf("line %d is %d bytes, past CloudWatch Logs' 256 KB", i, buf.Len())
		}
		var rec struct {
			Pass map[string]json.RawMessage `json:"pass"`
		}
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if _, ok := rec.Pass["claimed"]; ok != (i == 0) {
			t.Errorf("line %d: summary present %v, want it on the first line only", i, ok)
		}
		if got := string(rec.Pass["part"]); got != fmt.Sprintf("%q", fmt.Sprintf("%d/10", i+1)) {
			t.Errorf("line %d: part %s", i, got)
		}
		for k := range rec.Pass {
			if len(k) > 6 && k[:6] == "model-" || k == "idle" {
				seen[k]++
			}
		}
	}
	if len(seen) != 2000 || seen["idle"] != 0 {
		t.Errorf("got %d models over the lines (idle %d), want the 2,000 busy ones", len(seen), seen["idle"])
	}
	for m, n := range seen {
		if n != 1 {
			t.Errorf("model %s in %d lines", m, n)
		}
	}
	// Few models: one line, as before.
	rep.Plan.Models = rep.Plan.Models[:3]
	if got := len(rep.Lines(LogModelsPerLine)); got != 1 {
		t.Errorf("3 models: %d lines, want 1", got)
	}
}

// Beside the EMF (which carries a busy model's values), a model's group
// keeps only why its jobs wait and a breaker not closed; an idle model
// whose limit moved (no EMF line) keeps its whole group.
func TestLinesBesideMetricsCarryOnlyWhatTheEMFLacks(t *testing.T) {
	rep := Report{At: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Claimed: 2}
	rep.Plan.Models = []ModelPlan{
		{Model: "waits", Running: 3, Waiting: 40, Why: "waiting for a slot: limit reached"},
		{Model: "tripped", Running: 1, Breaker: breaker.Decision{State: breaker.State{Phase: breaker.Open}}},
		{Model: "quiet", Running: 2, Breaker: breaker.Decision{State: breaker.State{Phase: breaker.Closed}}},
		{Model: "lowered", Limit: limits.Decision{Action: limits.Lowered, Reason: "depth high"}},
		{Model: "idle"},
	}
	lines := rep.LinesBesideMetrics(LogModelsPerLine)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("pass", "pass", lines[0])
	var rec struct {
		Pass map[string]json.RawMessage `json:"pass"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"waits":   `{"why_waiting":"waiting for a slot: limit reached"}`,
		"tripped": `{"breaker":"OPEN"}`,
	}
	for m, w := range want {
		if got := string(rec.Pass[m]); got != w {
			t.Errorf("%s: got %s, want %s", m, got, w)
		}
	}
	for _, m := range []string{"quiet", "idle"} {
		if got, ok := rec.Pass[m]; ok {
			t.Errorf("%s: got %s, want no group (nothing the EMF lacks)", m, got)
		}
	}
	var lowered map[string]any
	if err := json.Unmarshal(rec.Pass["lowered"], &lowered); err != nil || lowered["limit_reason"] != "depth high" || lowered["running"] != 0.0 {
		t.Errorf("lowered: got %s, want its whole group (an idle model has no EMF line)", rec.Pass["lowered"])
	}
	if string(rec.Pass["claimed"]) != "2" {
		t.Errorf("summary: claimed %s, want 2", rec.Pass["claimed"])
	}
}
