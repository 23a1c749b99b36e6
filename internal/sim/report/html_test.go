package report

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/sim"
	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/sim/scenario/scenariotest"
)

// svgChart is what the report test reads from each inline SVG.
type svgChart struct {
	Title string `xml:"title"`
	Scale string `xml:"data-scale,attr"`
	YMax  string `xml:"data-ymax,attr"`
	Rects []struct {
		Width  float64  `xml:"width,attr"`
		Series string   `xml:"data-series,attr"`
		Value  *float64 `xml:"data-value,attr"`
	} `xml:"rect"`
}

// reportCharts runs every policy on a scenario whose small batch waits
// behind a big one under the old caps, writes the report and parses its
// charts (no browser: the SVG is XML).
func reportCharts(t *testing.T) ([]*sim.Result, string, []svgChart) {
	t.Helper()
	sc := tiny(300, func(sc *scenario.Scenario) {
		sc.DurationS, sc.GlobalMaxRunning = 3600, 100
		sc.Models[0].ProviderConcurrency, sc.Models[0].StaticCap = 4, 3
		sc.Batches = append(sc.Batches, scenario.Batch{AtS: 60, Account: "b", Project: "q", Batch: "small", Model: "m", Jobs: 5,
			Tier: -1, Calls: scenario.FixedDist(1), ThinkS: scenario.FixedDist(0)},
			// A late batch no policy finishes: the finished sets differ.
			scenario.Batch{AtS: 3400, Account: "c", Project: "r", Batch: "late", Model: "m", Jobs: 200,
				Tier: -1, Calls: scenario.FixedDist(1), ThinkS: scenario.FixedDist(0)})
	})
	results, err := sim.RunAll(sc, sim.AllPolicies, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, results); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	var charts []svgChart
	for rest := page; ; {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		var c svgChart
		if err := xml.Unmarshal([]byte(rest[i:i+j+len("</svg>")]), &c); err != nil {
			t.Fatalf("an SVG of the report does not parse: %v", err)
		}
		charts = append(charts, c)
		rest = rest[i+j:]
	}
	return results, page, charts
}

func chartsTitled(charts []svgChart, prefix string) []svgChart {
	var out []svgChart
	for _, c := range charts {
		if strings.HasPrefix(c.Title, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// TestReportComparisonPlots: the first starts on a log axis, a chart of
// when each batch finished, one y-scale for the start plots of every
// policy, a wait share marked lower-is-better over the jobs every policy
// finished, and the oracle beside the old caps.
func TestReportComparisonPlots(t *testing.T) {
	results, page, charts := reportCharts(t)

	first := chartsTitled(charts, "First start of each batch")
	if len(first) != 1 || first[0].Scale != "log" {
		t.Fatalf("first start chart: %d found, scale %q; want one on a log axis", len(first), first[0].Scale)
	}
	lo, hi := math.Inf(1), 0.0
	var loW, hiW float64
	for _, r := range first[0].Rects {
		if r.Value == nil || *r.Value <= 0 {
			continue
		}
		if *r.Value < lo {
			lo, loW = *r.Value, r.Width
		}
		if *r.Value > hi {
			hi, hiW = *r.Value, r.Width
		}
	}
	if hi < 50*lo {
		t.Fatalf("the scenario's first starts span %g..%g s; the test needs a wide spread", lo, hi)
	}
	if want := math.Log1p(lo) / math.Log1p(hi); math.Abs(loW/hiW-want) > 0.05 || loW < 0.1*hiW {
		t.Errorf("first start %g s drawn %.1f px beside %g s at %.1f px: want log lengths (ratio %.2f), not flattened", lo, loW, hi, hiW, want)
	}

	ends := chartsTitled(charts, "Each batch finished")
	if len(ends) != 1 || ends[0].Scale != "log" {
		t.Fatalf("batch finish chart: %d found; want one on a log axis", len(ends))
	}
	bars := 0
	for _, r := range ends[0].Rects {
		if r.Series != "" {
			bars++
		}
	}
	if want := len(results[0].BatchKeys) * len(results); bars != want {
		t.Errorf("batch finish chart: %d bars, want %d (batches × policies)", bars, want)
	}

	for _, kind := range []string{"starts by tier", "starts by project"} {
		cs := chartsTitled(charts, kind)
		if len(cs) != len(results) {
			t.Fatalf("%s: %d charts, want one per policy (%d)", kind, len(cs), len(results))
		}
		for _, c := range cs[1:] {
			if c.YMax != cs[0].YMax || c.YMax == "" {
				t.Errorf("%s: y-scales %q and %q differ between policies", kind, cs[0].YMax, c.YMax)
			}
		}
	}

	ws := chartsTitled(charts, "Wait share")
	if len(ws) != 1 || !strings.Contains(ws[0].Title, "lower is better") || !strings.Contains(ws[0].Title, "every policy finished") {
		t.Fatalf("wait share chart: %+v; want one that says lower is better and over which jobs", ws)
	}
	n, p50, _ := sim.CommonWaitShare(results)
	if n == 0 || n >= len(results[0].JobWaits) {
		t.Fatalf("%d jobs finished under every policy of %d: the scenario must finish some but not all", n, len(results[0].JobWaits))
	}
	for i, r := range results {
		found := false
		for _, b := range ws[0].Rects {
			if b.Series == string(r.Policy) && b.Value != nil && p50[i] != nil && *b.Value == *p50[i] {
				found = true
			}
		}
		if !found {
			t.Errorf("wait share: no bar of %s at its p50 over the common jobs (%v)", r.Policy, *p50[i])
		}
	}

	for _, want := range []string{">oracle<", ">static<", "old hand-set caps", "best fixed caps in hindsight"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q: the oracle beside the old caps", want)
		}
	}
}

// TestCommonWaitShare: only jobs finished under every policy count.
func TestCommonWaitShare(t *testing.T) {
	nan := float32(math.NaN())
	a := &sim.Result{JobWaits: []float32{0.1, 0.2, nan, 0.9}}
	b := &sim.Result{JobWaits: []float32{0.5, nan, 0.3, 0.7}}
	n, p50, p90 := sim.CommonWaitShare([]*sim.Result{a, b})
	if n != 2 || math.Abs(*p50[0]-0.1) > 1e-6 || math.Abs(*p90[0]-0.9) > 1e-6 || math.Abs(*p50[1]-0.5) > 1e-6 {
		t.Errorf("n %d, p50 %v/%v, p90 %v; want 2 jobs (0 and 3): a 0.1/0.9, b 0.5/0.7", n, *p50[0], *p50[1], *p90[0])
	}
}

// tiny is the hand-checkable one-model scenario (scenariotest.Tiny).
var tiny = scenariotest.Tiny

// TestReportNeverIsNotTheShortestBar: a batch that never finished is drawn
// as a dashed outline past every measured bar, labelled "never", on the
// shorter-is-better charts; a model a policy never ran shows "—" on the
// per-model charts, not a 0.000 bar.
func TestReportNeverIsNotTheShortestBar(t *testing.T) {
	results, _, charts := reportCharts(t)
	ends := chartsTitled(charts, "Each batch finished")
	if len(ends) != 1 {
		t.Fatalf("%d batch finish charts", len(ends))
	}
	longest, nevers := 0.0, 0
	for _, r := range ends[0].Rects {
		if r.Value != nil {
			longest = max(longest, r.Width)
		}
	}
	for _, r := range ends[0].Rects {
		if r.Series != "" && r.Value == nil {
			nevers++
			if r.Width <= longest {
				t.Errorf("%s: a never-finished batch drawn %.1f px, not past the longest bar (%.1f px)", r.Series, r.Width, longest)
			}
		}
	}
	if nevers == 0 {
		t.Fatal("no batch went unfinished: the scenario's late batch should")
	}

	// The last policy never ran the model.
	results[len(results)-1].Models[results[0].ModelNames[0]] = &sim.ModelResult{}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, results); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	i := strings.Index(page, "<title>Blocked share")
	j := strings.Index(page[i:], "</svg>")
	var c svgChart
	if err := xml.Unmarshal([]byte(page[strings.LastIndex(page[:i], "<svg"):i+j+len("</svg>")]), &c); err != nil {
		t.Fatal(err)
	}
	last := string(results[len(results)-1].Policy)
	for _, r := range c.Rects {
		if r.Series == last && r.Value != nil {
			t.Errorf("blocked share: %s, which never ran the model, drawn as %g", last, *r.Value)
		}
	}
	if !strings.Contains(page[i:i+j], ">—<") {
		t.Error("blocked share: no \"—\" for the model a policy never ran")
	}
}
