package sim

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// tinyChaos is a small world for one fault at a time: 40 jobs of three
// 10-s calls, room for all of them, twenty simulated minutes.
func tinyChaos(opts ...func(*scenario.Scenario)) *scenario.Scenario {
	return tiny(40, append([]func(*scenario.Scenario){func(sc *scenario.Scenario) {
		sc.DurationS = 1200
		sc.GlobalMaxRunning = 100
		sc.Models[0].ProviderConcurrency = 50
		sc.Models[0].TargetDepth = 5
		sc.Batches[0].Calls = scenario.FixedDist(3)
	}}, opts...)...)
}

// withIntake, as a key of the episodes given to only, keeps the intake
// faults (drawn per batch, not in episodes) on.
const withIntake = -1

// only injects exactly the episodes given (source → episodes) and nothing
// else.
func only(eps map[int][]faults.Episode) func(*dynamicPolicy, *faults.Plan) {
	return func(_ *dynamicPolicy, p *faults.Plan) {
		for i := range faults.NumSources {
			p.Script(i, eps[i])
		}
		if _, ok := eps[withIntake]; !ok {
			p.On &^= 1 << faults.Intake
		}
	}
}

// chaosRun runs policy dynamic with faults and the episodes given.
func chaosRun(t *testing.T, sc *scenario.Scenario, eps map[int][]faults.Episode, hooks ...func(*dynamicPolicy, *faults.Plan)) (*engine, *Result) {
	t.Helper()
	opt := Options{Faults: faults.All, faultHook: func(d *dynamicPolicy, p *faults.Plan) {
		only(eps)(d, p)
		for _, h := range hooks {
			h(d, p)
		}
	}}
	e, r, err := simulate(sc, Dynamic, opt)
	if err != nil {
		t.Fatal(err)
	}
	return e, r
}

func allSucceed(t *testing.T, r *Result) {
	t.Helper()
	if r.Totals.Succeeded != r.Totals.Submitted {
		t.Errorf("%d of %d jobs succeeded (%d failed, %d waiting, %d running), want all",
			r.Totals.Succeeded, r.Totals.Submitted, r.Totals.Failed, r.Totals.Waiting, r.Totals.Running)
	}
}

func at(s float64) time.Duration { return seconds(s) }

// Without any episode the faulted machinery (invocations under the lease,
// the reconciler, events through the handler) runs the tiny world as the
// simulator's own passes do.
func TestFaultMachineryWithoutFaults(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), nil)
	invariants(t, r)
	allSucceed(t, r)
	c := r.Chaos
	if c.Invocations != 20 || c.LeaseHeldExits != 0 || r.Passes != 120 || c.Reconciles != 21 {
		t.Errorf("got %d invocations (%d exited), %d passes, %d reconciles; want 20, 0, 120 and 20+1 (settling)",
			c.Invocations, c.LeaseHeldExits, r.Passes, c.Reconciles)
	}
	if r.Totals.FaultsInjected != 0 {
		t.Errorf("%d faults injected, want none", r.Totals.FaultsInjected)
	}
}

func TestCrashAfterCommitIsRequeued(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcCrash: {{Mode: faults.CrashAfterCommit}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; c.Crashes != 1 || c.Repairs.Requeued != 10 {
		t.Errorf("got %d crashes and %d claims requeued; want the crash at 0 s to leave the 10 jobs of the initial limit claimed, requeued by the reconciler", c.Crashes, c.Repairs.Requeued)
	}
}

// RunTask returned, the launch was never recorded: the reconciler finds the
// tasks by startedBy (here before their containers run, which take 200 s).
func TestCrashAfterLaunchIsRecorded(t *testing.T) {
	sc := tinyChaos(func(sc *scenario.Scenario) { sc.ContainerStartS = scenario.FixedDist(200) })
	_, r := chaosRun(t, sc, map[int][]faults.Episode{faults.SrcCrash: {{Mode: faults.CrashAfterLaunch}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; c.Crashes != 1 || c.Repairs.Recorded != 10 || r.Totals.Launches != 40 {
		t.Errorf("got %d crashes, %d launches recorded by the reconciler, %d launches; want 1, 10 and 40 (one task a job)",
			c.Crashes, c.Repairs.Recorded, r.Totals.Launches)
	}
}

func TestCrashMidLaunch(t *testing.T) {
	sc := tinyChaos(func(sc *scenario.Scenario) { sc.ContainerStartS = scenario.FixedDist(200) })
	_, r := chaosRun(t, sc, map[int][]faults.Episode{faults.SrcCrash: {{Mode: faults.CrashMidLaunch}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; c.Repairs.Recorded != 5 || c.Repairs.Requeued != 5 {
		t.Errorf("got %d launches recorded and %d claims requeued by the reconciler, want 5 and 5", c.Repairs.Recorded, c.Repairs.Requeued)
	}
}

func TestDuplicateInvocationExits(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcDuplicate: {{From: at(25), To: at(25)}}})
	invariants(t, r)
	if c := r.Chaos; c.Invocations != 21 || c.LeaseHeldExits != 1 || r.Passes != 120 {
		t.Errorf("got %d invocations, %d exits on a held lease, %d passes; want 21, 1, 120", c.Invocations, c.LeaseHeldExits, r.Passes)
	}
}

// A duplicate just before the hand-over takes the free lease and covers the
// next minute; the regular invocation then finds the lease held and exits.
func TestDuplicateAtTheHandOverTakesOver(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcDuplicate: {{From: at(55), To: at(55)}}})
	invariants(t, r)
	if c := r.Chaos; c.LeaseHeldExits != 1 || r.Passes != 120 {
		t.Errorf("got %d exits on a held lease, %d passes; want 1 and 120 (every slot passed once)", c.LeaseHeldExits, r.Passes)
	}
}

// A pass that stalls from 40 s to 75 s outlives its lease (until 70 s): the
// next invocation waits for the hand-over, takes the lease at 70 s and
// commits; the stalled pass's commit is then refused as stale.
func TestStalledPassCommitIsRefused(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(func(sc *scenario.Scenario) { sc.Batches[0].Jobs = 400 }),
		map[int][]faults.Episode{faults.SrcSlowPass: {{From: at(40), To: at(75)}}})
	invariants(t, r)
	if c := r.Chaos; c.StaleRefused != 1 || c.PassesFailed != 1 {
		t.Errorf("got %d stale commits refused, %d passes failed; want 1 and 1", c.StaleRefused, c.PassesFailed)
	}
}

func TestConcurrentClaimIsRefused(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcRace: {{From: at(30), To: at(30)}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; c.StaleRefused != 1 {
		t.Errorf("got %d stale commits refused, want 1", c.StaleRefused)
	}
}

// Without the DynamoDB store's version check, the overlapping pass and the
// stale one both claim up to the limit: the invariants catch it.
func TestInvariantsCatchAnUncheckedConcurrentClaim(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcRace: {{Mode: 0}}},
		func(d *dynamicPolicy, _ *faults.Plan) { d.unlocked = true })
	if !strings.Contains(strings.Join(r.Violations, "\n"), "model m holds 20 jobs, over its limit") {
		t.Errorf("violations %q; want model m over its limit of 10 with 20 jobs", r.Violations)
	}
}

// Every event lost, duplicated, delayed or held back for the whole run: the
// handler's idempotence and the reconciler bring every job to its end.
func TestEventFaultsAreRepaired(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcEvents: {{To: at(1200)}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; r.Faults["events"] == 0 || c.EventsLost == 0 || c.Repairs.Started+c.Repairs.Ended == 0 {
		t.Errorf("%d event faults, %d events lost, %d repairs; want some of each", r.Faults["events"], c.EventsLost, c.Repairs.Started+c.Repairs.Ended)
	}
}

// overshooting is a world whose queue overshoots: 400 jobs on a provider
// of 5, launched 100 at a time, their containers starting in 10-90 s, so
// the pass finds the queue too deep while tasks still start, and yields.
func overshooting() *scenario.Scenario {
	return tinyChaos(func(sc *scenario.Scenario) {
		sc.Batches[0].Jobs = 400
		sc.GlobalMaxRunning = 300
		sc.DurationS = 3600
		sc.Models[0].ProviderConcurrency = 5
		sc.Models[0].TargetDepth = 2
		sc.Models[0].InitialLimit = 100
		sc.ContainerStartS = scenario.UniformDist(10, 90)
	})
}

// Yields under event faults: the yielded tasks' STOPPED events are lost,
// late or repeated like the others, and every job still ends succeeded.
func TestYieldsUnderEventFaults(t *testing.T) {
	_, r := chaosRun(t, overshooting(), map[int][]faults.Episode{faults.SrcEvents: {{To: at(3600)}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; r.Totals.Yielded == 0 || c.EventsLost == 0 || c.YieldEventsLost == 0 {
		t.Errorf("%d tasks yielded, %d events lost, %d of them yields'; want some of each", r.Totals.Yielded, c.EventsLost, c.YieldEventsLost)
	}
}

// Every yielded task's STOPPED event lost, no other fault: the reconciler
// ends each yielded job from DescribeTasks (STOPPED, UserInitiated, the
// yield's reason) as its event would have, once, without spending an
// attempt; had ECS not described the yielded task, the job would have
// been requeued as missing instead.
func TestReconcilerEndsLostYields(t *testing.T) {
	var d *dynamicPolicy
	e, r := chaosRun(t, overshooting(), nil, func(dp *dynamicPolicy, _ *faults.Plan) { d, dp.loseYields = dp, true })
	invariants(t, r)
	allSucceed(t, r)
	c := r.Chaos
	if r.Totals.Yielded == 0 || c.YieldEventsLost != r.Totals.Yielded {
		t.Fatalf("%d tasks yielded, %d of their events lost; want some, all lost", r.Totals.Yielded, c.YieldEventsLost)
	}
	if c.Repairs.Ended != r.Totals.Yielded || c.Repairs.Requeued != 0 || c.Repairs.Started != 0 {
		t.Errorf("the reconciler ended %d jobs, requeued %d, started %d; want the %d yielded ended, none requeued or started",
			c.Repairs.Ended, c.Repairs.Requeued, c.Repairs.Started, r.Totals.Yielded)
	}

	// ECS still describes a yielded task after its job launched again, as
	// stopped, and forgets it an hour after it stopped.
	v := ecsView{d.fx}
	var key taskKey
	for k := range d.fx.yields {
		if e.jobs[k.job].attempt > k.attempt && (key == taskKey{} || k.job < key.job || k.job == key.job && k.attempt < key.attempt) {
			key = k
		}
	}
	if key == (taskKey{}) {
		t.Fatal("no yielded job launched again")
	}
	id := d.ids[key.job]
	arn := taskARN(id, int(key.attempt))
	out, _ := v.Describe(d.ctx, []string{arn})
	task, ok := out[arn]
	if len(out) != 1 || !ok {
		t.Fatalf("Describe(%s) = %+v, want the yielded task", arn, out)
	}
	if kind, _, _ := task.Classify(taskEventConfig); task.Status != "STOPPED" || kind != taskevent.Yielded {
		t.Errorf("the yielded task is %s, %s %q (%s); want STOPPED, yielded", task.Status, task.StopCode, task.StoppedReason, kind)
	}
	if running, stopped := v.started(key.job, false), v.started(key.job, true); slices.Contains(running, arn) || !slices.Contains(stopped, arn) {
		t.Errorf("ECS lists %v running, %v stopped; want %s stopped only", running, stopped, arn)
	}
	d.fx.yields[key] = v.now() - forgetAfter - time.Second
	if out, _ := v.Describe(d.ctx, []string{arn}); len(out) != 0 {
		t.Errorf("ECS describes a task yielded over an hour ago: %+v", out)
	}
}

func TestRunTaskFaults(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcRunTask: {{To: at(1200)}}})
	invariants(t, r)
	if r.Chaos.RunTaskRetried == 0 || r.Retries["ThrottlingException: Rate exceeded"]+r.Retries["capacity: RESOURCE:FARGATE: Capacity is unavailable at this time"] == 0 {
		t.Errorf("%d RunTasks answered again by token, refusals %v; want some of each", r.Chaos.RunTaskRetried, r.Retries)
	}
}

func TestStoreThrottling(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcThrottle: {{To: at(1200)}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; r.Faults["store"] == 0 || c.PassesFailed == 0 || c.EventRetries == 0 {
		t.Errorf("%d store faults, %d passes failed, %d events redelivered; want some of each", r.Faults["store"], c.PassesFailed, c.EventRetries)
	}
}

// A throttling episode over the whole run meets the claims too (after the
// states are written): throttled claims leave their grants to a later
// pass, claims applied with their answer lost strand their jobs CLAIMED
// until the reconciler requeues them; nothing is lost or launched twice.
func TestStoreFaultsReachTheClaims(t *testing.T) {
	_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcThrottle: {{To: at(1200)}}})
	invariants(t, r)
	allSucceed(t, r)
	if c := r.Chaos; c.ClaimsThrottled == 0 || c.ClaimsUnconfirmed == 0 || c.Repairs.Requeued == 0 {
		t.Errorf("%d claims throttled, %d unconfirmed, %d requeued by the reconciler; want some of each",
			c.ClaimsThrottled, c.ClaimsUnconfirmed, c.Repairs.Requeued)
	}
}

func TestMetricsFaults(t *testing.T) {
	for mode := range faults.NumMetricsModes {
		_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcMetrics: {{From: at(60), To: at(600), Mode: mode, Model: -1}}})
		invariants(t, r)
		allSucceed(t, r)
		if r.Faults["metrics"] == 0 {
			t.Errorf("metrics mode %d: no fault injected", mode)
		}
	}
}

func TestProviderFaults(t *testing.T) {
	for mode, want := range []string{"failing", "slow"} {
		_, r := chaosRun(t, tinyChaos(), map[int][]faults.Episode{faults.SrcProvider: {{From: at(20), To: at(200), Mode: mode, Model: 0}}})
		invariants(t, r)
		failed := r.Totals.Failed
		if (want == "failing") != (failed > 0) {
			t.Errorf("provider %s: %d jobs failed", want, failed)
		}
	}
}

// Batches come in parts out of order and again later: Submit creates each
// job once.
func TestIntakeFaults(t *testing.T) {
	sc := tinyChaos(func(sc *scenario.Scenario) {
		for i := range 6 {
			b := sc.Batches[0]
			b.Batch, b.AtS = string(rune('c'+i)), float64(30*i)
			sc.Batches = append(sc.Batches, b)
		}
	})
	_, r := chaosRun(t, sc, map[int][]faults.Episode{withIntake: nil})
	invariants(t, r)
	allSucceed(t, r)
	if r.Faults["intake"] == 0 {
		t.Error("no intake fault injected")
	}
}

func TestFaultsAreDeterministic(t *testing.T) {
	sc := shipped(t, "seed-hot-lanes")
	sc.DurationS = 900
	for i := range sc.Batches {
		sc.Batches[i].Jobs = max(1, sc.Batches[i].Jobs/20)
	}
	run := func() []byte {
		r, err := runPolicy(sc, Dynamic, Options{Faults: faults.All, Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Totals.FaultsInjected == 0 {
			t.Error("no fault injected")
		}
		b, _ := json.Marshal(r)
		return b
	}
	a, b := run(), run()
	if !bytes.Equal(a, b) {
		t.Fatal("the same scenario, seed and faults gave different JSON")
	}
	sc.Seed++
	if bytes.Equal(a, run()) {
		t.Error("another seed gave the same JSON")
	}
	if !strings.Contains(string(a), `"faults_injected":`) || !strings.Contains(string(a), `"invariant_violations":`) {
		t.Error("totals lack faults_injected or invariant_violations")
	}
}

func TestBaselinesIgnoreFaults(t *testing.T) {
	sc := shipped(t, "small-behind-big")
	for _, p := range []Policy{Static, Unbounded} {
		a, _ := runPolicy(sc, p, Options{})
		b, _ := runPolicy(sc, p, Options{Faults: faults.All})
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if !bytes.Equal(x, y) {
			t.Errorf("%s: faults changed the baseline", p)
		}
	}
}

func TestLegalMoves(t *testing.T) {
	for _, c := range []struct {
		os     sState
		oa     int32
		ns     sState
		na     int32
		legal  bool
		reason string
	}{
		{sUnknown, 0, sWaiting, 1, true, "submitted"},
		{sWaiting, 1, sClaimed, 1, true, "claimed"},
		{sClaimed, 1, sLaunched, 1, true, "launch recorded"},
		{sClaimed, 1, sRunning, 1, true, "RUNNING before the record"},
		{sLaunched, 1, sSucceeded, 1, true, "STOPPED before RUNNING"},
		{sClaimed, 1, sWaiting, 2, true, "launch refused: next attempt"},
		{sRunning, 2, sWaiting, 3, true, "infrastructure stop"},
		{sLaunched, 2, sWaiting, 3, true, "yielded while starting"},
		{sLaunched, 2, sWaiting, 2, false, "yielded on the same attempt"},
		{sLaunched, 2, sWaiting, 4, false, "yielded past the next attempt"},
		{sWaiting, 2, sWaiting, 3, false, "yielded while waiting"},
		{sWaiting, 1, sRunning, 1, false, "running unclaimed"},
		{sRunning, 1, sLaunched, 1, false, "backwards"},
		{sClaimed, 1, sWaiting, 1, false, "requeued on the same attempt"},
		{sSucceeded, 1, sFailed, 1, false, "ended twice"},
		{sFailed, 3, sWaiting, 4, false, "ended job requeued"},
		{sWaiting, 1, sUnknown, 0, false, "lost"},
	} {
		if got := legal(c.os, c.oa, c.ns, c.na); got != c.legal {
			t.Errorf("%s: legal(%s → %s) = %v, want %v", c.reason, stateName(c.os, c.oa), stateName(c.ns, c.na), got, c.legal)
		}
	}
}

// The shipped scenarios with every fault, a few seeds each (make chaos runs
// 20): no job lost or launched twice, no invariant broken.
func TestFaultsOnShippedScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the shipped scenarios with faults")
	}
	runs := []struct {
		name  string
		seeds []int64
	}{
		{"seed-hot-lanes", []int64{1}},
		{"small-behind-big", []int64{1, 2, 3}},
		{"tiers-saturated", []int64{1, 2, 3}},
	}
	var mu sync.Mutex
	injected := map[string]int{}
	t.Run("runs", func(t *testing.T) {
		for _, run := range runs {
			for _, seed := range run.seeds {
				t.Run(run.name+"/"+string(rune('0'+seed)), func(t *testing.T) {
					t.Parallel()
					sc := shipped(t, run.name)
					sc.Seed = seed
					r, err := runPolicy(sc, Dynamic, Options{Faults: faults.All})
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%.1f s wall, %d faults %v", r.Wall.Seconds(), r.Totals.FaultsInjected, r.Faults)
					invariants(t, r)
					mu.Lock()
					for k, n := range r.Faults {
						injected[k] += n
					}
					mu.Unlock()
				})
			}
		}
	})
	for _, k := range faults.Kinds() {
		if injected[k.String()] == 0 {
			t.Errorf("no %s fault injected in any run", k)
		}
	}
}
