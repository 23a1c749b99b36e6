package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/admission"
	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/capacity"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/priority"
)

// Config is the account-wide configuration of the pass.
type Config struct {
	Tiers              int     // number of priority tiers (0 = most urgent)
	TierWeight         float64 // share a tier takes of what is left to it
	DefaultTier        int     // tier of a batch submitted without one
	GlobalMaxRunning   int     // account-wide cap on tasks holding a slot
	MaxLaunchesPerPass int     // launches one pass may issue (ECS's Fargate bucket)
	Limits             limits.Config
	Breaker            breaker.Config
}

// DefaultConfig is what a deployment starts with.
func DefaultConfig() Config {
	return Config{
		Tiers:              3,
		TierWeight:         0.8,
		DefaultTier:        2,
		GlobalMaxRunning:   6000,
		MaxLaunchesPerPass: 200,
		Limits:             limits.DefaultConfig(),
		Breaker:            breaker.DefaultConfig(),
	}
}

// Validate names the first field that breaks its rule.
func (c Config) Validate() error {
	switch {
	case c.Tiers < 1 || c.Tiers > 10:
		return fmt.Errorf("scheduler: tiers %d is outside 1..10", c.Tiers)
	case c.TierWeight <= 0 || c.TierWeight > 1:
		return fmt.Errorf("scheduler: tier_weight %g is outside (0, 1]", c.TierWeight)
	case c.DefaultTier < 0 || c.DefaultTier >= c.Tiers:
		return fmt.Errorf("scheduler: default_tier %d is outside 0..%d", c.DefaultTier, c.Tiers-1)
	case c.GlobalMaxRunning < 0:
		return fmt.Errorf("scheduler: global_max_running %d must not be negative", c.GlobalMaxRunning)
	case c.MaxLaunchesPerPass < 1:
		return fmt.Errorf("scheduler: max_launches_per_pass %d must be at least 1", c.MaxLaunchesPerPass)
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	return c.Breaker.Validate()
}

// Plan is what a pass decided: the state to persist and the jobs to claim.
type Plan struct {
	At       time.Time
	Models   []ModelPlan // sorted by model name
	Warnings []string
}

// Grant asks the store to claim Count of a queue's oldest waiting jobs.
type Grant struct {
	Queue QueueKey
	Tier  int
	Count int
}

// ModelPlan is one model's part of the plan, with the reasons behind it.
type ModelPlan struct {
	Model    string
	State    ModelState       // to persist
	Ack      breaker.Outcomes // outcomes consumed by the breaker, to acknowledge
	Depth    Depth            // zero At: no datapoint
	Running  int
	Starting int
	Waiting  int
	Limit    limits.Decision
	Breaker  breaker.Decision
	Capacity int     // slots the global cap leaves this model
	Free     int     // slots handed to admission this pass
	Grants   []Grant // in admission order
	Admitted int
	ByTier   []int
	Why      string // why the rest of the waiting jobs wait; "" when none wait
	Paused   int    // waiting jobs of paused batches, not in Waiting
}

// Total returns the admitted jobs of the whole plan.
func (p Plan) Total() int {
	n := 0
	for _, m := range p.Models {
		n += m.Admitted
	}
	return n
}

// Decide is the pure heart of a pass: from a snapshot and depths at time now,
// the new limits, breaker states and grants. It reads no clock and does no I/O.
// It runs in the pass's phases, each a function below: the pins compiled
// (priority), the paused batches set apart, the models stepped (breaker,
// then limits), the global cap and launch budget split (capacity), the
// free slots admitted (admission), and what the limits hold recorded.
func Decide(cfg Config, snap Snapshot, depths map[string]Depth, now time.Time) Plan {
	plan := Plan{At: now, Warnings: slices.Clone(snap.Warnings)}
	pins := plan.compilePins(cfg, snap, now)
	active, paused := activeQueues(snap)
	byModel := groupQueues(active)
	plan.warnOrphans(snap, byModel)

	models := slices.Clone(snap.Models)
	slices.SortFunc(models, func(a, b Model) int { return strings.Compare(a.Config.Name, b.Config.Name) })
	plan.Models = make([]ModelPlan, len(models))
	for i, m := range models {
		plan.Models[i] = stepModel(cfg, m, byModel[m.Config.Name], paused[m.Config.Name], depths[m.Config.Name], now)
	}
	free, budget := plan.split(cfg, models)
	plan.admit(cfg, models, byModel, pins, free, budget)
	plan.recordHeld()
	return plan
}

// compilePins compiles the pins once; a bad pin is a warning, never a
// failure.
func (plan *Plan) compilePins(cfg Config, snap Snapshot, now time.Time) priority.Table {
	pins, warns := priority.Compile(snap.Pins, cfg.Tiers, now)
	for _, w := range warns {
		plan.Warnings = append(plan.Warnings, w.String())
	}
	return pins
}

// activeQueues sets the paused batches apart: they hold no demand, so
// their jobs wait without counting toward limits, capacity or admission
// until the pause is lifted. paused counts their waiting jobs by model.
func activeQueues(snap Snapshot) (active []Queue, paused map[string]int) {
	active = snap.Queues
	paused = map[string]int{}
	if pauses := PausesOf(snap.Pauses); pauses.Any() {
		active = make([]Queue, 0, len(snap.Queues))
		for _, q := range snap.Queues {
			if _, ok := pauses.By(q.Account, q.Project, q.Batch); ok {
				paused[q.Model] += q.Waiting
				continue
			}
			active = append(active, q)
		}
	}
	return active, paused
}

// warnOrphans warns of the models with waiting jobs but no (well-formed)
// model item: their jobs wait.
func (plan *Plan) warnOrphans(snap Snapshot, byModel map[string][]Queue) {
	known := make(map[string]bool, len(snap.Models))
	for _, m := range snap.Models {
		known[m.Config.Name] = true
	}
	var orphans []string
	for name := range byModel {
		if !known[name] {
			orphans = append(orphans, name)
		}
	}
	slices.Sort(orphans)
	for _, name := range orphans {
		if reason, malformed := snap.Skipped[name]; malformed {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("model %q has waiting jobs but its model item is malformed (%s); they wait", name, reason))
			continue
		}
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("model %q has waiting jobs but no model item; they wait", name))
	}
}

// stepModel is one model's breaker, then limits, step: its plan with the
// state to persist, before capacity and admission.
func stepModel(cfg Config, m Model, queues []Queue, paused int, depth Depth, now time.Time) ModelPlan {
	mp := ModelPlan{Model: m.Config.Name, Running: m.Running, Starting: m.Starting, Depth: depth, Paused: paused}
	for _, q := range queues {
		mp.Waiting += q.Waiting
	}
	if m.State.Limit.Limit == 0 {
		// A model never steered starts at its initial limit, counted as a
		// raise so the next one waits for these launches to run.
		// A concurrency learned before (an operator's edit, a state
		// kept across runs) stays.
		l := initialLimit(m.Config)
		m.State.Limit = limits.State{Limit: l, RaisedAt: now, RaisedBy: l, Conc: m.State.Limit.Conc, ConcAt: m.State.Limit.ConcAt}
	}
	mp.State = m.State
	mp.Ack = m.Outcomes
	mp.State.Ended = m.State.Ended.Add(m.Outcomes.OK+m.Outcomes.ProviderFailed, now)
	gw := breaker.Gateway{Rate: mp.Depth.ErrorRate, Calls: mp.Depth.Calls, At: mp.Depth.ErrorAt}
	mp.Breaker = breaker.Step(cfg.Breaker, m.State.Breaker, m.Outcomes, gw, now)
	mp.State.Breaker = mp.Breaker.State

	lm := limits.Model{Target: m.Config.TargetDepth, Min: m.Config.MinLimit, Max: m.Config.MaxLimit, Pin: m.Config.LimitPin,
		Conc: float64(m.Config.ProviderConcurrency)}
	if mp.Breaker.State.Phase != breaker.Closed && m.Config.LimitPin == 0 {
		// An empty queue in front of a failing provider is not spare
		// capacity, nor is a queue of a few probes a measure of load:
		// the limit stays where it was before the provider failed, so
		// the model returns to it the pass the breaker closes.
		// Its jobs will fill it again, in dead time: a raise's launches.
		held := m.State.Limit.Refill(cfg.Limits, now, m.Running+m.Starting)
		mp.Limit = limits.Decision{State: held, Action: limits.Held, Reason: "hold: breaker " + string(mp.Breaker.State.Phase)}
	} else {
		mp.Limit = limits.Next(cfg.Limits, lm, m.State.Limit, limits.Input{
			Now: now, Depth: mp.Depth.Value, DepthAt: mp.Depth.At,
			Running: m.Running, Starting: m.Starting, Waiting: mp.Waiting,
			Ended: m.Outcomes.OK + m.Outcomes.ProviderFailed, PendingRaise: m.PendingRaise,
			Failing:   failing(cfg, gw, now),
			InService: mp.Depth.InService, InServiceAt: mp.Depth.InServiceAt,
		})
	}
	mp.State.Limit = mp.Limit.State
	return mp
}

// split water-fills the global cap by demand, then the launch budget by
// free slots: free is each model's slots under its limit, share, breaker
// and pace; budget is what this pass may launch of them.
func (plan *Plan) split(cfg Config, models []Model) (free, budget []int) {
	demand := make([]int, len(models))
	for i, mp := range plan.Models {
		held := mp.Running + mp.Starting
		demand[i] = demandOf(held, mp.State.Limit.Limit, mp.Waiting)
	}
	caps := capacity.Split(cfg.GlobalMaxRunning, demand)
	heldAll := 0
	for _, mp := range plan.Models {
		heldAll += mp.Running + mp.Starting
	}
	free = make([]int, len(models))
	for i := range plan.Models {
		mp := &plan.Models[i]
		mp.Capacity = caps[i]
		f := min(mp.State.Limit.Limit, mp.Capacity) - mp.Running - mp.Starting
		if mp.Breaker.Allow >= 0 {
			f = min(f, mp.Breaker.Allow)
		}
		if mp.Limit.Pace > 0 {
			f = min(f, mp.Limit.Pace)
		}
		if !models[i].Config.Enabled {
			f = 0
		}
		free[i] = max(0, min(f, mp.Waiting))
	}
	// A model above its share (the cap fell, or others' demand rose) holds
	// slots the shares of the others count as theirs: the headroom left
	// under the cap bounds the launches too.
	budget = capacity.Split(min(cfg.MaxLaunchesPerPass, max(0, cfg.GlobalMaxRunning-heldAll)), free)
	return free, budget
}

// admit hands each model's budget out: per model, tiers → projects in
// turn → oldest first, as grants of its queues.
func (plan *Plan) admit(cfg Config, models []Model, byModel map[string][]Queue, pins priority.Table, free, budget []int) {
	acfg := admission.Config{Tiers: cfg.Tiers, Weight: cfg.TierWeight}
	for i, m := range models {
		mp := &plan.Models[i]
		mp.Free = budget[i]
		queues := byModel[m.Config.Name]
		if mp.Free == 0 {
			// Nothing to hand out: skip building the batches (most models
			// in most passes).
			mp.Why = why(mp, m.Config.Enabled, free[i])
			continue
		}
		batches := AdmissionBatches(queues, pins, cfg.DefaultTier)
		index := make(map[string]int, len(batches))
		for j, b := range batches {
			index[b.ID] = j
		}
		res, st := admission.Plan(acfg, mp.Free, batches, m.State.Admission)
		mp.State.Admission = st
		mp.State.Breaker = mp.State.Breaker.Admitted(res.Admitted)
		mp.Admitted, mp.ByTier = res.Admitted, res.ByTier
		for _, g := range res.Grants {
			j := index[g.BatchID]
			mp.Grants = append(mp.Grants, Grant{Queue: queues[j].Key(), Tier: batches[j].Tier, Count: g.Count})
		}
		mp.Why = why(mp, m.Config.Enabled, free[i])
	}
}

// recordHeld records what admission left held against each limit, for
// the next pass's binding check: jobs that end before it free slots this
// pass filled.
func (plan *Plan) recordHeld() {
	for i := range plan.Models {
		mp := &plan.Models[i]
		mp.State.Limit.Held = mp.Running + mp.Starting + mp.Admitted
	}
}

// failing reports whether the gateway's fresh error rate says the provider
// fails (the breaker's threshold, within the limits' datapoint age): calls
// that fail fast leave the queue empty, which is no reason to raise.
func failing(cfg Config, gw breaker.Gateway, now time.Time) bool {
	maxAge := cfg.Limits.MaxAge
	if maxAge == 0 {
		maxAge = limits.DefaultConfig().MaxAge
	}
	return cfg.Breaker.GatewayThreshold > 0 && !gw.At.IsZero() && now.Sub(gw.At) <= maxAge &&
		gw.Calls > 0 && gw.Rate >= cfg.Breaker.GatewayThreshold
}

// groupQueues splits the queues by model, keeping their order, in one
// allocation for all of them.
func groupQueues(qs []Queue) map[string][]Queue {
	count := map[string]int{}
	for _, q := range qs {
		count[q.Model]++
	}
	backing := make([]Queue, 0, len(qs))
	out := make(map[string][]Queue, len(count))
	for _, q := range qs {
		if _, ok := out[q.Model]; !ok {
			start := len(backing)
			backing = backing[:start+count[q.Model]]
			out[q.Model] = backing[start : start : start+count[q.Model]]
		}
		out[q.Model] = append(out[q.Model], q)
	}
	return out
}

// why names the tightest constraint that keeps a model's jobs waiting.
func why(mp *ModelPlan, enabled bool, free int) string {
	rest := mp.Waiting - mp.Admitted
	if rest <= 0 {
		if mp.Paused > 0 {
			return fmt.Sprintf("%d paused", mp.Paused)
		}
		return ""
	}
	held := mp.Running + mp.Starting
	limit := mp.State.Limit.Limit
	var cause string
	switch {
	case !enabled:
		cause = "model disabled"
	case mp.Breaker.Allow == 0:
		cause = "breaker " + strings.ToLower(string(mp.Breaker.State.Phase))
	case mp.Breaker.Allow > 0 && mp.Admitted >= mp.Breaker.Allow:
		cause = fmt.Sprintf("breaker half-open, %d probes", mp.Breaker.Allow)
	case held+mp.Admitted >= limit && limit <= mp.Capacity:
		cause = fmt.Sprintf("limit %d reached", limit)
	case held+mp.Admitted >= mp.Capacity:
		cause = fmt.Sprintf("global cap leaves %d slots", mp.Capacity)
	case mp.Limit.Pace > 0 && mp.Admitted >= mp.Limit.Pace:
		cause = fmt.Sprintf("paced: %d launches this pass", mp.Limit.Pace)
	case mp.Admitted >= mp.Free && mp.Free < free:
		cause = fmt.Sprintf("launch budget leaves %d launches this pass", mp.Free)
	default:
		cause = "admitted all it could"
	}
	return fmt.Sprintf("%d wait: %s (%d running, %d starting)", rest, cause, mp.Running, mp.Starting)
}

// initialLimit is the limit of a model the scheduler has never steered.
// With the provider's concurrency configured it is at least that: a job
// calls the gateway one call at a time, so that many jobs cannot queue a
// call, and the provider is used from the first pass instead of after a
// container start, a metric delay and a raise.
func initialLimit(c ModelConfig) int {
	return max(c.InitialLimit, c.MinLimit, c.ProviderConcurrency, 1)
}

// demandOf is the slots a model would hold were the global cap no bound:
// what it holds, or more up to its limit while jobs wait.
func demandOf(held, limit, waiting int) int { return max(held, min(limit, held+waiting)) }

// AdmissionBatches are a model's queues as admission ranks them: each with
// the tier its pins give it (or the one submitted, or the default) and an
// id unique among them — names may contain "/", so a repeated
// account/project/batch gets its index appended.
func AdmissionBatches(queues []Queue, pins priority.Table, defaultTier int) []admission.Batch {
	batches := make([]admission.Batch, len(queues))
	seen := make(map[string]bool, len(queues))
	for j, q := range queues {
		tier, _ := pins.Tier(q.Account, q.Project, q.Batch, q.SubmittedTier, defaultTier)
		id := q.Account + "/" + q.Project + "/" + q.Batch
		if seen[id] {
			id = fmt.Sprintf("%s#%d", id, j)
		}
		seen[id] = true
		batches[j] = admission.Batch{ID: id, Project: q.Account + "/" + q.Project, Tier: tier, Seq: q.Seq, Waiting: q.Waiting}
	}
	return batches
}
