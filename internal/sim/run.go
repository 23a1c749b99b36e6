package sim

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// Policy names a scheduling policy.
type Policy string

// The policies of the scenario README.
const (
	Dynamic   Policy = "dynamic"   // evalsched's own pass
	Static    Policy = "static"    // a fixed cap per model, FCFS within a lane
	Unbounded Policy = "unbounded" // one FCFS queue; the global cap and the bucket only
	// Oracle is policy static with the best fixed caps in hindsight
	// (oracle.go): the sweep's best run.
	Oracle Policy = "oracle"
)

// policies lists the simulated policies; tests run each.
var policies = []Policy{Dynamic, Static, Unbounded}

// AllPolicies is what "all" runs and prints, in order: the old caps and
// the oracle side by side.
var AllPolicies = []Policy{Dynamic, Static, Oracle, Unbounded}

// ParsePolicy reads dynamic, static, oracle, unbounded or all.
func ParsePolicy(s string) ([]Policy, error) {
	if s == "all" {
		return AllPolicies, nil
	}
	for _, p := range AllPolicies {
		if string(p) == s {
			return []Policy{p}, nil
		}
	}
	return nil, fmt.Errorf("unknown policy %q: want dynamic, static, oracle, unbounded or all", s)
}

// Options tune a run without changing its results.
type Options struct {
	// Trace keeps every pass of every model in the JSON (passes).
	Trace bool
	// Progress, when set, is called now and then from the running
	// goroutine with the simulated time reached.
	Progress func(p Policy, simS float64, events int64)
	// Limits overrides the limit controller's tuning for policy dynamic
	// (nil: limits.DefaultConfig), to compare tunings on one scenario.
	Limits *limits.Config
	// PassLog, when set, receives one line per model and pass of policy
	// dynamic: the limit decision and why the rest waits.
	PassLog io.Writer
	// OracleCoarse makes policy oracle sweep the coarse grid (oracle.go).
	OracleCoarse bool
	// StaticCaps, when set, replaces each model's static_cap under policy
	// static (one per model, in scenario order): the oracle's sweep.
	StaticCaps []int
	// CapSteps, under policy static only, change the caps during the run
	// (twin.go, the twin bound): at the first pass at or after each step's
	// AtS, in the order given (AtS must not decrease), the caps become the
	// step's. Without steps the caps stay fixed, as policy static's are.
	CapSteps []CapStep
	// Faults are the kinds of fault to inject into policy dynamic (doc.go,
	// "Faults"); the baselines ignore them. Unlike the other options they
	// change the results: the same faults give the same results.
	Faults faults.Set
	// Learned, under policy dynamic, is each model's learned provider
	// concurrency at the start, by name, as a run before left it
	// (Result.Learned): a warm start, the model's state kept. It is
	// learned at the run's start, so fresh (limits.State.LearnedFresh).
	Learned map[string]float64

	// faultHook, in tests, shapes the fault plan (and the policy) before
	// the run starts.
	faultHook func(*dynamicPolicy, *faults.Plan)
}

// runPolicy simulates the scenario under one policy. Same scenario and seed, same
// result, whatever else runs alongside.
func runPolicy(sc *scenario.Scenario, p Policy, opt Options) (*Result, error) {
	if p == Oracle {
		return runOracle(sc, opt)
	}
	_, r, err := simulate(sc, p, opt)
	return r, err
}

// runOracle sweeps static's caps and returns the best run as policy
// oracle, with its caps and the wall time of the whole sweep.
func runOracle(sc *scenario.Scenario, opt Options) (*Result, error) {
	wall := time.Now()
	o, err := findOracle(sc, opt.OracleCoarse, runRule)
	if err != nil {
		return nil, err
	}
	r := o.Best
	if opt.Trace { // the sweep ran without traces: run the best caps again
		if r, err = runPolicy(sc, Static, Options{StaticCaps: o.Caps, Trace: true}); err != nil {
			return nil, err
		}
	}
	r.Policy, r.OracleCaps, r.OracleRuns = Oracle, o.Caps, len(o.Points)
	r.Wall = time.Since(wall)
	if opt.Progress != nil {
		opt.Progress(Oracle, float64(sc.DurationS), r.Events)
	}
	return r, nil
}

// simulate runs one policy and also returns the engine, for tests that
// look at single jobs.
func simulate(sc *scenario.Scenario, p Policy, opt Options) (*engine, *Result, error) {
	wall := time.Now()
	e := newEngine(sc, p)
	switch p {
	case Dynamic:
		if opt.Faults != 0 && sc.StartFailureRate > 0 {
			return nil, nil, fmt.Errorf("scenario: start_failure_rate does not combine with --faults yet (the faults' ECS does not fail starts)")
		}
		d, err := newDynamic(e, opt)
		if err != nil {
			return nil, nil, err
		}
		e.pol = d
		if opt.Faults != 0 {
			plan := faults.NewPlan(sc, opt.Faults)
			if opt.faultHook != nil {
				opt.faultHook(d, plan)
			}
			d.withFaults(plan)
		} else {
			e.schedulePasses()
		}
	case Static:
		caps := make([]int, len(e.models))
		for i := range e.models {
			caps[i] = e.models[i].cfg.StaticCap
			if i < len(opt.StaticCaps) {
				caps[i] = opt.StaticCaps[i]
			}
			e.models[i].limit = caps[i]
		}
		for k, st := range opt.CapSteps {
			if len(st.Caps) != len(e.models) {
				return nil, nil, fmt.Errorf("cap step %d: %d caps for %d models", k, len(st.Caps), len(e.models))
			}
			if k > 0 && st.AtS < opt.CapSteps[k-1].AtS {
				return nil, nil, fmt.Errorf("cap step %d at %g s before step %d at %g s", k, st.AtS, k-1, opt.CapSteps[k-1].AtS)
			}
		}
		e.pol = &staticPolicy{e: e, caps: caps, steps: opt.CapSteps}
		e.schedulePasses()
	case Unbounded:
		e.pol = &unboundedPolicy{e: e}
		for i := range e.models {
			e.models[i].limit = sc.GlobalMaxRunning
		}
		e.schedulePasses()
	default:
		return nil, nil, fmt.Errorf("unknown policy %q", p)
	}
	if opt.Progress != nil {
		e.progress = func(simS float64, events int64) { opt.Progress(p, simS, events) }
	}
	e.run()
	if d, ok := e.pol.(*dynamicPolicy); ok && d.fx != nil {
		d.fx.settle() // the world may still change: a requeue past the last attempt fails a job
	}
	r := e.result(opt.Trace)
	e.pol.finish(r)
	if e.faults != nil {
		r.Faults = make(map[string]int, faults.NumKinds)
		for k, n := range e.faults.Injected {
			r.Faults[faults.Kind(k).String()] = n
			r.Totals.FaultsInjected += n
		}
	}
	r.Totals.InvariantViolations = max(r.ViolationCount, len(r.Violations))
	r.Wall = time.Since(wall)
	return e, r, nil
}

// RunAll runs the policies side by side, one goroutine each (they share
// nothing but the read-only scenario), and returns the results in the order
// given.
func RunAll(sc *scenario.Scenario, ps []Policy, opt Options) ([]*Result, error) {
	results := make([]*Result, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { results[i], errs[i] = runPolicy(sc, p, opt) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// CapStep is a change of policy static's caps during a run (Options.CapSteps).
type CapStep struct {
	// AtS is when the step applies: at the first pass at or after it.
	AtS float64
	// Caps are the new caps, one per model in scenario order.
	Caps []int
	// Yield stops, for each model holding more slots than its new cap,
	// tasks still starting (or reserved, RunTask not yet out) until the
	// model holds at most its cap; running containers run on. Each stopped
	// job goes back to the front of its model's lane, to launch again as a
	// new attempt.
	Yield bool
}
