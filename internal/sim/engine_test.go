package sim

import (
	"math"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/sim/scenario/scenariotest"
)

// tiny is the hand-checkable one-model scenario (scenariotest.Tiny).
var tiny = scenariotest.Tiny

// eachPolicy runs the scenario under every policy; with fixed draws and
// enough room they must all agree with the hand numbers.
func eachPolicy(t *testing.T, sc *scenario.Scenario, check func(t *testing.T, e *engine, r *Result)) {
	t.Helper()
	for _, p := range policies {
		t.Run(string(p), func(t *testing.T) {
			e, r, err := simulate(sc, p, Options{Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			check(t, e, r)
			invariants(t, r)
		})
	}
}

// invariants hold for every run: no job lost or launched twice, the store
// consistent after every pass, the totals adding up.
func invariants(t *testing.T, r *Result) {
	t.Helper()
	tt := r.Totals
	if tt.Lost != 0 || tt.DoubleLaunched != 0 || r.CheckViolations != 0 || r.PassErrors != 0 || len(r.Violations) != 0 {
		t.Errorf("%s: lost %d, double launched %d, check violations %d, pass errors %d, violations %q; want none",
			r.Policy, tt.Lost, tt.DoubleLaunched, r.CheckViolations, r.PassErrors, r.Violations)
	}
	if sum := tt.Succeeded + tt.Failed + tt.Cancelled + tt.Waiting + tt.Running + tt.Lost; sum != tt.Submitted {
		t.Errorf("%s: states add up to %d, submitted %d", r.Policy, sum, tt.Submitted)
	}
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-3 }

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Two jobs, one provider slot: both start at 5, one call waits 10 s for
// the other. Blocked 10 s of 30 s running.
func TestOneBlocked(t *testing.T) {
	eachPolicy(t, tiny(2), func(t *testing.T, e *engine, r *Result) {
		m := r.Models["m"]
		b := r.Batches["a/p/b"]
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"succeeded", float64(m.Succeeded), 2},
			{"blocked_share", m.BlockedShare, 10.0 / 30},
			{"backlog_s", m.BacklogS, 0}, // admitted at the pass at 0
			{"backlog_utilization", m.BacklogUtilization, 0},
			{"throughput_per_h", m.ThroughputPerH, 72},
			{"mean_depth", m.MeanDepth, 0.1}, // depth 1 during seconds 5..14 of 100
			{"p90_depth", m.P90Depth, 0},
			{"first_admit_s", val(b.FirstAdmitS), 0},
			{"first_start_s", val(b.FirstStartS), 5},
			{"last_end_s", val(b.LastEndS), 25},
			// Blocked time is waiting: job 1 waits 5 of 15 s, job 2 5 s
			// to start and 10 s blocked of 25 s.
			{"wait p50", val(r.WaitShare.P50), 5.0 / 15},
			{"wait p90", val(r.WaitShare.P90), 15.0 / 25},
			{"tier 2 starts", float64(r.Tiers["2"].Starts), 2},
			{"launches", float64(r.Totals.Launches), 2},
		} {
			if !near(c.got, c.want) {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
	})
}

// The global cap of 1 holds the second job back until the first ended (15 s)
// and a pass saw it (20 s): 20 s of backlog, 10 of them with the provider
// busy.
func TestBacklogUtilization(t *testing.T) {
	sc := tiny(2, func(sc *scenario.Scenario) { sc.GlobalMaxRunning = 1 })
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		m := r.Models["m"]
		b := r.Batches["a/p/b"]
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"backlog_s", m.BacklogS, 20},
			{"backlog_utilization", m.BacklogUtilization, 0.5},
			{"blocked_share", m.BlockedShare, 0},
			{"last_end_s", val(b.LastEndS), 35},
			{"wait p50", val(r.WaitShare.P50), 5.0 / 15},
			{"wait p90", val(r.WaitShare.P90), 25.0 / 35},
		} {
			if !near(c.got, c.want) {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		if e.peak != 1 {
			t.Errorf("peak tasks holding a slot = %d, want 1 (global cap)", e.peak)
		}
	})
}

// Launches are paced by the bucket: burst 2, then one a second.
func TestLaunchPacing(t *testing.T) {
	sc := tiny(5, func(sc *scenario.Scenario) {
		sc.LaunchRatePerS, sc.LaunchBurst = 1, 2
		sc.Models[0].ProviderConcurrency = 100
	})
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		want := []float64{0, 0, 1, 2, 3}
		for k, w := range want {
			if got := e.jobs[k].admitAt.Seconds(); got != w {
				t.Errorf("job %d: RunTask at %v s, want %v", k, got, w)
			}
		}
	})
}

// Over a pass interval the bucket gives burst + rate·interval tokens at most;
// the rest waits for the next pass.
func TestLaunchBudgetPerPass(t *testing.T) {
	sc := tiny(40, func(sc *scenario.Scenario) {
		sc.LaunchRatePerS, sc.LaunchBurst = 1, 5
		sc.GlobalMaxRunning = 100
		sc.Models[0].ProviderConcurrency = 100
		sc.Models[0].StaticCap = 100
		sc.Models[0].InitialLimit = 100
	})
	for _, p := range []Policy{Static, Unbounded} { // dynamic also caps at MaxLaunchesPerPass
		e, r, err := simulate(sc, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Tokens at 0 (×5), 1, …, 9 in the first pass: 14 launches before 10 s.
		n := 0
		for k := range e.jobs {
			if e.jobs[k].state != jobWaiting && e.jobs[k].admitAt < 10*time.Second {
				n++
			}
		}
		if n != 14 {
			t.Errorf("%s: %d launches in the first pass interval, want 14", p, n)
		}
		invariants(t, r)
	}
}

// Depth seen by a pass is the sample metric_delay_s old: none before 20 s.
func TestDepthDelay(t *testing.T) {
	sc := tiny(3, func(sc *scenario.Scenario) {
		sc.ContainerStartS = scenario.FixedDist(0)
		sc.Models[0].CallS = scenario.FixedDist(100)
		sc.DurationS = 40
	})
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		ps := r.Models["m"].Passes
		if len(ps) != 4 {
			t.Fatalf("%d passes, want 4", len(ps))
		}
		// Pass 0 and 10: no datapoint yet. Pass 20 reads second 0, when two
		// of the three calls were queued already (containers start at once).
		for k, want := range []float64{math.NaN(), math.NaN(), 2, 2} {
			got := ps[k].Depth
			if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && got != want) {
				t.Errorf("pass at %d s saw depth %v, want %v", ps[k].T, got, want)
			}
		}
		if ps[1].Running != 3 || ps[0].Waiting != 3 {
			t.Errorf("pass trace %+v, want 3 waiting at 0 s and 3 running at 10 s", ps[:2])
		}
	})
}

// A provider that fails every call: each job's task exits with provider
// errors after error_call_s, the job waits again for its next attempt, and
// fails at its third; the provider capacity change is applied.
func TestProviderErrors(t *testing.T) {
	rate, call, conc := 1.0, 0.5, 3
	sc := tiny(4, func(sc *scenario.Scenario) {
		sc.Models[0].Changes = []scenario.Change{{AtS: 0, ErrorRate: &rate, ErrorCallS: &call, ProviderConcurrency: &conc}}
	})
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		m := r.Models["m"]
		if m.Failed != 4 || m.Succeeded != 0 || m.ProviderRetries != 8 {
			t.Errorf("failed %d succeeded %d provider retries %d, want 4 failed after 8 retries", m.Failed, m.Succeeded, m.ProviderRetries)
		}
		if got := val(r.Batches["a/p/b"].LastEndS); got != 25.5 {
			t.Errorf("last_end_s = %v, want 25.5 (the third attempt, launched by the pass at 20 s: start 5 + failing call 0.5)", got)
		}
		if e.models[0].conc != 3 {
			t.Errorf("provider concurrency %d after the change, want 3", e.models[0].conc)
		}
	})
}

// Think time sits between calls, not after the last one.
func TestCallsAndThink(t *testing.T) {
	sc := tiny(1, func(sc *scenario.Scenario) {
		sc.Batches[0].Calls = scenario.FixedDist(3)
		sc.Batches[0].ThinkS = scenario.FixedDist(2)
	})
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		// start 5, then 10 + 2 + 10 + 2 + 10 = 34: ends at 39.
		if got := val(r.Batches["a/p/b"].LastEndS); got != 39 {
			t.Errorf("last_end_s = %v, want 39", got)
		}
		if r.Calls != 3 {
			t.Errorf("%d calls served, want 3", r.Calls)
		}
	})
}

// A pin landing at 15 s moves the next start of its batch to tier 0.
func TestPinLands(t *testing.T) {
	sc := tiny(3, func(sc *scenario.Scenario) {
		sc.GlobalMaxRunning = 1
		sc.Models[0].CallS = scenario.FixedDist(1)
		sc.Pins = []scenario.Pin{{AtS: 15, Scope: "batch#a/p/b", Tier: 0}}
	})
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		// One job at a time, each done 6 s after its pass admits it: the
		// passes at 0 and 10 admit in tier 2; the pin lands at 15, so the
		// pass at 20 admits the last job in tier 0.
		if r.Tiers["2"].Starts != 2 || r.Tiers["0"].Starts != 1 {
			t.Errorf("tier starts %v, want 2 in tier 2 and 1 in tier 0", r.Tiers)
		}
	})
}

// The k-th call of a job draws the same under every policy.
func TestDrawsIndependentOfPolicy(t *testing.T) {
	sc := tiny(50, func(sc *scenario.Scenario) {
		sc.ContainerStartS = scenario.LognormalDist(30, 60)
		sc.Batches[0].Calls = scenario.LognormalDist(5, 10)
	})
	var starts [][]time.Duration
	var calls [][]int32
	for _, p := range policies {
		e, _, err := simulate(sc, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var s []time.Duration
		var c []int32
		for _, j := range e.jobs {
			s, c = append(s, j.startDelay), append(c, j.calls)
		}
		starts, calls = append(starts, s), append(calls, c)
	}
	for i := 1; i < len(starts); i++ {
		for k := range starts[0] {
			if starts[i][k] != starts[0][k] || calls[i][k] != calls[0][k] {
				t.Fatalf("job %d: start %v/%v calls %d/%d differ between policies", k, starts[0][k], starts[i][k], calls[0][k], calls[i][k])
			}
		}
	}
}

func TestBucket(t *testing.T) {
	b := newBucket(2, 3) // a token every 0.5 s, burst 3
	var got []time.Duration
	for {
		g, ok := b.reserve(0, 2*time.Second)
		if !ok {
			break
		}
		got = append(got, g)
	}
	want := []time.Duration{0, 0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	if len(got) != len(want) {
		t.Fatalf("tokens %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("tokens %v, want %v", got, want)
		}
	}
	// At rest the bucket refills to its burst, no further.
	for i := range 3 {
		if g, _ := b.reserve(100*time.Second, 200*time.Second); g != 100*time.Second {
			t.Fatalf("token %d after rest at %v, want 100s", i, g)
		}
	}
	if g, _ := b.reserve(100*time.Second, 200*time.Second); g != 100500*time.Millisecond {
		t.Errorf("4th token after rest at %v, want 100.5s", g)
	}
}

func TestEventOrder(t *testing.T) {
	var q eventQueue
	seq := uint64(0)
	for _, at := range []time.Duration{5, 1, 5, 3, 1} {
		seq++
		q.push(event{at: at, seq: seq})
	}
	var got []uint64
	for len(q) > 0 {
		got = append(got, q.pop().seq)
	}
	want := []uint64{2, 5, 4, 1, 3} // by time, then scheduling order
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
