package sim

import (
	"reflect"
	"slices"
	"testing"

	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/sim/scenario/scenariotest"
)

// TestTwinOf: the twin loses the drop and its recovery and nothing else
// (the other model's rise stays), the input is not changed, and the drop
// is seen a metric delay and a period (here the pass interval, over the
// 1-s default depth period) after it.
func TestTwinOf(t *testing.T) {
	pc := func(n int) *int { return &n }
	sc := scenariotest.Tiny(10, func(sc *scenario.Scenario) {
		sc.MetricDelayS, sc.DepthPeriodS = 30, 0
		m := sc.Models[0]
		m.ProviderConcurrency = 100
		m.Changes = []scenario.Change{{AtS: 1000, ProviderConcurrency: pc(40)}, {AtS: 2000, ProviderConcurrency: pc(100)}}
		rise := m
		rise.Name, rise.ProviderConcurrency = "r", 50
		rise.Changes = []scenario.Change{{AtS: 1500, ProviderConcurrency: pc(120)}}
		sc.Models = []scenario.Model{m, rise}
	})
	before := slices.Clone(sc.Models[0].Changes)
	tw, drops := twinOf(sc)
	want := []Drop{{Model: 0, AtS: 1000, SeenAtS: 1000 + 30 + 10, RecoverAtS: 2000}}
	if !reflect.DeepEqual(drops, want) {
		t.Errorf("drops = %+v, want %+v", drops, want)
	}
	if len(tw.Models[0].Changes) != 0 {
		t.Errorf("the twin's dropped model keeps changes %+v, want none", tw.Models[0].Changes)
	}
	if c := tw.Models[1].Changes; len(c) != 1 || c[0].AtS != 1500 || *c[0].ProviderConcurrency != 120 {
		t.Errorf("the twin's other model has changes %+v, want its rise at 1500 s", c)
	}
	if tw.Name != "tiny-twin" || sc.Name != "tiny" {
		t.Errorf("names: twin %q, lane %q", tw.Name, sc.Name)
	}
	if !reflect.DeepEqual(sc.Models[0].Changes, before) || len(sc.Models[1].Changes) != 1 {
		t.Errorf("twinOf changed its input: %+v", sc.Models)
	}
	sc.DepthPeriodS = 60 // a period longer than the pass interval counts whole
	if _, d := twinOf(sc); d[0].SeenAtS != 1000+30+60 {
		t.Errorf("seen at %g s with a 60-s period, want %d", d[0].SeenAtS, 1000+30+60)
	}
}

// TestCapSteps: a step lowering a model's cap from 40 to 10 while its 40
// first tasks start. With Yield, 30 of them stop at once (the newest),
// never more than 10 run from then on, and the stopped jobs launch again,
// oldest first, before any job never launched; without, the 40 run.
func TestCapSteps(t *testing.T) {
	sc := scenariotest.Tiny(200, func(sc *scenario.Scenario) {
		sc.DurationS, sc.GlobalMaxRunning = 2000, 100
		sc.ContainerStartS = scenario.FixedDist(60)
		sc.Models[0].ProviderConcurrency = 100
	})
	for _, yield := range []bool{true, false} {
		e, r, err := simulate(sc, Static, Options{Trace: true, StaticCaps: []int{40}, CapSteps: []CapStep{{AtS: 30, Caps: []int{10}, Yield: yield}}})
		if err != nil {
			t.Fatal(err)
		}
		invariants(t, r)
		s := r.Series
		most := 0
		for k, at := range s.T {
			want := 40
			if at >= 30 {
				want = 10
				most = max(most, s.Running[0][k])
			}
			if s.Limit[0][k] != want {
				t.Fatalf("yield %v: pass at %d s has limit %d, want %d", yield, at, s.Limit[0][k], want)
			}
		}
		if yield {
			if most > 10 || r.Totals.Yielded != 30 || r.Totals.Succeeded != 200 {
				t.Errorf("with yield: at most %d running after the step, %d yielded, %d succeeded; want ≤ 10, 30, 200", most, r.Totals.Yielded, r.Totals.Succeeded)
			}
			for j := range 40 {
				if a := e.jobs[j].attempt; (j >= 10) != (a == 2) {
					t.Errorf("job %d ran attempt %d, want 1 for the 10 oldest, 2 for the 30 yielded", j, a)
				}
			}
			if last, first := e.jobs[39].runAt, e.jobs[40].runAt; last > first {
				t.Errorf("yielded job 39 ran at %v, after job 40 (never yielded) at %v: want the yielded first", last, first)
			}
			if a, b := e.jobs[10].runAt, e.jobs[39].runAt; a >= b {
				t.Errorf("yielded job 10 ran at %v, job 39 at %v: want the yielded oldest first", a, b)
			}
		} else if most != 40 || r.Totals.Yielded != 0 {
			t.Errorf("without yield: at most %d running after the step, %d yielded; want the 40 started, none", most, r.Totals.Yielded)
		}
	}
	if _, err := runPolicy(sc, Static, Options{CapSteps: []CapStep{{AtS: 30, Caps: []int{1, 2}}}}); err == nil {
		t.Error("a step with 2 caps for 1 model ran, want an error")
	}
}

// TestCapStepsMerge: two dropped models' events merge into cumulative
// steps in time order.
func TestCapStepsMerge(t *testing.T) {
	base := []int{100, 10, 50}
	drops := []Drop{{Model: 0}, {Model: 2}}
	got := capSteps(base, drops, 0.5, []twinEvent{
		{at: 300, model: 2, f: 0.1, yield: true},
		{at: 200, model: 0, f: 0.2, yield: true},
		{at: 400, model: 0, f: 1},
	})
	want := []CapStep{
		{AtS: 200, Caps: []int{20, 10, 25}, Yield: true},
		{AtS: 300, Caps: []int{20, 10, 5}, Yield: true},
		{AtS: 400, Caps: []int{100, 10, 5}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps = %+v, want %+v", got, want)
	}
}

// TestTwinBound on lane 173 of family seed 1: one model, a provider of 10
// dropping to 3 at 1,503 s and recovering at 3,021 s, 147 jobs: a lane
// with a drop cheap enough to sweep in under a second.
func TestTwinBound(t *testing.T) {
	sc := scenario.FamilyLane(1, 173)
	if len(sc.Models) != 1 {
		t.Fatalf("lane 173 has %d models; the family changed, pick another lane", len(sc.Models))
	}
	r, err := TwinBound(sc, 173)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Drops) != 1 || r.Drops[0].RecoverAtS == 0 || len(r.Rows) != len(twinPreDrop) {
		t.Fatalf("drops %+v, %d rows; want one drop with a recovery, %d rows", r.Drops, len(r.Rows), len(twinPreDrop))
	}
	for k, row := range r.Rows {
		if row.PreDrop != twinPreDrop[k] {
			t.Errorf("row %d is ×%g, want ×%g (f1 order)", k, row.PreDrop, twinPreDrop[k])
		}
	}
	// At ×1, with a step to the same caps, the twin runs the twin oracle's
	// own run.
	if last := r.Rows[len(r.Rows)-1]; last.TwinThroughput != 1 {
		t.Errorf("the twin at ×1 finished %g × the twin oracle's jobs, want exactly 1", last.TwinThroughput)
	}
	// The bound is the lowest blocked share of the rows that keep both
	// throughputs: the ×1 row keeps the twin's, so there is one.
	eligible := func(row TwinRow) bool {
		return row.TwinThroughput >= laneMinThroughput && row.LaneThroughputOK
	}
	if !eligible(r.Rows[len(r.Rows)-1]) || r.Best < 0 {
		t.Fatalf("best %g; the ×1 row %+v should keep both throughputs", r.Best, r.Rows[len(r.Rows)-1])
	}
	for _, row := range r.Rows {
		if eligible(row) && row.LaneBlocked < r.Best {
			t.Errorf("row ×%g blocks %g, below the bound %g", row.PreDrop, row.LaneBlocked, r.Best)
		}
	}
	if !slices.ContainsFunc(r.Rows, func(row TwinRow) bool { return eligible(row) && row.PreDrop == r.BestPre && row.LaneBlocked == r.Best }) {
		t.Errorf("best %g at ×%g is no eligible row's", r.Best, r.BestPre)
	}
	if r.Meets != (r.Best <= laneMaxBlocked) {
		t.Errorf("meets %v with best %g", r.Meets, r.Best)
	}
	none, err := TwinBound(scenariotest.Tiny(2), 0)
	if err != nil || len(none.Drops) != 0 || len(none.Rows) != 0 || none.Best != -1 || none.Meets {
		t.Errorf("a lane without a drop: %+v, %v; want no drops, no rows, best -1", none, err)
	}
}
