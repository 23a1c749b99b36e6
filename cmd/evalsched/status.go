package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/evalsched/evalsched/internal/forecast"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

var statusCommand = command{
	name:    "status",
	summary: "per model: limit, depth, running, waiting, breaker and what the next pass would do; per batch: tier, waiting and a forecast of its start and end",
	run:     runStatus,
}

var whyCommand = command{
	name:    "why",
	summary: "why a batch's jobs wait: its tier and where it came from, its model's limit, depth, breaker and share",
	run:     runWhy,
}

// view is the state of the system as the next pass would see it: the
// snapshot and a dry run of Decide (nothing is claimed or written).
type view struct {
	At      time.Time             `json:"at"`
	Models  []modelView           `json:"models"`
	Batches []batchView           `json:"batches"`
	Warns   []string              `json:"warnings,omitempty"`
	Shards  []shardView           `json:"shards,omitempty"` // a sharded scheduler's shares, by load
	plan    scheduler.Plan        // the dry run
	pins    priority.Table        // compiled pins
	pauses  scheduler.Pauses      // the scopes paused
	queues  []scheduler.Queue     // the snapshot's queues
	byModel map[string]*modelView // index into Models
	pass    time.Duration         // one scheduler pass
}

type modelView struct {
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
func (m modelView) waitingCell() string {
	if m.Paused > 0 {
		return fmt.Sprintf("%d +%d paused", m.Waiting, m.Paused)
	}
	return fmt.Sprint(m.Waiting)
}

// waitingText is waitingCell in a sentence, for why.
func (m modelView) waitingText() string {
	if m.Paused > 0 {
		return fmt.Sprintf("%d waiting and %d paused", m.Waiting, m.Paused)
	}
	return fmt.Sprintf("%d waiting", m.Waiting)
}

// drainText is the model's DRAINS IN cell: a disabled model drains
// nothing, and paused jobs do not drain until resumed.
func (m modelView) drainText() string {
	switch {
	case !m.Enabled && m.Malformed == "" && !m.NoItem:
		return "never (disabled)"
	case m.Waiting == 0 && m.Paused > 0:
		return "paused"
	}
	return human(m.DrainS)
}

// note is the model's NOTE cell: what keeps it from admitting anything.
func (m modelView) note() string {
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

type batchView struct {
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
	Jobs *batchRow `json:"jobs,omitempty"`
	// Sampling is a sampled batch's estimate (sampled.go).
	Sampling *sampledView `json:"sampling,omitempty"`
}

// admitted counts the batch's jobs admitted so far: those registered that
// neither wait nor were skipped (a sampled batch's rest never runs).
func (b batchView) admitted() int {
	n := b.Registered - b.Waiting
	if b.Jobs != nil {
		n -= b.Jobs.Skipped
	}
	return n
}

// look reads the store and dry-runs the next pass at now; counts (when not
// nil) adds the jobs by state of every batch inside it, finished ones
// included.
func look(ctx context.Context, sf storeFlags, now time.Time, counts *scheduler.Scope) (*view, error) {
	st, cfg, err := sf.open(ctx)
	if err != nil {
		return nil, err
	}
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
	v := &view{At: now, plan: plan, queues: snap.Queues, byModel: map[string]*modelView{}, pass: cfg.PassInterval, Shards: shards,
		Models: []modelView{}, Batches: []batchView{}} // [] in --json, not null, when there are none
	v.Warns = v.plan.Warnings
	v.pins, _ = priority.Compile(snap.Pins, sc.Tiers, now)
	v.pauses = scheduler.PausesOf(snap.Pauses)
	configs := map[string]scheduler.ModelConfig{}
	for _, m := range snap.Models {
		configs[m.Config.Name] = m.Config
	}
	admits := map[scheduler.QueueKey]int{}
	for _, mp := range v.plan.Models {
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
		mc := configs[mp.Model]
		ls := mp.State.Limit
		concAge := -1.0
		if ls.Conc > 0 && !ls.ConcAt.IsZero() {
			concAge = now.Sub(ls.ConcAt).Seconds()
		}
		v.Models = append(v.Models, modelView{
			EndedPerMin: rate, DrainS: drain,
			Model: mp.Model, Limit: ls.Limit, LimitReason: mp.Limit.Reason, Depth: mp.Depth.Value, DepthAgeS: age,
			Target: mc.TargetDepth, SteerTarget: ls.SteerTarget(sc.Limits, mc.TargetDepth, mp.Running),
			ProviderConc: mc.ProviderConcurrency, SeenConc: ls.Conc, SeenConcAgeS: concAge, SeenConcFresh: ls.LearnedFresh(sc.Limits, now),
			Running: mp.Running, Starting: mp.Starting, Waiting: mp.Waiting,
			Breaker: phase, NextAdmit: mp.Admitted, Why: mp.Why, Paused: mp.Paused, Enabled: mc.Enabled,
		})
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
		v.Models = append(v.Models, modelView{Model: name, Waiting: orphans[name], Breaker: "-", DepthAgeS: -1, DrainS: -1,
			Malformed: reason, NoItem: !malformed, LimitReason: "no valid model item"})
	}
	for i := range v.Models {
		v.byModel[v.Models[i].Model] = &v.Models[i]
	}
	parts, err := batchParts(ctx, st, snap.Queues)
	if err != nil {
		return nil, err
	}
	etas := forecast.Queues(forecast.DefaultConfig(cfg.PassInterval), sc, snap, v.plan, now)
	for i, q := range snap.Queues {
		tier, src := v.pins.Tier(q.Account, q.Project, q.Batch, q.SubmittedTier, sc.DefaultTier)
		pausedBy, _ := v.pauses.By(q.Account, q.Project, q.Batch)
		v.Batches = append(v.Batches, batchView{
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

// expectedWaiting is the queues with each sampled batch's waiting jobs cut
// to those it is expected to admit before its stop rule holds (the results
// expected at the stop, less its jobs admitted so far); ok false when no
// queue is cut. bs[i] is queues[i]'s batch.
func expectedWaiting(queues []scheduler.Queue, bs []batchView) ([]scheduler.Queue, bool) {
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
func (v *view) addCounts(ctx context.Context, st batchLister, scope scheduler.Scope, defaultTier int) error {
	rows, err := listBatches(ctx, st, scope)
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
		s, _, _ := parseScope(r.Batch)
		tier, src := v.pins.Tier(s.Account, s.Project, s.Batch, r.SubmittedTier, defaultTier)
		pausedBy, _ := v.pauses.By(s.Account, s.Project, s.Batch)
		v.Batches = append(v.Batches, batchView{Batch: r.Batch, Model: r.Model, Tier: tier, TierSource: string(src),
			Registered: r.Registered, PausedBy: pausedBy, ETAS: -1, DoneS: -1, Jobs: &r})
	}
	return nil
}

// modelOf is the model a batch waits for; a model without a row is one
// without an item.
func (v *view) modelOf(name string) modelView {
	if m, ok := v.byModel[name]; ok {
		return *m
	}
	return modelView{Model: name, Breaker: "-", DrainS: -1, DepthAgeS: -1, NoItem: true}
}

// human prints a duration in seconds the one way the CLI prints times:
// whole seconds under a minute (45s), else rounded to the minute without
// zero units (12m, 3h16m, 2h); "-" when unknown (negative).
func human(s float64) string {
	if s < 0 || math.IsNaN(s) {
		return "-"
	}
	if s < 59.5 {
		return fmt.Sprintf("%.0fs", s)
	}
	m := int64(math.Round(s / 60))
	switch h := m / 60; {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m%60 == 0:
		return fmt.Sprintf("%dh", h)
	default:
		return fmt.Sprintf("%dh%dm", h, m%60)
	}
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	all := fs.Bool("all", false, "every batch, running and finished ones too, with its jobs by state (evalsched batches lists only those)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s status [flags]\n\nPer model: its limit, gateway depth, running, starting and waiting jobs (paused\nones beside them), end rate, when its backlog drains, breaker and what the next\npass would admit. Per batch with waiting jobs: its tier, admitted share, ETA and\nnext pass; --all adds running and finished batches with their jobs by state.\n\n", programName)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "%s status: unexpected argument %q\n", programName, pos[0])
		return exitUsage
	}
	var counts *scheduler.Scope
	if *all {
		counts = &scheduler.Scope{}
	}
	v, err := look(context.Background(), sf, time.Now(), counts)
	if err != nil {
		fmt.Fprintf(stderr, "%s status: %v\n", programName, err)
		return exitFailed
	}
	if *asJSON {
		return writeJSON(stdout, stderr, v)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if len(v.Shards) > 0 {
		fmt.Fprintln(tw, "SHARD\tMODELS\tHOLDS\tCAP (BY LOAD)\tLAUNCHES/PASS\tREPORTED\t")
		for _, s := range v.Shards {
			age := "never"
			if s.ReportAgeS >= 0 {
				age = human(s.ReportAgeS) + " ago"
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t\n", s.Shard, s.Models, s.Held, s.GlobalMaxRunning, s.Launches, age)
		}
		tw.Flush()
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	}
	fmt.Fprintln(tw, "MODEL\tLIMIT\tDEPTH/TARGET\tPROVIDER CONC\tRUNNING\tSTARTING\tWAITING\tENDED/MIN\tDRAINS IN\tBREAKER\tNEXT PASS\tNOTE\t")
	for _, m := range v.Models {
		depth := "-"
		if m.DepthAgeS >= 0 {
			depth = fmt.Sprintf("%s/%s (%s ago)", num(m.Depth), targetText(m.SteerTarget, m.Target), human(m.DepthAgeS))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%.1f\t%s\t%s\t+%d\t%s\t\n", m.Model, m.Limit, depth, concText(m.ProviderConc, m.SeenConc, m.SeenConcAgeS), m.Running, m.Starting, m.waitingCell(), m.EndedPerMin, m.drainText(), m.Breaker, m.NextAdmit, m.note())
	}
	tw.Flush()
	if len(v.Batches) > 0 {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BATCH\tMODEL\tTIER\tADMITTED\tWAITING\tETA\tNEXT PASS\t")
		for _, b := range v.Batches {
			next := fmt.Sprintf("+%d", b.NextAdmit)
			if b.PausedBy != "" {
				next = "paused (" + b.PausedBy + ")"
			}
			if b.Jobs != nil {
				next += "; " + jobsText(*b.Jobs)
				if b.Waiting == 0 {
					next = b.Jobs.State + ": " + jobsText(*b.Jobs)
				}
			}
			if b.Parts != "" {
				next += ", parts " + b.Parts + " arrived"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%s\t%d\t%s\t%s\t\n", b.Batch, b.Model, b.Tier, b.TierSource, admittedOf(b.admitted(), b.Registered), b.Waiting, etaText(forecast.ETA{StartS: b.ETAS, DoneS: b.DoneS}, v.pass), next)
		}
		tw.Flush()
		for _, b := range v.Batches {
			if b.Sampling != nil {
				fmt.Fprintf(stdout, "\nsampled %s on %s:\n", b.Batch, b.Model)
				printSampling(stdout, "  ", b.Sampling)
			}
		}
	}
	for _, w := range v.Warns {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return exitOK
}

func runWhy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("why", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s why [flags] ACCOUNT/PROJECT/BATCH[/KEY] | JOB_ID\n\nA batch by the names it was submitted with; a job by its batch and key, or by its id.\n\n", programName)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s why: %v\n", programName, err)
		return exitFailed
	}
	ctx := context.Background()
	target := pos[0]
	st, _, err := sf.open(ctx)
	if err != nil {
		return fail(err)
	}
	jobID := ""
	if isJobID(target) {
		jobID = target
	} else {
		scope, _, err := parseScope(target)
		if err != nil || scope.Batch == "" {
			fmt.Fprintf(stderr, "%s why: want ACCOUNT/PROJECT/BATCH[/KEY] or a job id, not %q\n", programName, target)
			return exitUsage
		}
		rows, err := listBatches(ctx, st, scope)
		if err != nil {
			return fail(err)
		}
		if !slices.ContainsFunc(rows, func(r batchRow) bool { return r.Batch == target }) {
			// Not a batch: ACCOUNT/PROJECT/BATCH/KEY, the last name a job's key.
			if i := strings.LastIndex(target, "/"); strings.Count(target, "/") >= 3 {
				b, _, _ := parseScope(target[:i])
				jobID = domain.JobID(b.Account, b.Project, b.Batch, target[i+1:])
			}
		}
	}
	var job *jobView
	if jobID != "" {
		// A job: say where it is; if it waits, explain its batch.
		j, ok, err := st.Job(ctx, jobID)
		if err != nil {
			return fail(err)
		}
		if !ok {
			return fail(fmt.Errorf("no batch or job %s (evalsched batches lists the batches)", target))
		}
		job = &jobView{ID: j.ID, Key: j.Key, Batch: j.Account + "/" + j.Project + "/" + j.Batch, Model: j.Model,
			State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Reason: j.Reason}
		target = job.Batch
	}
	scope, _, _ := parseScope(target)
	v, err := look(ctx, sf, time.Now(), &scope)
	if err != nil {
		return fail(err)
	}
	var answers []whyAnswer
	for _, b := range v.Batches {
		if b.Batch == target && (job == nil || b.Model == job.Model) {
			answers = append(answers, whyAnswer{Job: job, Batch: b, Model: v.modelOf(b.Model)})
		}
	}
	if len(answers) == 0 {
		if job == nil {
			return fail(fmt.Errorf("no batch %s (evalsched batches lists the batches)", target))
		}
		answers = append(answers, whyAnswer{Job: job}) // a job of a batch registered before batches were listed
	}
	if *asJSON {
		return writeJSON(stdout, stderr, answers)
	}
	if job != nil {
		fmt.Fprintf(stdout, "job %s (%s of %s on %s): %s", job.ID, job.Key, job.Batch, job.Model, job.State)
		if job.State != domain.Skipped { // a skipped job never ran: no attempt to count
			fmt.Fprintf(stdout, ", attempt %d of %d", job.Attempt, job.MaxAttempts)
		}
		if job.Reason != "" {
			fmt.Fprintf(stdout, ", %s", job.Reason)
		}
		fmt.Fprintln(stdout)
		if job.State != domain.Waiting {
			return exitOK
		}
	}
	for _, a := range answers {
		b, m := a.Batch, a.Model
		if b.Jobs != nil && b.Waiting == 0 {
			fmt.Fprintf(stdout, "%s on %s: %s, none waiting: %s\n", b.Batch, b.Model, b.Jobs.State, jobsText(*b.Jobs))
			printSampling(stdout, "  ", b.Sampling)
			continue
		}
		fmt.Fprintf(stdout, "%s on %s: %d waiting, tier %d (%s)\n", b.Batch, b.Model, b.Waiting, b.Tier, b.TierSource)
		if b.Jobs != nil {
			fmt.Fprintf(stdout, "  its jobs: %s\n", jobsText(*b.Jobs))
		}
		printSampling(stdout, "  ", b.Sampling)
		switch {
		case m.Malformed != "":
			fmt.Fprintf(stdout, "  model %s: its model item is malformed, so its jobs wait: %s\n", m.Model, m.Malformed)
		case m.NoItem:
			fmt.Fprintf(stdout, "  model %s: no model item, so its jobs wait: add one (see docs/operator.md, Models: limits and targets)\n", m.Model)
		default:
			fmt.Fprintf(stdout, "  model %s: limit %d (%s)\n", m.Model, m.Limit, m.LimitReason)
			fmt.Fprintf(stdout, "  provider concurrency: %s%s; target depth steered to %s\n", concText(m.ProviderConc, m.SeenConc, m.SeenConcAgeS), freshText(m), targetText(m.SteerTarget, m.Target))
			fmt.Fprintf(stdout, "  %d running, %d starting, %s across its batches; breaker %s\n", m.Running, m.Starting, m.waitingText(), m.Breaker)
		}
		switch {
		case b.PausedBy != "":
			fmt.Fprintf(stdout, "  paused (%s): run %s resume %s to admit it again\n", b.PausedBy, programName, pauseArg(b.PausedBy))
		case b.NextAdmit > 0:
			fmt.Fprintf(stdout, "  the next pass would start %d of its jobs\n", b.NextAdmit)
		case m.Why != "":
			fmt.Fprintf(stdout, "  the next pass starts none of its jobs: %s\n", strings.TrimSpace(m.Why))
		}
		if m.NextAdmit > 0 && b.NextAdmit == 0 && b.PausedBy == "" {
			fmt.Fprintf(stdout, "  the model's %d free slots go to batches of more urgent tiers or earlier turns\n", m.NextAdmit)
		}
		if b.PausedBy == "" {
			fmt.Fprintf(stdout, "  forecast: %s\n", forecastText(forecast.ETA{StartS: b.ETAS, DoneS: b.DoneS}, v.pass, m))
		}
	}
	return exitOK
}

// jobView is the job why was asked about.
type jobView struct {
	ID          string       `json:"id"`
	Key         string       `json:"key"`
	Batch       string       `json:"batch"`
	Model       string       `json:"model"`
	State       domain.State `json:"state"`
	Attempt     int          `json:"attempt"`
	MaxAttempts int          `json:"max_attempts"`
	Reason      string       `json:"reason,omitempty"`
}

// whyAnswer is why's answer for one batch and model.
type whyAnswer struct {
	Job   *jobView  `json:"job,omitempty"`
	Batch batchView `json:"batch"`
	Model modelView `json:"model"`
}

// jobsText is "2 waiting, 1 running, 7 succeeded of 10; 3 provider
// retries; parts 2/3 arrived", naming only the states some job is in.
func jobsText(r batchRow) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{r.Waiting, "waiting"}, {r.Starting, "starting"}, {r.Running, "running"}, {r.Succeeded, "succeeded"}, {r.Failed, "failed"}, {r.Cancelled, "cancelled"}, {r.Skipped, "skipped"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	text := strings.Join(parts, ", ") + fmt.Sprintf(" of %d", r.Registered)
	if r.ProviderRetries > 0 {
		text += fmt.Sprintf("; %d provider retries", r.ProviderRetries)
	}
	if r.PartsExpected > 0 {
		text += fmt.Sprintf("; parts %d/%d arrived", r.PartsArrived, r.PartsExpected)
	}
	return text
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		return exitFailed
	}
	return exitOK
}

// isJobID tells a job id (32 lowercase hex characters) from a batch.
func isJobID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// admittedOf prints "412/1000 (41%)": admitted of registered.
func admittedOf(admitted, registered int) string {
	if registered <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%d%%)", admitted, registered, admitted*100/registered)
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

// concText shows the provider's concurrency as the operator set it and as
// the controller learned it from the gateway, with how long ago (ageS < 0:
// no time): "250 set", "240 learned 3m ago", "250 set, 240 learned 3m
// ago", "-".
func concText(set int, seen, ageS float64) string {
	var parts []string
	if set > 0 {
		parts = append(parts, fmt.Sprintf("%d set", set))
	}
	if seen > 0 {
		when := "at no time given"
		if ageS >= 0 {
			when = human(ageS) + " ago"
		}
		parts = append(parts, fmt.Sprintf("%.0f learned %s", seen, when))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// targetText is the DEPTH/TARGET column's target: the one the controller
// steers to, and the operator's beside it when the bound lowered it
// ("2 of 40": at most 5 % of the jobs running).
func targetText(steer, operator float64) string {
	if steer < operator {
		return fmt.Sprintf("%s of %s", num(steer), num(operator))
	}
	return num(operator)
}

// num prints a depth without noise: 3, 40, 2.5.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// freshText says how the limit controller uses a learned concurrency.
func freshText(m modelView) string {
	switch {
	case m.SeenConc <= 0:
		return ""
	case m.SeenConcFresh:
		return " (fresh: used as a set one, its knee reached in one raise)"
	}
	return " (old: its knee bounds raises of ×4 at most; edit or delete learned_concurrency on the model's state item to correct it)"
}
