package status

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/forecast"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// View is the state of the system as the next pass would see it: the
// snapshot and a dry run of Decide (nothing is claimed or written).
type View struct {
	At      time.Time             `json:"at"`
	Models  []ModelView           `json:"models"`
	Batches []BatchView           `json:"batches"`
	Warns   []string              `json:"warnings,omitempty"`
	Shards  []ShardView           `json:"shards,omitempty"` // a sharded scheduler's shares, by load
	plan    scheduler.Plan        // the dry run
	pins    priority.Table        // compiled pins
	pauses  scheduler.Pauses      // the scopes paused
	queues  []scheduler.Queue     // the snapshot's queues
	byModel map[string]*ModelView // index into Models
	pass    time.Duration         // one scheduler pass
}

type ModelView struct {
	Model       string  `json:"model"`
	Limit       int     `json:"limit"`
	LimitReason string  `json:"limit_reason"`
	Depth       float64 `json:"depth"`
	DepthAgeS   float64 `json:"depth_age_s"` // -1: never seen
	Target      float64 `json:"target_depth"`
	// SteerTarget is the target depth the controller steers to: the
	// operator's, at most 5 % of the jobs running (limits.State.SteerTarget).
	SteerTarget float64 `json:"steer_target_depth"`
	// ProviderConc is the model item's provider_concurrency (0: not
	// given); SeenConc the concurrency learned from the gateway, the calls
	// in service in a period that queued a call (0: not learned, or the
	// provider has since served more), kept on the model's state item as
	// learned_concurrency, and SeenConcAgeS how long ago (-1: no time).
	// The limit controller's knee comes from the learned one, else the set
	// one; a learned one is used as a set one while fresh (SeenConcFresh).
	ProviderConc  int     `json:"provider_concurrency"`
	SeenConc      float64 `json:"seen_concurrency"`
	SeenConcAgeS  float64 `json:"seen_concurrency_age_s"`
	SeenConcFresh bool    `json:"seen_concurrency_fresh"`
	Running       int     `json:"running"`
	Starting      int     `json:"starting"`
	Waiting       int     `json:"waiting"`
	Breaker       string  `json:"breaker"`
	NextAdmit     int     `json:"next_pass_admits"`
	Why           string  `json:"why_waiting,omitempty"`
	Paused        int     `json:"paused"`
	// EndedPerMin is the rate jobs end, smoothed over ~30 minutes
	// (forecast.EndRate); DrainS the time the waiting jobs take at that rate (-1:
	// unknown).
	EndedPerMin float64 `json:"ended_per_min"`
	DrainS      float64 `json:"drain_s"`
	Enabled     bool    `json:"enabled"`
	// Malformed is why the model's item was skipped: its jobs wait until
	// it is fixed. NoItem: jobs name the model but it has no item.
	Malformed string `json:"malformed,omitempty"`
	NoItem    bool   `json:"no_model_item,omitempty"`
}

// waitingCell is the model's WAITING cell: the jobs the pass may admit,
// and those of paused batches beside them ("0 +19110 paused").
func (m ModelView) waitingCell() string {
	if m.Paused > 0 {
		return fmt.Sprintf("%d +%d paused", m.Waiting, m.Paused)
	}
	return fmt.Sprint(m.Waiting)
}

// waitingText is waitingCell in a sentence, for why.
func (m ModelView) waitingText() string {
	if m.Paused > 0 {
		return fmt.Sprintf("%d waiting and %d paused", m.Waiting, m.Paused)
	}
	return fmt.Sprintf("%d waiting", m.Waiting)
}

// drainText is the model's DRAINS IN cell: a disabled model drains
// nothing, and paused jobs do not drain until resumed.
func (m ModelView) drainText() string {
	switch {
	case !m.Enabled && m.Malformed == "" && !m.NoItem:
		return "never (disabled)"
	case m.Waiting == 0 && m.Paused > 0:
		return "paused"
	}
	return cliout.Human(m.DrainS)
}

// note is the model's NOTE cell: what keeps it from admitting anything.
func (m ModelView) note() string {
	switch {
	case m.Malformed != "":
		return "MALFORMED item, its jobs wait: " + m.Malformed
	case m.NoItem:
		return "no model item, its jobs wait"
	case !m.Enabled:
		return "disabled"
	}
	return ""
}

type BatchView struct {
	Batch      string `json:"batch"`
	Model      string `json:"model"`
	Tier       int    `json:"tier"`
	TierSource string `json:"tier_source"`
	Waiting    int    `json:"waiting"`
	// Registered counts the batch's jobs of this model registered so far:
	// Registered − Waiting have been admitted (started, running or ended).
	Registered int    `json:"registered"`
	NextAdmit  int    `json:"next_pass_admits"`
	PausedBy   string `json:"paused_by,omitempty"`
	Parts      string `json:"parts,omitempty"` // "3/4" while a multi-part batch is still arriving
	// ETAS forecasts when the batch's last waiting job starts and DoneS
	// when it ends, in seconds from now (-1: unknown): the model's admission
	// stepped forward at its recent end rate (internal/forecast).
	ETAS  float64 `json:"eta_s"`
	DoneS float64 `json:"done_eta_s"`
	// Jobs counts the batch's jobs by state (status --all and why), finished
	// batches included.
	Jobs *BatchRow `json:"jobs,omitempty"`
	// Sampling is a sampled batch's estimate (sampled.go).
	Sampling *SampledView `json:"sampling,omitempty"`
}

// admitted counts the batch's jobs admitted so far: those registered that
// neither wait nor were skipped (a sampled batch's rest never runs).
func (b BatchView) admitted() int {
	n := b.Registered - b.Waiting
	if b.Jobs != nil {
		n -= b.Jobs.Skipped
	}
	return n
}

// Store is what Look reads: *dynamostore.Store has it.
type Store interface {
	Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error)
	scheduler.LoadStore
	batchLister
	partsReader
	sampledReader
}

// Look reads the store and dry-runs the next pass at now with the
// deployment's configuration; counts (when not nil) adds the jobs by state
// of every batch inside it, finished ones included.
func Look(ctx context.Context, st Store, cfg config.Config, now time.Time, counts *scheduler.Scope) (*View, error) {
	snap, err := st.Snapshot(ctx, now)
	if err != nil {
		return nil, err
	}
	// The whole account's pass, as one scheduler would run it; dryRun
	// divides it among the shards as their passes would.
	account := cfg
	account.Shards = 1
	sc := account.Pass(0)
	// The depth the last pass saw, from each model's state: status reads no
	// CloudWatch, so it works with DynamoDB access alone.
	depths := map[string]scheduler.Depth{}
	for _, m := range snap.Models {
		if l := m.State.Limit; !l.SeenAt.IsZero() {
			depths[m.Config.Name] = scheduler.Depth{Value: l.Smoothed, At: l.SeenAt}
		}
	}
	plan, shards, err := dryRun(ctx, st, account.Caps(), sc, snap, depths, now, cfg.PassInterval)
	if err != nil {
		return nil, err
	}
	v := &View{At: now, plan: plan, queues: snap.Queues, byModel: map[string]*ModelView{}, pass: cfg.PassInterval, Shards: shards,
		Models: []ModelView{}, Batches: []BatchView{}} // [] in --json, not null, when there are none
	v.Warns = v.plan.Warnings
	v.pins, _ = priority.Compile(snap.Pins, sc.Tiers, now)
	v.pauses = scheduler.PausesOf(snap.Pauses)
	admits := v.addModels(snap, sc, now)
	parts, err := batchParts(ctx, st, snap.Queues)
	if err != nil {
		return nil, err
	}
	etas := forecast.Queues(forecast.DefaultConfig(cfg.PassInterval), sc, snap, v.plan, now)
	for i, q := range snap.Queues {
		tier, src := v.pins.Tier(q.Account, q.Project, q.Batch, q.SubmittedTier, sc.DefaultTier)
		pausedBy, _ := v.pauses.By(q.Account, q.Project, q.Batch)
		v.Batches = append(v.Batches, BatchView{
			Batch: q.Account + "/" + q.Project + "/" + q.Batch, Model: q.Model, Tier: tier, TierSource: string(src),
			Waiting: q.Waiting, Registered: q.Registered, NextAdmit: admits[q.Key()], PausedBy: pausedBy,
			Parts: parts[q.Account+"/"+q.Project+"/"+q.Batch],
			ETAS:  etas[i].StartS, DoneS: etas[i].DoneS,
		})
	}
	if counts != nil {
		if err := v.addCounts(ctx, st, *counts, sc.DefaultTier); err != nil {
			return nil, err
		}
	}
	if err := v.addSampling(ctx, st); err != nil {
		return nil, err
	}
	// A sampled batch is expected to stop early: its ETA is that of the
	// jobs it is expected still to admit, not of every waiting one.
	if short, ok := expectedWaiting(snap.Queues, v.Batches); ok {
		snap.Queues = short
		etas = forecast.Queues(forecast.DefaultConfig(cfg.PassInterval), sc, snap, v.plan, now)
		for i := range snap.Queues {
			v.Batches[i].ETAS, v.Batches[i].DoneS = etas[i].StartS, etas[i].DoneS
		}
	}
	return v, nil
}

// addModels adds a row per model of the dry run, and one per model whose
// jobs wait without a valid item; it returns the jobs the next pass admits
// of each queue.
func (v *View) addModels(snap scheduler.Snapshot, sc scheduler.Config, now time.Time) map[scheduler.QueueKey]int {
	configs := map[string]scheduler.ModelConfig{}
	for _, m := range snap.Models {
		configs[m.Config.Name] = m.Config
	}
	admits := map[scheduler.QueueKey]int{}
	for _, mp := range v.plan.Models {
		v.Models = append(v.Models, modelRow(mp, configs[mp.Model], sc, now))
		for _, g := range mp.Grants {
			admits[g.Queue] += g.Count
		}
	}
	// Models whose jobs wait without a model (a malformed item, none at
	// all) keep a row, marked, with the jobs that wait for it.
	orphans := map[string]int{}
	for _, q := range snap.Queues {
		if _, planned := configs[q.Model]; !planned {
			orphans[q.Model] += q.Waiting
		}
	}
	for name := range snap.Skipped {
		if _, ok := orphans[name]; !ok {
			orphans[name] = 0
		}
	}
	for _, name := range slices.Sorted(maps.Keys(orphans)) {
		reason, malformed := snap.Skipped[name]
		v.Models = append(v.Models, ModelView{Model: name, Waiting: orphans[name], Breaker: "-", DepthAgeS: -1, DrainS: -1,
			Malformed: reason, NoItem: !malformed, LimitReason: "no valid model item"})
	}
	for i := range v.Models {
		v.byModel[v.Models[i].Model] = &v.Models[i]
	}
	return admits
}

// modelRow is a model's row of the dry run's plan.
func modelRow(mp scheduler.ModelPlan, mc scheduler.ModelConfig, sc scheduler.Config, now time.Time) ModelView {
	age := -1.0
	if !mp.Depth.At.IsZero() {
		age = now.Sub(mp.Depth.At).Seconds()
	}
	phase := string(mp.State.Breaker.Phase)
	if phase == "" {
		phase = "CLOSED"
	}
	rate, drain := forecast.EndRate(mp.State, now), -1.0
	if rate > 0 {
		drain = float64(mp.Waiting) / rate * 60
	}
	ls := mp.State.Limit
	concAge := -1.0
	if ls.Conc > 0 && !ls.ConcAt.IsZero() {
		concAge = now.Sub(ls.ConcAt).Seconds()
	}
	return ModelView{
		EndedPerMin: rate, DrainS: drain,
		Model: mp.Model, Limit: ls.Limit, LimitReason: mp.Limit.Reason, Depth: mp.Depth.Value, DepthAgeS: age,
		Target: mc.TargetDepth, SteerTarget: ls.SteerTarget(sc.Limits, mc.TargetDepth, mp.Running),
		ProviderConc: mc.ProviderConcurrency, SeenConc: ls.Conc, SeenConcAgeS: concAge, SeenConcFresh: ls.LearnedFresh(sc.Limits, now),
		Running: mp.Running, Starting: mp.Starting, Waiting: mp.Waiting,
		Breaker: phase, NextAdmit: mp.Admitted, Why: mp.Why, Paused: mp.Paused, Enabled: mc.Enabled,
	}
}

// expectedWaiting is the queues with each sampled batch's waiting jobs cut
// to those it is expected to admit before its stop rule holds (the results
// expected at the stop, less its jobs admitted so far); ok false when no
// queue is cut. bs[i] is queues[i]'s batch.
func expectedWaiting(queues []scheduler.Queue, bs []BatchView) ([]scheduler.Queue, bool) {
	out, cut := slices.Clone(queues), false
	for i, q := range queues {
		sv := bs[i].Sampling
		if sv == nil || sv.ExpectedResults < 0 {
			continue
		}
		if left := max(0, sv.ExpectedResults-(q.Registered-q.Waiting)); left < q.Waiting {
			out[i].Waiting, cut = left, true
		}
	}
	return out, cut
}

// addCounts gives each batch its jobs by state, and adds the batches none
// of whose jobs wait (running or finished).
func (v *View) addCounts(ctx context.Context, st batchLister, scope scheduler.Scope, defaultTier int) error {
	rows, err := ListBatches(ctx, st, scope)
	if err != nil {
		return err
	}
	index := map[[2]string]int{}
	for i, b := range v.Batches {
		index[[2]string{b.Batch, b.Model}] = i
	}
	for _, r := range rows {
		if i, ok := index[[2]string{r.Batch, r.Model}]; ok {
			v.Batches[i].Jobs = &r
			continue
		}
		s := scopeOf(r.Batch)
		tier, src := v.pins.Tier(s.Account, s.Project, s.Batch, r.SubmittedTier, defaultTier)
		pausedBy, _ := v.pauses.By(s.Account, s.Project, s.Batch)
		v.Batches = append(v.Batches, BatchView{Batch: r.Batch, Model: r.Model, Tier: tier, TierSource: string(src),
			Registered: r.Registered, PausedBy: pausedBy, ETAS: -1, DoneS: -1, Jobs: &r})
	}
	return nil
}

// modelOf is the model a batch waits for; a model without a row is one
// without an item.
func (v *View) modelOf(name string) ModelView {
	if m, ok := v.byModel[name]; ok {
		return *m
	}
	return ModelView{Model: name, Breaker: "-", DrainS: -1, DepthAgeS: -1, NoItem: true}
}

// partsReader is what batchParts needs of a store.
type partsReader interface {
	BatchParts(ctx context.Context, account, project, batch string) (seen []int, total int, err error)
}

// batchParts reads, for each batch of the queues, "3/4" while a multi-part
// batch is still arriving ("" once whole): one read per batch, 16 at a time
// (10,000 batches one after another would take minutes).
func batchParts(ctx context.Context, st partsReader, queues []scheduler.Queue) (map[string]string, error) {
	var ids [][3]string
	parts := map[string]string{}
	for _, q := range queues {
		id := q.Account + "/" + q.Project + "/" + q.Batch
		if _, dup := parts[id]; !dup {
			parts[id] = ""
			ids = append(ids, [3]string{q.Account, q.Project, q.Batch})
		}
	}
	out := make([]string, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, b := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			seen, total, err := st.BatchParts(ctx, b[0], b[1], b[2])
			if err == nil && total > 0 && len(seen) < total {
				out[i] = fmt.Sprintf("%d/%d", len(seen), total)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, b := range ids {
		parts[b[0]+"/"+b[1]+"/"+b[2]] = out[i]
	}
	return parts, nil
}

// scopeOf splits a batch's ACCOUNT/PROJECT/BATCH at its first two
// separators, as the CLI reads a scope.
func scopeOf(batch string) scheduler.Scope {
	var s scheduler.Scope
	s.Account, batch, _ = strings.Cut(batch, "/")
	s.Project, s.Batch, _ = strings.Cut(batch, "/")
	return s
}
