package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// TestDepthIsThePeriodAverage: a pass reads the Average of the newest whole
// period that ended metric_delay_s ago, stamped with the period's end as
// production stamps it, not the sample of one second.
func TestDepthIsThePeriodAverage(t *testing.T) {
	sc := tiny(1, func(sc *scenario.Scenario) { sc.DepthPeriodS, sc.MetricDelayS = 10, 20 })
	e := newEngine(sc, Static)
	for s := range 60 {
		e.models[0].depth[s] = int32(s % 7) // [0, 9] sums to 24, [10, 19] to 33
	}
	e.models[0].depth[25] = 50
	e.nextSample = 60
	for _, c := range []struct {
		now, want, at float64
		ok            bool
	}{
		{now: 28, ok: false},                   // t = 8: no whole period yet
		{now: 29, want: 2.4, at: 10, ok: true}, // t = 9: period [0, 9], stamped at its end
		{now: 45, want: 3.3, at: 20, ok: true}, // t = 25: [20, 29] is not whole yet; [10, 19]
		{now: 49, want: 7.4, at: 30, ok: true}, // t = 29: period [20, 29] holds the 50 (74 in all)
	} {
		e.now = seconds(c.now)
		v, at, ok := e.depthSeen(0)
		if ok != c.ok || ok && (v != c.want || at != seconds(c.at)) {
			t.Errorf("pass at %gs: depth %g at %v (ok %v), want %g at %gs (ok %v)", c.now, v, at, ok, c.want, c.at, c.ok)
		}
	}
	sc.DepthPeriodS = 1
	e.now = seconds(45)
	if v, at, _ := e.depthSeen(0); v != 50 || at != seconds(26) {
		t.Errorf("period 1: depth %g at %v, want the sample of second 25 (50) at 26 s", v, at)
	}
}

// TestMetricMissingAndNoise: a period's datapoint goes missing at the
// configured rate and its noise is a function of the period, so two reads
// (or two policies) see the same datapoint.
func TestMetricMissingAndNoise(t *testing.T) {
	sc := tiny(1, func(sc *scenario.Scenario) {
		sc.DurationS, sc.DepthPeriodS, sc.MetricDelayS, sc.MetricMissing, sc.MetricNoise = 20000, 10, 0, 0.3, 0.2
	})
	e := newEngine(sc, Static)
	for s := range e.models[0].depth {
		e.models[0].depth[s] = 100
	}
	e.nextSample = sc.DurationS
	missing, noisy := 0, 0
	const n = 1000
	for k := range n {
		e.now = seconds(float64(10*k + 19))
		v, _, ok := e.depthSeen(0)
		v2, _, ok2 := e.depthSeen(0)
		if v != v2 || ok != ok2 {
			t.Fatalf("period %d read twice: %g/%v then %g/%v", k, v, ok, v2, ok2)
		}
		if !ok {
			missing++
			continue
		}
		if v != 100 {
			noisy++
		}
		if v < 0 || v > 300 {
			t.Errorf("period %d: depth %g from 100 with noise 0.2", k, v)
		}
		if g, gok := e.gatewayRateSeen(0); !gok || g.Calls != 0 {
			t.Errorf("period %d: the error rate's datapoint (%+v, %v) must be there when the depth's is", k, g, gok)
		}
	}
	if missing < n/5 || missing > 2*n/5 {
		t.Errorf("%d of %d periods missing, want about 30 %%", missing, n)
	}
	if noisy < (n-missing)*3/4 {
		t.Errorf("%d of %d datapoints moved by the noise", noisy, n-missing)
	}
}

// TestGatewayErrorRate: the error rate a pass reads counts the calls sent
// in its period and those answered with an error.
func TestGatewayErrorRate(t *testing.T) {
	half, call := 0.5, 1.0
	sc := tiny(2000, func(sc *scenario.Scenario) {
		sc.DurationS, sc.DepthPeriodS, sc.MetricDelayS, sc.GlobalMaxRunning = 600, 10, 20, 500
		sc.Models[0].ProviderConcurrency = 1000
		sc.Models[0].StaticCap = 500
		sc.Models[0].Changes = []scenario.Change{{AtS: 0, ErrorRate: &half, ErrorCallS: &call}}
	})
	e, _, err := simulate(sc, Static, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var calls, errs int
	for s := range e.models[0].sent {
		calls += int(e.models[0].sent[s])
		errs += int(e.models[0].errs[s])
	}
	if calls == 0 || float64(errs) < 0.4*float64(calls) || float64(errs) > 0.6*float64(calls) {
		t.Fatalf("%d errors of %d calls at error_rate 0.5", errs, calls)
	}
	e.now = seconds(60)
	g, ok := e.gatewayRateSeen(0)
	var want GatewayRate
	for s := 30; s < 40; s++ {
		want.Calls += int(e.models[0].sent[s])
		want.Errors += int(e.models[0].errs[s])
	}
	if !ok || g.Calls != want.Calls || g.Errors != want.Errors || g.Calls == 0 || !g.At.Equal(Epoch.Add(40*time.Second)) {
		t.Errorf("pass at 60 s read %+v (ok %v), want %d errors of %d calls over the period [30, 39], stamped 40 s", g, ok, want.Errors, want.Calls)
	}
	// The dynamic policy's pass reads it with the depth, as production's
	// reader does when the operator configures the error metric.
	d, err := newDynamic(e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.Breaker.GatewayThreshold <= 0 {
		t.Errorf("the simulated breaker reads no gateway rate (threshold %g)", d.cfg.Breaker.GatewayThreshold)
	}
	name := sc.Models[0].Name
	got, err := d.Depths(context.Background(), []string{name}, d.Now())
	if err != nil {
		t.Fatal(err)
	}
	if dp := got[name]; dp.ErrorRate != g.Rate() || dp.Calls != float64(g.Calls) || !dp.ErrorAt.Equal(g.At) || dp.At.IsZero() {
		t.Errorf("the pass read %+v, want the error rate %g of %d calls at %v beside the depth", dp, g.Rate(), g.Calls, g.At)
	}
}

// TestSlowUnderLoadAndRejectOver: a loaded provider stretches the calls it
// starts, and a gateway past reject_over answers 429, which fails the job
// as a provider error and counts in the error rate.
func TestSlowUnderLoadAndRejectOver(t *testing.T) {
	sc := tiny(1, func(sc *scenario.Scenario) { sc.Models[0].ProviderConcurrency, sc.Models[0].SlowUnderLoad = 4, 1 })
	e := newEngine(sc, Static)
	m := &e.models[0]
	if got := e.underLoad(m, 10*time.Second); got != 10*time.Second {
		t.Errorf("empty queue: %v, want 10s", got)
	}
	m.queue.push(0)
	m.queue.push(0)
	if got := e.underLoad(m, 10*time.Second); got != 15*time.Second {
		t.Errorf("queue 2 of concurrency 4: %v, want 15s", got)
	}
	for range 10 {
		m.queue.push(0)
	}
	if got := e.underLoad(m, 10*time.Second); got != 20*time.Second {
		t.Errorf("queue past concurrency: %v, want the cap 20s", got)
	}

	load := func(reject float64) *Result {
		sc := tiny(100, func(sc *scenario.Scenario) { sc.DurationS, sc.Models[0].RejectOver = 300, reject })
		r, err := runPolicy(sc, Unbounded, Options{})
		if err != nil {
			t.Fatal(err)
		}
		invariants(t, r)
		return r
	}
	if r := load(0); r.Totals.Failed != 0 {
		t.Errorf("without reject_over: %d failed", r.Totals.Failed)
	}
	if r := load(2); r.Totals.Failed == 0 || r.Models["m"].P90Depth > 3 {
		t.Errorf("reject_over 2 on concurrency 1: %d failed, p90 depth %g; want 429s and a queue of at most 3", r.Totals.Failed, r.Models["m"].P90Depth)
	}
}

// TestStartFailures: tasks fail to start at the configured rate under every
// policy, the job waits again and launches with its next attempt, nothing
// is lost or launched twice; past three attempts the job fails.
func TestStartFailures(t *testing.T) {
	sc := tiny(40, func(sc *scenario.Scenario) {
		sc.DurationS, sc.StartFailureRate = 2000, 0.3
		sc.Models[0].ProviderConcurrency = 40
	})
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		if r.StartFailures == 0 {
			t.Error("no task failed to start at rate 0.3")
		}
		if r.Totals.Launches != 40+r.StartFailures-r.Totals.Failed {
			t.Errorf("%d launches, want 40 jobs + %d failed starts - %d jobs failed past their attempts", r.Totals.Launches, r.StartFailures, r.Totals.Failed)
		}
		if r.Totals.Succeeded+r.Totals.Failed != 40 {
			t.Errorf("succeeded %d + failed %d, want every job ended", r.Totals.Succeeded, r.Totals.Failed)
		}
	})
	sc.StartFailureRate = 1
	eachPolicy(t, sc, func(t *testing.T, e *engine, r *Result) {
		if r.Totals.Failed != 40 || r.Totals.Launches != 3*40 {
			t.Errorf("every start fails: failed %d, launches %d; want 40 jobs failed after 3 launches each", r.Totals.Failed, r.Totals.Launches)
		}
	})
	if _, err := runPolicy(sc, Dynamic, Options{Faults: 1 << faults.Crash}); err == nil || !strings.Contains(err.Error(), "start_failure_rate") {
		t.Errorf("start failures with faults: %v, want an error naming start_failure_rate", err)
	}
}

// TestFidelityFieldsParse: the fields read with their defaults, and out of
// range is an error naming the field.
func TestFidelityFieldsParse(t *testing.T) {
	base := `{"name":"x","seed":1,"duration_s":60,"global_max_running":5,"container_start_s":{"fixed":1},%s
	 "models":[{"name":"m","provider_concurrency":1,"call_s":{"fixed":1},"target_depth":1,"static_cap":1%s}],
	 "batches":[]}`
	sc, err := scenario.Parse([]byte(strings.Replace(strings.Replace(base, "%s", "", 1), "%s", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if sc.DepthPeriodS != scenario.DefaultDepthPeriodS || sc.MetricNoise != 0 || sc.MetricMissing != 0 || sc.StartFailureRate != 0 ||
		sc.Models[0].SlowUnderLoad != 0 || sc.Models[0].RejectOver != 0 {
		t.Errorf("defaults: %+v", sc)
	}
	for _, c := range []struct{ top, model, want string }{
		{`"depth_period_s":0,`, "", "depth_period_s: must be within 1..3600"},
		{`"metric_missing":1.5,`, "", "metric_missing: must be within 0..1"},
		{`"metric_noise":-1,`, "", "metric_noise: must be within 0..10"},
		{`"start_failure_rate":2,`, "", "start_failure_rate: must be within 0..1"},
		{"", `,"slow_under_load":-0.5`, "models[0].slow_under_load: must be within 0..100"},
		{"", `,"reject_over":-1`, "models[0].reject_over: must be within"},
	} {
		data := strings.Replace(strings.Replace(base, "%s", c.top, 1), "%s", c.model, 1)
		if _, err := scenario.Parse([]byte(data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%s: %v, want %q", c.top, c.model, err, c.want)
		}
	}
}
