package emf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
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
	if err := WriteShard(&buf, "evalsched", 0, Full, rep); err != nil {
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
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want the pass, the totals and gpt-5.5 (idle has no work)", len(docs))
	}
	if docs[0]["PassDuration"] != 1200.0 || docs[0]["LaunchRetried"] != 1.0 {
		t.Errorf("pass document: got %v", docs[0])
	}
	if tot := docs[1]; tot["Starting"] != 40.0 || tot["AdmittedTier0"] != 4.0 || tot["AdmittedTier1"] != 1.0 || dimensions(t, tot) != `[[]]` {
		t.Errorf("totals document: got %v, want Starting 40, AdmittedTier0 4, AdmittedTier1 1, without a dimension", tot)
	}
	m := docs[2]
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

// decodeAll reads EMF documents, one JSON object a line.
func decodeAll(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var docs []map[string]any
	sc := bufio.NewScanner(buf)
	for sc.Scan() {
		var d map[string]any
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		docs = append(docs, d)
	}
	return docs
}

// dimensions returns a document's dimension sets as JSON, e.g. [[],["Shard"]].
func dimensions(t *testing.T, d map[string]any) string {
	t.Helper()
	dir := d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	b, err := json.Marshal(dir["Dimensions"])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A shard's pass metrics go out without a dimension (what the dashboard and
// the alarms read) and per shard; its model metrics keep dimension Model
// alone, the schema the dashboard's SEARCH expressions match.
func TestWriteShard(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 10, 0, time.UTC)
	rep := scheduler.Report{At: at, Duration: time.Second, Plan: scheduler.Plan{Models: []scheduler.ModelPlan{
		{Model: "gpt-5.5", Running: 3, Waiting: 2},
	}}}
	var buf bytes.Buffer
	if err := WriteShard(&buf, "evalsched", 2, Full, rep); err != nil {
		t.Fatal(err)
	}
	docs := decodeAll(t, &buf)
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want the pass, the totals and gpt-5.5", len(docs))
	}
	if got := dimensions(t, docs[0]); got != `[[],["Shard"]]` || docs[0]["Shard"] != "2" {
		t.Errorf("pass document: got dimensions %s, Shard %v; want [[],[\"Shard\"]] and \"2\"", got, docs[0]["Shard"])
	}
	if got := dimensions(t, docs[2]); got != `[["Model"]]` || docs[2]["Shard"] != "2" || docs[2]["Model"] != "gpt-5.5" {
		t.Errorf("model document: got dimensions %s, Shard %v, Model %v; want [[\"Model\"]], \"2\", gpt-5.5", got, docs[2]["Shard"], docs[2]["Model"])
	}
}

func TestWriteValuesWithoutDimensions(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if err := WriteValues(&buf, "evalsched", at, nil, nil, map[string]float64{"IntakeRejected": 1}); err != nil {
		t.Fatal(err)
	}
	if got := dimensions(t, decodeAll(t, &buf)[0]); got != `[[]]` {
		t.Errorf("got dimensions %s, want [[]] (one set without a dimension)", got)
	}
}

// At Essential a model publishes the four metrics the alarms and the
// dashboard read by model; its other values stay in the document as
// properties, for Logs Insights.
func TestWriteEssential(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 10, 0, time.UTC)
	rep := scheduler.Report{At: at, Plan: scheduler.Plan{Models: []scheduler.ModelPlan{{
		Model: "gpt-5.5", Running: 900, Starting: 40, Waiting: 812, Admitted: 5, ByTier: []int{4, 1},
		Depth: scheduler.Depth{Value: 3, At: at}, State: scheduler.ModelState{Limit: limits.State{Limit: 1000}},
	}}}}
	var buf bytes.Buffer
	if err := WriteShard(&buf, "evalsched", 0, Essential, rep); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	var m map[string]any
	if err := json.Unmarshal(lines[len(lines)-1], &m); err != nil {
		t.Fatal(err)
	}
	dir := m["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	var names []string
	for _, x := range dir["Metrics"].([]any) {
		names = append(names, x.(map[string]any)["Name"].(string))
	}
	if want := []string{"BreakerOpen", "JobLimit", "Running", "Waiting"}; !slices.Equal(names, want) {
		t.Errorf("metrics %v, want %v", names, want)
	}
	for k, want := range map[string]any{"Starting": 40.0, "Admitted": 5.0, "AdmittedTier0": 4.0, "GatewayDepth": 3.0, "Model": "gpt-5.5"} {
		if m[k] != want {
			t.Errorf("property %s: got %v, want %v", k, m[k], want)
		}
	}
}

// Properties go in the document, not in the dimension set.
func TestWriteValuesWithProperties(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2026, 11, 29, 12, 0, 10, 0, time.UTC)
	if err := WriteValues(&buf, "evalsched", at, nil, map[string]string{"Model": "gpt-5.5"}, map[string]float64{"JobRunSeconds": 30}); err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(buf.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	dims := d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"].([]any)
	if d["Model"] != "gpt-5.5" || len(dims) != 1 || len(dims[0].([]any)) != 0 {
		t.Errorf("got Model %v and dimensions %v, want the property and the empty set", d["Model"], dims)
	}
}

// TestLeanDeclaresNoPerModelMetric: at Lean a busy model's values are one
// plain JSON line (no _aws: no custom metric), the same fields as before
// with Model, LimitReason and Shard; the account's totals, a metric
// document, count the running, waiting and the open breakers.
func TestLeanDeclaresNoPerModelMetric(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	models := []scheduler.ModelPlan{
		{Model: "a", Running: 3, Waiting: 5, Depth: scheduler.Depth{Value: 2, At: at}},
		{Model: "b", Running: 1, Starting: 2},
	}
	models[1].State.Breaker.Phase = breaker.Open
	var buf bytes.Buffer
	if err := WriteShard(&buf, "ns", 0, Lean, scheduler.Report{At: at, Plan: scheduler.Plan{Models: models}}); err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, d)
	}
	if len(lines) != 4 {
		t.Fatalf("got %d documents, want 4 (pass, totals, a, b)", len(lines))
	}
	totals := lines[1]
	if totals["Running"] != 4.0 || totals["Waiting"] != 5.0 || totals["Starting"] != 2.0 || totals["BreakersOpen"] != 1.0 || totals["_aws"] == nil {
		t.Errorf("totals: %v; want Running 4, Waiting 5, Starting 2, BreakersOpen 1 as metrics", totals)
	}
	for _, d := range lines[2:] {
		if _, ok := d["_aws"]; ok {
			t.Errorf("model %v: has _aws, want a plain line (no custom metric)", d["Model"])
		}
	}
	if a := lines[2]; a["Model"] != "a" || a["JobLimit"] == nil || a["GatewayDepth"] != 2.0 || a["Waiting"] != 5.0 {
		t.Errorf("model a's line: %v; want its values", a)
	}
	if b := lines[3]; b["BreakerOpen"] != 1.0 {
		t.Errorf("model b's line: %v; want BreakerOpen 1", b)
	}
}
