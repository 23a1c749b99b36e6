package emf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestWrite(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 10, 0, time.UTC)
	rep := scheduler.Report{At: at, Duration: 1200 * time.Millisecond, Claimed: 5, Launched: 4, Retried: 1,
		Plan: scheduler.Plan{Models: []scheduler.ModelPlan{
			{Model: "gpt-5.5", Running: 900, Starting: 40, Waiting: 812, Admitted: 5, ByTier: []int{4, 1, 0},
				Depth: scheduler.Depth{Value: 3, At: at.Add(-20 * time.Second)},
				State: scheduler.ModelState{Limit: limits.State{Limit: 1000}, Breaker: breaker.State{Phase: breaker.Open}},
				Limit: limits.Decision{Reason: "raise ×1.5"}},
			{Model: "idle"},
		}}}
	var buf bytes.Buffer
	if err := Write(&buf, "evalsched", rep); err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var d map[string]any
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want the pass and gpt-5.5 (idle has no work)", len(docs))
	}
	if docs[0]["PassDuration"] != 1200.0 || docs[0]["LaunchRetried"] != 1.0 {
		t.Errorf("pass document: got %v", docs[0])
	}
	m := docs[1]
	for k, want := range map[string]any{"Model": "gpt-5.5", "JobLimit": 1000.0, "GatewayDepth": 3.0, "Waiting": 812.0,
		"AdmittedTier0": 4.0, "BreakerOpen": 1.0, "LimitReason": "raise ×1.5"} {
		if m[k] != want {
			t.Errorf("%s: got %v, want %v", k, m[k], want)
		}
	}
	aws := m["_aws"].(map[string]any)
	dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if aws["Timestamp"] != float64(at.UnixMilli()) || dir["Namespace"] != "evalsched" {
		t.Errorf("got metadata %v", aws)
	}
	// Every metric the directive names has a value in the document.
	for _, x := range dir["Metrics"].([]any) {
		name := x.(map[string]any)["Name"].(string)
		if _, ok := m[name]; !ok {
			t.Errorf("metric %s has no value", name)
		}
	}
}
