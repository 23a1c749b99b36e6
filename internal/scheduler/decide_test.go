package scheduler

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/priority"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// mdl builds a model in the snapshot: a steered limit, running and starting.
type mdl struct{ Model }

func newModel(name string, limit int) *mdl {
	return &mdl{Model{
		Config: ModelConfig{Name: name, Enabled: true, MinLimit: 1, MaxLimit: 10000, TargetDepth: 40},
		State:  ModelState{Limit: limits.State{Limit: limit}},
	}}
}
func (m *mdl) running(n int) *mdl  { m.Running = n; return m }
func (m *mdl) starting(n int) *mdl { m.Starting = n; return m }
func (m *mdl) disabled() *mdl      { m.Config.Enabled = false; return m }
func (m *mdl) obj() Model          { return m.Model }

func queue(model, account, project, batch string, seq int64, waiting int) Queue {
	return Queue{Account: account, Project: project, Batch: batch, Model: model, SubmittedTier: -1, Seq: seq, Waiting: waiting}
}

// inBand reads every model at its target: the limits hold.
func inBand(models ...string) map[string]Depth {
	d := map[string]Depth{}
	for _, m := range models {
		d[m] = Depth{Value: 40, At: now.Add(-20 * time.Second)}
	}
	return d
}

func TestDecide(t *testing.T) {
	cfg := DefaultConfig()
	// These cases are of admission: the depth reads at the operator's
	// target (inBand) and the limits hold. The blocked bound would put the
	// target at 5 % of the few jobs running (3 of 60) and lower them.
	cfg.Limits.MaxBlocked = 1
	cases := []struct {
		name     string
		cfg      func(*Config)
		models   []Model
		queues   []Queue
		admitted map[string]int
		whyHas   map[string]string
	}{
		{
			name:     "free slots under the limit are admitted",
			models:   []Model{newModel("a", 100).running(60).obj()},
			queues:   []Queue{queue("a", "lab", "p", "b", 1, 500)},
			admitted: map[string]int{"a": 40},
			whyHas:   map[string]string{"a": "460 wait: limit 100 reached"},
		},
		{
			name:     "starting jobs hold slots",
			models:   []Model{newModel("a", 100).running(60).starting(30).obj()},
			queues:   []Queue{queue("a", "lab", "p", "b", 1, 500)},
			admitted: map[string]int{"a": 10},
		},
		{
			name: "the global cap is water-filled across models",
			cfg:  func(c *Config) { c.GlobalMaxRunning = 100 },
			models: []Model{
				newModel("a", 1000).obj(),
				newModel("b", 1000).obj(),
				newModel("c", 10).obj(),
			},
			queues: []Queue{
				queue("a", "lab", "p", "a1", 1, 500),
				queue("b", "lab", "p", "b1", 2, 500),
				queue("c", "lab", "p", "c1", 3, 500),
			},
			admitted: map[string]int{"a": 45, "b": 45, "c": 10},
			whyHas:   map[string]string{"a": "global cap leaves 45 slots", "c": "limit 10 reached"},
		},
		{
			name: "the launch budget is shared by free slots",
			cfg:  func(c *Config) { c.MaxLaunchesPerPass = 30 },
			models: []Model{
				newModel("a", 1000).obj(),
				newModel("b", 5).obj(),
			},
			queues: []Queue{
				queue("a", "lab", "p", "a1", 1, 500),
				queue("b", "lab", "p", "b1", 2, 500),
			},
			admitted: map[string]int{"a": 25, "b": 5},
			whyHas:   map[string]string{"a": "launch budget leaves 25"},
		},
		{
			name: "a model above its share leaves only the headroom under the cap",
			cfg:  func(c *Config) { c.GlobalMaxRunning = 10 },
			models: []Model{
				newModel("a", 100).running(8).obj(),
				newModel("b", 100).obj(),
			},
			queues: []Queue{
				queue("a", "lab", "p", "a1", 1, 50),
				queue("b", "lab", "p", "b1", 2, 5),
			},
			admitted: map[string]int{"a": 0, "b": 2},
		},
		{
			name:     "a disabled model admits nothing",
			models:   []Model{newModel("a", 100).disabled().obj()},
			queues:   []Queue{queue("a", "lab", "p", "b", 1, 5)},
			admitted: map[string]int{"a": 0},
			whyHas:   map[string]string{"a": "model disabled"},
		},
		{
			name: "an open breaker admits nothing",
			models: []Model{func() Model {
				m := newModel("a", 100).obj()
				m.State.Breaker = breaker.State{Phase: breaker.Open, Since: now.Add(-time.Second)}
				return m
			}()},
			queues:   []Queue{queue("a", "lab", "p", "b", 1, 5)},
			admitted: map[string]int{"a": 0},
			whyHas:   map[string]string{"a": "breaker open"},
		},
		{
			name:     "waiting jobs of a model without an item wait",
			models:   []Model{newModel("a", 100).obj()},
			queues:   []Queue{queue("ghost", "lab", "p", "b", 1, 5)},
			admitted: map[string]int{"a": 0},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf := cfg
			if c.cfg != nil {
				c.cfg(&cf)
			}
			var names []string
			for _, m := range c.models {
				names = append(names, m.Config.Name)
			}
			plan := Decide(cf, Snapshot{Models: c.models, Queues: c.queues}, inBand(names...), now)
			for _, mp := range plan.Models {
				if want := c.admitted[mp.Model]; mp.Admitted != want {
					t.Errorf("model %s: got %d admitted, want %d (limit: %s; why: %s)", mp.Model, mp.Admitted, want, mp.Limit.Reason, mp.Why)
				}
				if want := c.whyHas[mp.Model]; !strings.Contains(mp.Why, want) {
					t.Errorf("model %s: got why %q, want it to contain %q", mp.Model, mp.Why, want)
				}
				granted := 0
				for _, g := range mp.Grants {
					granted += g.Count
				}
				if granted != mp.Admitted {
					t.Errorf("model %s: grants sum to %d, admitted %d", mp.Model, granted, mp.Admitted)
				}
			}
		})
	}
}

func TestDecideHoldsPausedBatches(t *testing.T) {
	snap := Snapshot{
		Models: []Model{newModel("a", 100).obj()},
		Queues: []Queue{queue("a", "acme", "p", "paused", 1, 50), queue("a", "lab", "q", "live", 2, 5)},
		// A pin on the paused scope (tier 0, expiring) neither lifts the
		// pause nor lapses it: pauses are apart from pins.
		Pins:   []priority.Pin{{Scope: "project#acme/p", Tier: "0", ExpiresAt: "1"}, {Scope: "account#acme", Tier: "0"}},
		Pauses: []Pause{{Scope: "project#acme/p"}},
	}
	plan := Decide(DefaultConfig(), snap, inBand("a"), now)
	mp := plan.Models[0]
	if mp.Admitted != 5 || mp.Waiting != 5 || mp.Paused != 50 || len(mp.Grants) != 1 || mp.Grants[0].Queue.Batch != "live" {
		t.Fatalf("got admitted %d waiting %d paused %d grants %+v; want only the live batch's 5", mp.Admitted, mp.Waiting, mp.Paused, mp.Grants)
	}
	if mp.Why != "50 paused" {
		t.Errorf("got why %q", mp.Why)
	}
}

func TestDecideWarnsOfOrphanQueues(t *testing.T) {
	plan := Decide(DefaultConfig(), Snapshot{Queues: []Queue{queue("ghost", "lab", "p", "b", 1, 5)}}, nil, now)
	if len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], `"ghost"`) {
		t.Errorf("got warnings %q, want one naming the model", plan.Warnings)
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	snap := bigSnapshot(20, 400, 80, 100_000)
	a := Decide(DefaultConfig(), snap, nil, now)
	b := Decide(DefaultConfig(), snap, nil, now)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same snapshot gave two plans")
	}
	if a.Total() == 0 {
		t.Fatal("the plan admitted nothing; the test proves nothing")
	}
}

// bigSnapshot spreads waiting jobs over models, batches and projects, with
// every model cold (no depth) so its limit holds at 50.
func bigSnapshot(models, batches, projects, waiting int) Snapshot {
	var snap Snapshot
	for i := range models {
		snap.Models = append(snap.Models, newModel(fmt.Sprintf("model-%03d", i), 50).obj())
	}
	for i := range batches {
		snap.Queues = append(snap.Queues, Queue{
			Account: fmt.Sprintf("acct-%d", i%7), Project: fmt.Sprintf("proj-%04d", i%projects),
			Batch: fmt.Sprintf("batch-%05d", i), Model: fmt.Sprintf("model-%03d", i%models),
			SubmittedTier: i % 3, Seq: int64(i), Waiting: waiting / batches,
		})
	}
	return snap
}

// BenchmarkDecide is one pass's pure work at the seed system's scale: 241
// models, 10,000 batches in 2,000 projects, 1,000,000 waiting jobs.
func BenchmarkDecide(b *testing.B) {
	snap := bigSnapshot(241, 10_000, 2_000, 1_000_000)
	cfg := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		plan := Decide(cfg, snap, nil, now)
		if plan.Total() == 0 {
			b.Fatal("nothing admitted")
		}
	}
}

// TestDecideErrorBurst walks a model through a provider error burst with the
// gateway's error rate read: the limit neither rises on the empty queue nor
// falls on a few probes' queue, and the pass the breaker closes on the rate
// the model admits up to its limit from before the burst.
func TestDecideErrorBurst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Breaker.GatewayThreshold = breaker.DefaultGatewayThreshold
	m := newModel("a", 300).running(300).obj()
	queues := []Queue{queue("a", "lab", "p", "b", 1, 5000)}
	at := now
	pass := func(running int, outcomes breaker.Outcomes, depth Depth) ModelPlan {
		t.Helper()
		m.Running, m.Outcomes = running, outcomes
		plan := Decide(cfg, Snapshot{Models: []Model{m}, Queues: queues}, map[string]Depth{"a": depth}, at)
		mp := plan.Models[0]
		m.State = mp.State
		at = at.Add(10 * time.Second)
		return mp
	}
	// 1. The burst: calls fail fast, the queue empties, jobs end failed.
	mp := pass(300, breaker.Outcomes{}, Depth{Value: 0, At: at.Add(-20 * time.Second), ErrorRate: 0.9, Calls: 500, ErrorAt: at.Add(-20 * time.Second)})
	if mp.Limit.Action == limits.Raised || mp.State.Limit.Limit != 300 {
		t.Fatalf("a failing provider's empty queue: got %s to %d (%s), want a hold at 300", mp.Limit.Action, mp.State.Limit.Limit, mp.Limit.Reason)
	}
	mp = pass(200, breaker.Outcomes{ProviderFailed: 100}, Depth{Value: 0, At: at.Add(-20 * time.Second)})
	if mp.Breaker.State.Phase != breaker.Open {
		t.Fatalf("got breaker %s (%s), want OPEN", mp.Breaker.State.Phase, mp.Breaker.Reason)
	}
	// 2. Cooldown, then probes whose gateway queue is deep (another
	// tenant's calls): a few probes say nothing of the load.
	for range 12 {
		mp = pass(0, breaker.Outcomes{ProviderFailed: 1}, Depth{})
	}
	if mp.Breaker.State.Phase != breaker.HalfOpen || mp.Admitted == 0 {
		t.Fatalf("got breaker %s admitting %d (%s), want HALF_OPEN probing", mp.Breaker.State.Phase, mp.Admitted, mp.Breaker.Reason)
	}
	for k := range 3 {
		// A probe failed: another is admitted in its place.
		mp = pass(3, breaker.Outcomes{ProviderFailed: 1 - min(k, 1)}, Depth{Value: 400, At: at.Add(-20 * time.Second)})
	}
	if mp.State.Limit.Limit != 300 {
		t.Fatalf("half-open under a deep queue: got limit %d (%s), want 300 held", mp.State.Limit.Limit, mp.Limit.Reason)
	}
	// 3. The provider heals: the probes' calls succeed; 20 s of datapoints.
	for k := range 3 {
		end := at.Add(-20 * time.Second)
		mp = pass(3, breaker.Outcomes{}, Depth{Value: 0, At: end, Calls: 3, ErrorAt: end})
		if k < 2 && mp.Breaker.State.Phase == breaker.Closed {
			t.Fatalf("closed after %d healthy datapoints, want 3 (20 s)", k+1)
		}
	}
	if mp.Breaker.State.Phase != breaker.Closed || mp.State.Limit.Limit != 300 {
		t.Fatalf("healed: got breaker %s, limit %d (%s); want CLOSED at the limit of before, 300", mp.Breaker.State.Phase, mp.State.Limit.Limit, mp.Breaker.Reason)
	}
	if want := min(cfg.MaxLaunchesPerPass, 300-3); mp.Admitted != want {
		t.Errorf("the pass it closed admitted %d, want %d (up to the limit, within the launch budget)", mp.Admitted, want)
	}
	// 4. The jobs refilling the limit are starting (the rest launched by
	// the next pass): a datapoint of the empty queue before they run says
	// nothing of the limit.
	m.Starting = 300 - 3
	mp = pass(3, breaker.Outcomes{}, Depth{Value: 0, At: at.Add(-20 * time.Second), Calls: 3, ErrorAt: at.Add(-20 * time.Second)})
	if mp.Limit.Action == limits.Raised || mp.State.Limit.Limit != 300 {
		t.Errorf("refilling after the burst: got %s to %d (%s), want a hold at 300 until the refill runs", mp.Limit.Action, mp.State.Limit.Limit, mp.Limit.Reason)
	}
}

// A limit admission keeps filling binds even when jobs end between passes:
// short jobs free a share of the slots before the next pass counts them,
// and the controller must see the limit as admission saw it (held after
// its admissions), not the load left after they ended.
func TestALimitAdmissionFilledBindsThoughJobsEnded(t *testing.T) {
	cfg := DefaultConfig()
	far := map[string]Depth{"a": {Value: 0, At: now.Add(-20 * time.Second)}}
	queues := []Queue{queue("a", "lab", "p", "b", 1, 5000)}

	// Pass 1: 60 running, the limit of 100 is filled.
	first := Decide(cfg, Snapshot{Models: []Model{newModel("a", 100).running(60).obj()}, Queues: queues}, far, now)
	mp := first.Models[0]
	if mp.Admitted != 40 || mp.State.Limit.Held != 100 {
		t.Fatalf("pass 1 admitted %d, held %d; want 40 and 100", mp.Admitted, mp.State.Limit.Held)
	}

	// Pass 2: 20 of them ended meanwhile; 80 hold a slot, under 90 % of the
	// limit, yet the limit was what kept jobs waiting.
	m := newModel("a", 100).running(60).starting(20).obj()
	m.State = mp.State
	later := now.Add(10 * time.Second)
	m.Outcomes = breaker.Outcomes{OK: 20}
	second := Decide(cfg, Snapshot{Models: []Model{m}, Queues: queues}, map[string]Depth{"a": {Value: 0, At: later.Add(-20 * time.Second)}}, later)
	got := second.Models[0]
	if got.Limit.Action != limits.Raised || got.State.Limit.Limit <= 100 {
		t.Fatalf("pass 2: %s to %d (%s), want a raise: admission filled the limit", got.Limit.Action, got.State.Limit.Limit, got.Limit.Reason)
	}
}

// A model never steered starts at its initial limit, or at its provider's
// concurrency when the operator configured it: that many jobs, each one
// call at a time, cannot queue a call, so waiting for a datapoint first
// would only leave the provider idle through a container start.
func TestANewModelStartsAtItsConfiguredConcurrency(t *testing.T) {
	cases := []struct {
		name            string
		initial, conc   int
		wantLimit, want int
	}{
		{"no concurrency configured: the initial limit", 10, 0, 10, 10},
		{"concurrency configured: it", 10, 300, 300, 200},
		{"an initial limit above it: the initial limit", 500, 300, 500, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newModel("a", 0).obj()
			m.Config.InitialLimit, m.Config.ProviderConcurrency = c.initial, c.conc
			plan := Decide(DefaultConfig(), Snapshot{Models: []Model{m}, Queues: []Queue{queue("a", "lab", "p", "b", 1, 5000)}}, nil, now)
			mp := plan.Models[0]
			if mp.State.Limit.Limit != c.wantLimit || mp.Admitted != min(c.wantLimit, c.want) {
				t.Fatalf("limit %d, admitted %d; want %d and %d (the launch budget)", mp.State.Limit.Limit, mp.Admitted, c.wantLimit, min(c.wantLimit, c.want))
			}
			if mp.State.Limit.RaisedBy != c.wantLimit {
				t.Fatalf("raised by %d, want %d: the start counts as a raise, so the next waits for its launches", mp.State.Limit.RaisedBy, c.wantLimit)
			}
		})
	}
}

// The limits' pace bounds a pass's admissions where jobs start for longer
// than they run (limits.Decision.Pace): a limit of 165 slots with 80 held
// leaves 85, but the jobs of one pass would run together, so the pass
// admits the knee's turnover, and the pass log says why the rest wait.
func TestAdmissionsFollowTheLimitsPace(t *testing.T) {
	m := newModel("a", 165).running(20).starting(60).obj()
	m.Config.TargetDepth = 2
	m.State.Limit.PaceKnee = 22
	// 10-s jobs behind 60-s starts, averaged over an hour.
	m.State.Limit.AvgRunning, m.State.Limit.AvgStarting, m.State.Limit.AvgEnter, m.State.Limit.AvgEnd = 20, 120, 2, 2
	m.State.Limit.AvgSince = now.Add(-time.Hour)
	m.State.Limit.Recent = []limits.Sample{{At: now.Add(-10 * time.Second), Running: 20, Limit: 165}}
	queues := []Queue{queue("a", "lab", "p", "b", 1, 5000)}
	plan := Decide(DefaultConfig(), Snapshot{Models: []Model{m}, Queues: queues}, map[string]Depth{"a": {Value: 1, At: now.Add(-20 * time.Second)}}, now)
	mp := plan.Models[0]
	if mp.Limit.Pace != 22 || mp.Admitted != 22 || mp.State.Limit.Limit != 165 {
		t.Fatalf("pace %d, admitted %d, limit %d (%s); want 22 admitted under a limit of 165 that held", mp.Limit.Pace, mp.Admitted, mp.State.Limit.Limit, mp.Limit.Reason)
	}
	if !strings.Contains(mp.Why, "4978 wait: paced: 22 launches this pass") {
		t.Errorf("why %q, want the pace named", mp.Why)
	}
}

// A model the pass never steered starts at its initial limit, keeping a
// concurrency learned before (an operator's edit of its state item, or a
// state kept across runs).
func TestDecideKeepsALearnedConcurrencyAtTheInitialLimit(t *testing.T) {
	m := Model{Config: ModelConfig{Name: "a", Enabled: true, MinLimit: 1, MaxLimit: 1000, InitialLimit: 10, TargetDepth: 2}}
	m.State.Limit.Conc, m.State.Limit.ConcAt = 250, now.Add(-time.Minute)
	plan := Decide(DefaultConfig(), Snapshot{Models: []Model{m}, Queues: []Queue{queue("a", "lab", "p", "b", 1, 50)}}, nil, now)
	got := plan.Models[0].State.Limit
	if got.Limit != 10 || got.Conc != 250 || !got.ConcAt.Equal(now.Add(-time.Minute)) {
		t.Errorf("got limit %d, learned %g at %v; want the initial 10 with 250 learned a minute ago", got.Limit, got.Conc, got.ConcAt)
	}
}
