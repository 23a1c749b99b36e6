package sim

import (
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// TestOracleAtDynamicsBar: the lane's oracle is the most work among the
// caps blocking at most dynamic's own share, or 0.05 when dynamic blocked
// less; a cap that did more work by blocking more than dynamic is no bar.
func TestOracleAtDynamicsBar(t *testing.T) {
	p := func(work, blocked float64) sweep {
		return sweep{Caps: []int{int(work)}, Work: work, BlockedShare: blocked}
	}
	o := laneOracle{Points: []sweep{p(800, 0.01), p(900, 0.05), p(950, 0.07), p(1000, 0.10), p(1100, 0.2)}}
	for _, c := range []struct {
		dyn     float64
		want    float64
		wantBar float64
	}{
		{0.00, 900, 0.05},  // dynamic blocked nothing: the floor, 0.05
		{0.03, 900, 0.05},  // … and below it
		{0.07, 950, 0.07},  // dynamic's own share
		{0.10, 1000, 0.10}, // the old bar
		{0.30, 1100, 0.30}, // past every point: the most work
	} {
		got, bar := laneOracleAt(o, c.dyn)
		if got.Work != c.want || bar != c.wantBar {
			t.Errorf("dynamic blocked %.2f: oracle %.0f at bar %.2f, want %.0f at %.2f", c.dyn, got.Work, bar, c.want, c.wantBar)
		}
	}
	// The old judge's oracle: most succeeded jobs within 0.10.
	o.Points = append(o.Points, sweep{Caps: []int{7}, Succeeded: 990, Work: 990, BlockedShare: 0.09})
	o.Points[3].Succeeded = 900
	if k := pick(o.Points); o.Points[k].Succeeded != 990 {
		t.Errorf("old oracle %+v, want the 990 jobs within 0.10", o.Points[k])
	}
}

// TestJudgeHoldsDynamicToItsBar: a lane passes on work against the oracle
// at its own bar and still needs blocked ≤ 0.10; the old judge is reported
// beside it.
func TestJudgeHoldsDynamicToItsBar(t *testing.T) {
	lane := LaneResult{MaxBlocked: laneMaxBlocked, Blocked: 0.04, Throughput: 0.96, OldThroughput: 0.90}
	if ok, why := lane.judge(); !ok {
		t.Errorf("new judge: %s", why)
	}
	if ok, _ := lane.oldJudge(); ok {
		t.Error("old judge passed a lane at 0.90 × its oracle")
	}
	lane.Blocked = 0.101
	if ok, _ := lane.judge(); ok {
		t.Error("blocked 0.101 met, want dynamic kept to 0.10")
	}
}

// TestDropLaneBars: a drop lane's blocked bar is max(0.10, twin + 0.03)
// and its family max max(0.25, twin + 0.05); the summary counts a lane
// over its own max, not over 0.25.
func TestDropLaneBars(t *testing.T) {
	for _, c := range []struct{ twin, lane, family float64 }{
		{0.02, 0.10, 0.25},
		{0.12, 0.15, 0.25},
		{0.24, 0.27, 0.29},
		{-1, 0.10, 0.25},
	} {
		if l, f := dropBars(c.twin); l != c.lane || f != c.family {
			t.Errorf("twin %.2f: bars %.3f, %.3f; want %.3f, %.3f", c.twin, l, f, c.lane, c.family)
		}
	}
	l, f := dropBars(0.24)
	drop := LaneResult{Lane: 1, Drop: true, DropKnee: true, TwinBest: 0.24, MaxBlocked: l, FamilyMax: f, Blocked: 0.26, Throughput: 0.96}
	if ok, why := drop.judge(); !ok {
		t.Errorf("drop lane at 0.26 under its bar 0.27: %s", why)
	}
	drop.DropKnee, drop.DropNote = false, "limit 90 > dropped knee 40"
	if ok, why := drop.judge(); ok || !strings.Contains(why, "dropped knee") {
		t.Errorf("drop lane that missed its knee: meets %v (%s)", ok, why)
	}
	drop.DropKnee = true
	plain := LaneResult{Lane: 0, MaxBlocked: laneMaxBlocked, FamilyMax: FamilyMaxBlocked, Blocked: 0.01, Throughput: 1}
	lanes := []LaneResult{plain, plain, plain, drop}
	for i := range lanes {
		lanes[i].Meets, _ = lanes[i].judge()
	}
	if s := Summarize(1, lanes); !s.Pass || s.OverMax != 0 || s.MaxBlock != 0.26 || s.DropLanes != 1 || s.DropMeet != 1 || s.OldPass {
		t.Errorf("a drop lane at 0.26 within its max 0.29: %+v (want pass; the old judge's max 0.25 fails)", s)
	}
	lanes[3].Blocked = 0.30
	if s := Summarize(1, lanes); s.Pass || s.OverMax != 1 {
		t.Errorf("a drop lane at 0.30 over its max 0.29: %+v", s)
	}
}

// TestDropKneeMet: from the first pass that can see the drop, the limit
// must be at or below the dropped knee within two passes, and no task
// still starting beyond the knee left by the pass after.
func TestDropKneeMet(t *testing.T) {
	sc := scenario.FamilyLane(1, 3)
	sc.Models = sc.Models[:1]
	knee := scenario.BusyCap(sc, 0, 10)*105/100 + 1 // ceil(busy × 1.05), at most
	d := []Drop{{Model: 0, AtS: 100, SeenAtS: 125}}
	series := func(limits, running, holding []int) *Series {
		n := len(limits)
		s := &Series{T: make([]int, n), Limit: [][]int{limits}, Running: [][]int{running}, Holding: [][]int{holding}, Capacity: [][]int{make([]int, n)}}
		for k := range n {
			s.T[k] = 100 + 10*k
			s.Capacity[0][k] = 10
		}
		return s
	}
	big := 10 * knee
	// Passes at 100..160 s; the first that can see the drop is 130 s (k=3).
	ok, why := dropKneeMet(sc, series(
		[]int{big, big, big, big, knee - 1, knee - 1, knee - 1},
		[]int{big, big, big, big, big, knee / 2, knee / 2},
		[]int{big, big, big, big, big, knee / 2, knee / 2}), d)
	if !ok {
		t.Errorf("limit at the knee the second pass, nothing starting: %s", why)
	}
	if ok, why := dropKneeMet(sc, series(
		[]int{big, big, big, big, big, knee - 1, knee - 1},
		[]int{big, big, big, big, big, knee / 2, knee / 2},
		[]int{big, big, big, big, big, knee / 2, knee / 2}), d); ok || !strings.Contains(why, "dropped knee") {
		t.Errorf("limit at the knee only the third pass: met %v (%s)", ok, why)
	}
	if ok, why := dropKneeMet(sc, series(
		[]int{big, big, big, knee, knee, knee, knee},
		[]int{big, big, big, big, big, knee / 2, knee / 2},
		[]int{big, big, big, big, big, knee/2 + knee, knee / 2}), d); ok || !strings.Contains(why, "starting beyond") {
		t.Errorf("tasks still starting beyond the knee: met %v (%s)", ok, why)
	}
	// Starting within the knee's room is no miss.
	if ok, why := dropKneeMet(sc, series(
		[]int{big, big, big, knee, knee, knee, knee},
		[]int{big, big, big, big, big, knee / 2, knee / 2},
		[]int{big, big, big, big, big, knee/2 + 1, knee / 2}), d); !ok {
		t.Errorf("one task starting below the knee: %s", why)
	}
}

// TestWorkCountsRunningJobsShare: a run cut short counts its succeeded
// jobs and, for each job still running, the share of its calls made;
// failed jobs count for nothing.
func TestWorkCountsRunningJobsShare(t *testing.T) {
	sc := scenario.FamilyLane(1, 3)
	sc.DurationS = 600
	r, err := runPolicy(sc, Dynamic, Options{})
	if err != nil {
		t.Fatal(err)
	}
	succ, running := float64(r.Totals.Succeeded), r.Totals.Running
	if running == 0 {
		t.Fatal("no job runs at the end: the test needs a run cut short")
	}
	if r.Work <= succ || r.Work >= succ+float64(running) {
		t.Errorf("work %.2f: want more than the %v succeeded jobs and less than those plus every one of the %d jobs still holding a slot", r.Work, succ, running)
	}
}

// TestAWarmLaneStartsWithWhatTheFirstRunLearned: a lane's dynamic run
// reports the concurrency it learned, and a run started with it keeps it
// from the first pass (the model state kept from one run to the next):
// its first raise goes to the knee, where the cold run ramps ×4 a step.
func TestAWarmLaneStartsWithWhatTheFirstRunLearned(t *testing.T) {
	sc := scenario.FamilyLane(1, 3)
	cold, err := runPolicy(sc, Dynamic, Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := sc.Models[0].Name
	if cold.Learned[name] <= 0 {
		t.Fatalf("the cold run learned %v, want the provider's concurrency of %s", cold.Learned, name)
	}
	warm, err := runPolicy(sc, Dynamic, Options{Learned: cold.Learned})
	if err != nil {
		t.Fatal(err)
	}
	if laneBlocked(warm) >= laneBlocked(cold) {
		t.Errorf("warm blocked %.3f, cold %.3f: want the learned knee to spare the first overshoot", laneBlocked(warm), laneBlocked(cold))
	}
}
