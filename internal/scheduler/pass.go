package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/limits"
)

// Scheduler runs passes against its adapters.
type Scheduler struct {
	Store    Store
	Depths   DepthReader
	Launcher Launcher
	Clock    Clock
	Config   Config
	Log      *slog.Logger // nil: slog.Default()
	// Sharing, when set with more than one shard, makes this a shard's
	// pass: with Loads set, each pass takes its caps from the shards'
	// loads (Sharing.ShareByLoad) instead of Config's static share, and
	// reports its own load after its claims.
	Sharing *Sharing
	// Loads is where the shards report their loads (the DynamoDB store's
	// SHARDS items); nil: every pass keeps Config's static share.
	Loads LoadStore
	// Rates is the launcher's token bucket, resized to the shard's share
	// of the account's launch rate each pass; nil: the launcher keeps the
	// rate it was built with.
	Rates RateSetter
	// Yield is the yield step's adapters; nil: the pass stops no task
	// (the limits still decide their yields, for the log).
	Yield *Yield
}

// Yield is where the yield step lists the jobs holding a slot (the
// store), reads the tiers they were admitted under (the store), and what
// stops their tasks (ECS).
type Yield struct {
	InFlight InFlightLister
	Stopper  TaskStopper
	// Tiers orders the yield by priority, in the tiers' weights
	// (YieldPick). nil: every job counts as one tier.
	Tiers JobTierReader
}

// LoadStore keeps what each shard reported of its last pass.
type LoadStore interface {
	ShardLoads(ctx context.Context) ([]ShardLoad, error)
	PutShardLoad(ctx context.Context, l ShardLoad) error
}

// RateSetter is a launcher's token bucket, which a shard's pass resizes to
// its share of the account's launch rate.
type RateSetter interface {
	SetRate(perSecond float64, burst int)
}

// Report is what one pass did, for the pass log line and metrics.
type Report struct {
	At       time.Time
	Duration time.Duration
	Plan     Plan
	Claimed  int
	Launched int
	Retried  int
	Failed   int
	Unknown  int // launches whose outcome is unknown: left to the reconciler
	Yielded  int // starting tasks the yield step stopped
	// DepthErr is set when the depths could not be read; limits held.
	DepthErr error
	// Share is a shard's caps for this pass when they came from the
	// shards' loads (zero otherwise: Config's).
	Share Caps
	// Stale names the models another pass committed since this one's
	// snapshot (Committed.Stale): the pass claimed nothing.
	Stale []string
}

// Pass runs one scheduler pass. An error means the pass did not commit; a
// pass whose launches partly failed still returns nil (the failures are in
// the report and the jobs went back to waiting or failed).
func (s *Scheduler) Pass(ctx context.Context) (Report, error) {
	now := s.Clock.Now()
	rep := Report{At: now}

	// snapshot
	snap, err := s.Store.Snapshot(ctx, now)
	if err != nil {
		return rep, fmt.Errorf("read snapshot: %w", err)
	}

	// depth, of every model with work: a failed read holds the limits
	// rather than failing the pass.
	var busy []string
	waiting := map[string]bool{}
	for _, q := range snap.Queues {
		waiting[q.Model] = true
	}
	for _, m := range snap.Models {
		if m.Running+m.Starting > 0 || waiting[m.Config.Name] {
			busy = append(busy, m.Config.Name)
		}
	}
	depths := map[string]Depth{}
	if len(busy) > 0 && s.Depths != nil {
		d, err := s.Depths.Depths(ctx, busy, now)
		if err != nil {
			rep.DepthErr = err
			s.log().Warn("depth read failed; limits hold", "err", err)
		} else {
			depths = d
		}
	}

	// decide, with this shard's share of the caps.
	cfg, loads := s.share(ctx, snap, now, &rep)
	plan := Decide(cfg, snap, depths, now)
	rep.Plan = plan

	// claim, conditioned on what the snapshot read.
	committed, err := s.Store.Commit(ctx, plan, snap.Versions)
	if err != nil {
		return rep, fmt.Errorf("commit plan: %w", err)
	}
	if len(committed.Stale) > 0 {
		rep.Stale = committed.Stale
		return rep, fmt.Errorf("commit plan: %w (%s)", ErrStale, strings.Join(committed.Stale, ", "))
	}
	jobs := committed.Claimed
	rep.Claimed = len(jobs)
	if loads != nil {
		// Best effort: a shard whose report goes stale is reserved its
		// static share by the others.
		if err := loads.PutShardLoad(ctx, LoadAfter(s.Sharing.Shard, plan, jobs, now)); err != nil {
			s.log().Warn("report shard load", "err", err)
		}
	}

	// launch, then record.
	if len(jobs) > 0 {
		results := s.Launcher.Launch(ctx, jobs)
		for _, r := range results {
			switch r.Status {
			case Launched:
				rep.Launched++
			case Retry:
				rep.Retried++
			case Unknown:
				rep.Unknown++
			default:
				rep.Failed++
			}
		}
		if err := s.Store.RecordLaunches(ctx, s.Clock.Now(), results); err != nil {
			return rep, fmt.Errorf("record launches: %w", err)
		}
		if len(results) != len(jobs) {
			return rep, errors.New("launcher returned a result count unlike the jobs given; the reconciler repairs the rest")
		}
	}
	s.yield(ctx, plan, &rep)
	rep.Duration = s.Clock.Now().Sub(now)
	return rep, nil
}

// yield stops the tasks still starting that the limits gave up
// (limits.Decision.Yield; YieldPick chooses which). Best effort:
// a task not stopped starts as it would have, so a failure is logged and
// the pass goes on.
func (s *Scheduler) yield(ctx context.Context, plan Plan, rep *Report) {
	want := map[string]int{}
	for _, mp := range plan.Models {
		if mp.Limit.Yield > 0 {
			want[mp.Model] = mp.Limit.Yield
		}
	}
	if len(want) == 0 || s.Yield == nil {
		return
	}
	inflight, err := s.Yield.InFlight.InFlight(ctx)
	if err != nil {
		s.log().Warn("yield: list jobs in flight; no task stopped", "err", err)
		return
	}
	var tiers map[string]int
	if s.Yield.Tiers != nil {
		if tiers, err = s.Yield.Tiers.JobTiers(ctx, yieldCandidates(inflight, want)); err != nil {
			// Best effort, as the stops are: without the tiers the yield
			// still takes from the project holding the most slots.
			s.log().Warn("yield: read the tiers of the jobs starting; yielding without them", "err", err)
			tiers = nil
		}
	}
	jobs := YieldPick(inflight, want, tiers, s.Config.TierWeight)
	n, err := s.Yield.Stopper.Stop(ctx, jobs)
	rep.Yielded = n
	if err != nil {
		s.log().Warn("yield: some tasks not stopped; they start as they would have", "stopped", n, "of", len(jobs), "err", err)
	}
}

// yieldCandidate reports whether the yield may stop f: launched with a
// task, not yet running, and not at the last attempt number
// (job.MaxAttemptNumber: no attempt is left to launch it again under). A
// claimed job without a task yet is left: its RunTask may be in flight.
func yieldCandidate(f InFlight) bool {
	return f.State == string(job.Launched) && f.TaskARN != "" && f.Attempt < job.MaxAttemptNumber
}

// yieldCandidates are the ids of the jobs YieldPick chooses among.
func yieldCandidates(inflight []InFlight, want map[string]int) []string {
	var ids []string
	for _, f := range inflight {
		if want[f.Model] > 0 && yieldCandidate(f) {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// YieldPick chooses the tasks to stop: of each model in want, that many of
// its launched jobs not yet running (yieldCandidate), one at a time.
//
// Each comes from the tier whose starts are furthest above their weighted
// share of the model's starts (tiers: the tier each job was admitted
// under, by id, a job not in it counting as tier 0; weight:
// Config.TierWeight, each tier's share of what the more urgent ones leave,
// as admission splits slots), the less urgent on a tie. The jobs still
// starting are the newest admissions, and a yield undoes them in the
// tiers' weights: a drain neither stops an urgent batch's starts while a
// backfill's, over its share, start on, nor makes the backfill alone give
// every slot back (a lower tier would then run less than its weight for
// good). Only the starting jobs' tiers are read: the running ones may be
// thousands. Within the tier, the project holding the most of the model's
// slots gives first, so a drain's trickle that admitted a small batch's
// job (projects take turns) is not taken back from it; within a project
// the newest claim goes first (the furthest from running, so the least
// start thrown away).
func YieldPick(inflight []InFlight, want map[string]int, tiers map[string]int, weight float64) []InFlight {
	type project struct{ model, account, name string }
	type group struct {
		project
		tier int
	}
	held := map[project]int{}
	starting := map[modelTier]int{} // the candidates by tier
	candidates := map[group][]InFlight{}
	for _, f := range inflight {
		if want[f.Model] == 0 {
			continue
		}
		p := project{f.Model, f.Account, f.Project}
		held[p]++
		if yieldCandidate(f) {
			g := group{p, tiers[f.ID]}
			candidates[g] = append(candidates[g], f)
			starting[modelTier{f.Model, g.tier}]++
		}
	}
	for _, fs := range candidates {
		// Oldest first: the newest is popped from the end.
		slices.SortFunc(fs, func(a, b InFlight) int {
			return cmp.Or(a.ClaimedAt.Compare(b.ClaimedAt), cmp.Compare(b.ID, a.ID))
		})
	}
	groups := slices.SortedFunc(maps.Keys(candidates), func(a, b group) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.account, b.account), cmp.Compare(a.name, b.name), cmp.Compare(a.tier, b.tier))
	})
	var out []InFlight
	for _, model := range slices.Sorted(maps.Keys(want)) {
		for range want[model] {
			over := overShare(starting, model, weight)
			// before reports whether g gives before b.
			before := func(g, b group) bool {
				if d := over[g.tier] - over[b.tier]; math.Abs(d) > 1e-9 {
					return d > 0
				}
				if g.tier != b.tier {
					return g.tier > b.tier
				}
				return held[g.project] > held[b.project]
			}
			best := -1
			for i, g := range groups {
				if g.model == model && len(candidates[g]) > 0 && (best < 0 || before(g, groups[best])) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			g := groups[best]
			fs := candidates[g]
			out = append(out, fs[len(fs)-1])
			candidates[g], held[g.project] = fs[:len(fs)-1], held[g.project]-1
			starting[modelTier{model, g.tier}]--
		}
	}
	return out
}

// modelTier names one tier of one model's slots.
type modelTier struct {
	model string
	tier  int
}

// overShare is, for each tier of model in held (jobs by model and tier),
// the jobs it holds beyond its weighted share of the model's: the most
// urgent tier holding any is due weight of them, each next one weight of
// what the ones before leave, the least urgent the rest.
func overShare(held map[modelTier]int, model string, weight float64) map[int]float64 {
	var present []int
	total := 0
	for k, n := range held {
		if k.model == model && n > 0 {
			present = append(present, k.tier)
			total += n
		}
	}
	slices.Sort(present)
	over := make(map[int]float64, len(present))
	left := float64(total)
	for i, t := range present {
		due := left
		if i < len(present)-1 {
			due = weight * left
		}
		left -= due
		over[t] = float64(held[modelTier{model, t}]) - due
	}
	return over
}

// share returns the configuration of this pass: Config, or for a shard
// with Loads, Config with the caps ShareByLoad gives it (Rates set to
// match). It returns the load store to report to, nil when the caps are
// Config's.
func (s *Scheduler) share(ctx context.Context, snap Snapshot, now time.Time, rep *Report) (Config, LoadStore) {
	cfg := s.Config
	if s.Sharing == nil || s.Sharing.Shards <= 1 || s.Loads == nil {
		return cfg, nil
	}
	loads, rs := s.Loads, s.Rates
	peers, err := loads.ShardLoads(ctx)
	if err != nil {
		// Config's caps are the static share; the launcher's bucket, which
		// an earlier pass may have sized by load, goes back to it too.
		s.log().Warn("read shard loads; this pass keeps the static share", "err", err)
		if rs != nil {
			static := s.Sharing.Account.Share(s.Sharing.Shard, s.Sharing.Shards)
			rs.SetRate(static.LaunchRate, static.LaunchBurst)
		}
		return cfg, loads
	}
	share := s.Sharing.ShareByLoad(LoadNow(s.Sharing.Shard, snap, now), peers, now)
	cfg.GlobalMaxRunning, cfg.MaxLaunchesPerPass = share.GlobalMaxRunning, share.MaxLaunchesPerPass
	if rs != nil {
		rs.SetRate(share.LaunchRate, share.LaunchBurst)
	}
	rep.Share = share
	return cfg, loads
}

func (s *Scheduler) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// LogModelsPerLine bounds the models in one log line of a report: a
// model's decision is ~300 bytes and CloudWatch Logs takes events of up to
// 256 KB (Lambda cuts longer lines), so 200 keep a line under ~70 KB.
const LogModelsPerLine = 200

// LogValue makes a report one structured log line: the summary and every
// model that did something. Past LogModelsPerLine such models, log Lines.
func (r Report) LogValue() slog.Value {
	return slog.GroupValue(append(r.summaryAttrs(), r.modelAttrs()...)...)
}

// Lines splits a report into log lines of at most perLine models each: the
// first carries the summary and, when there are more, "models" (how many in
// all) and "part"; each later one "part" and its models only.
func (r Report) Lines(perLine int) []slog.Value {
	return r.lines(perLine, r.modelAttrs())
}

// LinesBesideMetrics is Lines for a pass whose per-model values are also
// written as EMF (emf.WriteShard: a document or, lean, a plain line per busy
// model, with its limit, reason, depth, counts, admissions by tier and
// breaker): a busy model's group keeps only what those lack — why its jobs
// wait and its breaker's phase when not closed — and is left out when it
// has neither; an idle model whose limit moved (which has no EMF line)
// keeps its whole group. The values once, not twice: at the seed's 241
// busy models the pass's log is about a third smaller (evalsched cost).
func (r Report) LinesBesideMetrics(perLine int) []slog.Value {
	var attrs []slog.Attr
	for _, m := range r.Plan.Models {
		if m.Running+m.Starting+m.Waiting == 0 {
			if a, ok := modelAttr(m); ok {
				attrs = append(attrs, a)
			}
			continue
		}
		var g []any
		if m.Why != "" {
			g = append(g, slog.String("why_waiting", m.Why))
		}
		if p := m.Breaker.State.Phase; p != "" && p != breaker.Closed {
			g = append(g, slog.String("breaker", string(p)))
		}
		if len(g) > 0 {
			attrs = append(attrs, slog.Group(m.Model, g...))
		}
	}
	return r.lines(perLine, attrs)
}

func (r Report) lines(perLine int, models []slog.Attr) []slog.Value {
	if perLine <= 0 || len(models) <= perLine {
		return []slog.Value{slog.GroupValue(append(r.summaryAttrs(), models...)...)}
	}
	parts := (len(models) + perLine - 1) / perLine
	var out []slog.Value
	for p := range parts {
		var attrs []slog.Attr
		if p == 0 {
			attrs = append(r.summaryAttrs(), slog.Int("models", len(models)))
		} else {
			attrs = []slog.Attr{slog.Time("at", r.At)}
		}
		attrs = append(attrs, slog.String("part", fmt.Sprintf("%d/%d", p+1, parts)))
		attrs = append(attrs, models[p*perLine:min((p+1)*perLine, len(models))]...)
		out = append(out, slog.GroupValue(attrs...))
	}
	return out
}

func (r Report) summaryAttrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.Time("at", r.At),
		slog.Duration("duration", r.Duration),
		slog.Int("claimed", r.Claimed),
		slog.Int("launched", r.Launched),
		slog.Int("retried", r.Retried),
		slog.Int("failed", r.Failed),
	}
	if r.Unknown > 0 {
		attrs = append(attrs, slog.Int("unknown", r.Unknown))
	}
	if r.Yielded > 0 {
		attrs = append(attrs, slog.Int("yielded", r.Yielded))
	}
	if r.Share != (Caps{}) {
		attrs = append(attrs, slog.Group("share",
			slog.Int("global_max_running", r.Share.GlobalMaxRunning),
			slog.Int("launches", r.Share.MaxLaunchesPerPass),
			slog.Float64("launch_rate", r.Share.LaunchRate)))
	}
	if len(r.Plan.Warnings) > 0 {
		attrs = append(attrs, slog.Any("warnings", r.Plan.Warnings))
	}
	return attrs
}

// modelAttrs are the models that hold, wait for or changed something.
func (r Report) modelAttrs() []slog.Attr {
	var attrs []slog.Attr
	for _, m := range r.Plan.Models {
		if a, ok := modelAttr(m); ok {
			attrs = append(attrs, a)
		}
	}
	return attrs
}

// modelAttr is a model's decision, if it holds, waits for or changed
// something.
func modelAttr(m ModelPlan) (slog.Attr, bool) {
	if m.Running+m.Starting+m.Waiting == 0 && m.Limit.Action != limits.Raised && m.Limit.Action != limits.Lowered {
		return slog.Attr{}, false
	}
	return slog.Group(m.Model,
		slog.Float64("depth", m.Depth.Value),
		slog.Int("limit", m.State.Limit.Limit),
		slog.String("limit_reason", m.Limit.Reason),
		slog.Int("running", m.Running),
		slog.Int("starting", m.Starting),
		slog.Int("waiting", m.Waiting),
		slog.Int("admitted", m.Admitted),
		slog.Any("admitted_by_tier", m.ByTier),
		slog.String("breaker", string(m.Breaker.State.Phase)),
		slog.String("why_waiting", m.Why),
	), true
}
