package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
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
	Running     int     `json:"running"`
	Starting    int     `json:"starting"`
	Waiting     int     `json:"waiting"`
	Breaker     string  `json:"breaker"`
	NextAdmit   int     `json:"next_pass_admits"`
	Why         string  `json:"why_waiting,omitempty"`
	Paused      int     `json:"paused"`
	// EndedPerMin is the rate jobs ended over the breaker's window (5 min);
	// DrainS the time the waiting jobs take at that rate (-1: unknown).
	EndedPerMin float64 `json:"ended_per_min"`
	DrainS      float64 `json:"drain_s"`
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
	// stepped forward at its recent end rate (forecast.go).
	ETAS  float64 `json:"eta_s"`
	DoneS float64 `json:"done_eta_s"`
}

// look reads the store and dry-runs the next pass at now.
func look(ctx context.Context, sf storeFlags, now time.Time) (*view, error) {
	st, cfg, err := sf.open(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := st.Snapshot(ctx, now)
	if err != nil {
		return nil, err
	}
	sc := scheduler.DefaultConfig()
	sc.Tiers, sc.TierWeight, sc.DefaultTier, sc.GlobalMaxRunning = cfg.Tiers, cfg.TierWeight, cfg.DefaultTier, cfg.GlobalMaxRunning
	sc.MaxLaunchesPerPass = max(1, int(cfg.LaunchRate*10))
	// The depth the last pass saw, from each model's state: status reads no
	// CloudWatch, so it works with DynamoDB access alone.
	depths := map[string]scheduler.Depth{}
	for _, m := range snap.Models {
		if l := m.State.Limit; !l.SeenAt.IsZero() {
			depths[m.Config.Name] = scheduler.Depth{Value: l.Smoothed, At: l.SeenAt}
		}
	}
	account := scheduler.Caps{GlobalMaxRunning: sc.GlobalMaxRunning, MaxLaunchesPerPass: sc.MaxLaunchesPerPass, LaunchRate: cfg.LaunchRate, LaunchBurst: cfg.LaunchBurst}
	plan, shards, err := dryRun(ctx, st, account, sc, snap, depths, now, cfg.PassInterval)
	if err != nil {
		return nil, err
	}
	v := &view{At: now, plan: plan, queues: snap.Queues, byModel: map[string]*modelView{}, pass: cfg.PassInterval, Shards: shards}
	v.Warns = v.plan.Warnings
	v.pins, _ = priority.Compile(snap.Pins, sc.Tiers, now)
	targets := map[string]float64{}
	for _, m := range snap.Models {
		targets[m.Config.Name] = m.Config.TargetDepth
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
		rate, drain := endedRate(mp.State.Breaker.Buckets, now), -1.0
		if rate > 0 {
			drain = float64(mp.Waiting) / rate * 60
		}
		v.Models = append(v.Models, modelView{
			EndedPerMin: rate, DrainS: drain,
			Model: mp.Model, Limit: mp.State.Limit.Limit, LimitReason: mp.Limit.Reason, Depth: mp.Depth.Value, DepthAgeS: age,
			Target: targets[mp.Model], Running: mp.Running, Starting: mp.Starting, Waiting: mp.Waiting,
			Breaker: phase, NextAdmit: mp.Admitted, Why: mp.Why, Paused: mp.Paused,
		})
		for _, g := range mp.Grants {
			admits[g.Queue] += g.Count
		}
	}
	for i := range v.Models {
		v.byModel[v.Models[i].Model] = &v.Models[i]
	}
	parts, err := batchParts(ctx, st, snap.Queues)
	if err != nil {
		return nil, err
	}
	etas := forecastQueues(defaultForecastConfig(cfg.PassInterval), sc, snap, v.plan, now)
	for i, q := range snap.Queues {
		tier, src := v.pins.Tier(q.Account, q.Project, q.Batch, q.SubmittedTier, sc.DefaultTier)
		pausedBy, _ := v.pins.Paused(q.Account, q.Project, q.Batch)
		v.Batches = append(v.Batches, batchView{
			Batch: q.Account + "/" + q.Project + "/" + q.Batch, Model: q.Model, Tier: tier, TierSource: string(src),
			Waiting: q.Waiting, Registered: q.Registered, NextAdmit: admits[q.Key()], PausedBy: pausedBy,
			Parts: parts[q.Account+"/"+q.Project+"/"+q.Batch],
			ETAS:  etas[i].StartS, DoneS: etas[i].DoneS,
		})
	}
	return v, nil
}

// endedRate is jobs ended per minute over the breaker's buckets.
func endedRate(buckets []breaker.Bucket, now time.Time) float64 {
	if len(buckets) == 0 {
		return 0
	}
	n := 0
	for _, b := range buckets {
		n += b.OK + b.Failed
	}
	span := now.Sub(buckets[0].Start).Minutes()
	if span <= 0 || n == 0 {
		return 0
	}
	return float64(n) / span
}

// human prints a duration in seconds as 45s, 12m, 3h10m; "-" when unknown.
func human(s float64) string {
	if s < 0 {
		return "-"
	}
	return (time.Duration(s) * time.Second).Round(time.Minute).String()
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "%s status: unexpected argument %q\n", programName, pos[0])
		return exitUsage
	}
	v, err := look(context.Background(), sf, time.Now())
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
				age = fmt.Sprintf("%.0fs ago", s.ReportAgeS)
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t\n", s.Shard, s.Models, s.Held, s.GlobalMaxRunning, s.Launches, age)
		}
		tw.Flush()
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	}
	fmt.Fprintln(tw, "MODEL\tLIMIT\tDEPTH/TARGET\tRUNNING\tSTARTING\tWAITING\tENDED/MIN\tDRAINS IN\tBREAKER\tNEXT PASS\t")
	for _, m := range v.Models {
		depth := "-"
		if m.DepthAgeS >= 0 {
			depth = fmt.Sprintf("%.0f/%.0f (%.0fs ago)", m.Depth, m.Target, m.DepthAgeS)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%.1f\t%s\t%s\t+%d\t\n", m.Model, m.Limit, depth, m.Running, m.Starting, m.Waiting, m.EndedPerMin, human(m.DrainS), m.Breaker, m.NextAdmit)
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
			if b.Parts != "" {
				next += ", parts " + b.Parts + " arrived"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%s\t%d\t%s\t%s\t\n", b.Batch, b.Model, b.Tier, b.TierSource, admittedOf(b.Registered-b.Waiting, b.Registered), b.Waiting, etaText(eta{b.ETAS, b.DoneS}, v.pass), next)
		}
		tw.Flush()
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
		fmt.Fprintf(stderr, "usage: %s why [flags] ACCOUNT/PROJECT/BATCH | JOB_ID\n\n", programName)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	ctx := context.Background()
	target := pos[0]
	if isJobID(target) {
		// A job: say where it is; if it waits, explain its batch.
		st, _, err := sf.open(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "%s why: %v\n", programName, err)
			return exitFailed
		}
		j, ok, err := st.Job(ctx, target)
		if err != nil || !ok {
			fmt.Fprintf(stderr, "%s why: no job %s (%v)\n", programName, target, err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "job %s (%s of %s/%s/%s on %s): %s, attempt %d of %d", j.ID, j.Key, j.Account, j.Project, j.Batch, j.Model, j.State, j.Attempt, j.MaxAttempts)
		if j.Reason != "" {
			fmt.Fprintf(stdout, ", %s", j.Reason)
		}
		fmt.Fprintln(stdout)
		if j.State != "WAITING" {
			return exitOK
		}
		target = j.Account + "/" + j.Project + "/" + j.Batch
	}
	v, err := look(ctx, sf, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "%s why: %v\n", programName, err)
		return exitFailed
	}
	type answer struct {
		Batch batchView `json:"batch"`
		Model modelView `json:"model"`
	}
	var answers []answer
	for _, b := range v.Batches {
		if b.Batch == target {
			m := modelView{Model: b.Model, Breaker: "CLOSED", DrainS: -1, DepthAgeS: -1, Why: "no model item: its jobs wait"}
			if mv, ok := v.byModel[b.Model]; ok { // none for a model without its model item
				m = *mv
			}
			answers = append(answers, answer{b, m})
		}
	}
	if len(answers) == 0 {
		fmt.Fprintf(stderr, "%s why: batch %q has no waiting jobs (it is done, running, or unknown)\n", programName, target)
		return exitFailed
	}
	if *asJSON {
		return writeJSON(stdout, stderr, answers)
	}
	for _, a := range answers {
		b, m := a.Batch, a.Model
		fmt.Fprintf(stdout, "%s on %s: %d waiting, tier %d (%s)\n", b.Batch, b.Model, b.Waiting, b.Tier, b.TierSource)
		fmt.Fprintf(stdout, "  model %s: limit %d (%s)\n", m.Model, m.Limit, m.LimitReason)
		fmt.Fprintf(stdout, "  %d running, %d starting, %d waiting across its batches; breaker %s\n", m.Running, m.Starting, m.Waiting, m.Breaker)
		switch {
		case b.PausedBy != "":
			fmt.Fprintf(stdout, "  paused by the pin %s: run %s resume to admit it again\n", b.PausedBy, programName)
		case b.NextAdmit > 0:
			fmt.Fprintf(stdout, "  the next pass would start %d of its jobs\n", b.NextAdmit)
		case m.Why != "":
			fmt.Fprintf(stdout, "  the next pass starts none of its jobs: %s\n", strings.TrimSpace(m.Why))
		}
		if m.NextAdmit > 0 && b.NextAdmit == 0 {
			fmt.Fprintf(stdout, "  the model's %d free slots go to batches of more urgent tiers or earlier turns\n", m.NextAdmit)
		}
		if b.PausedBy == "" {
			fmt.Fprintf(stdout, "  forecast: %s\n", forecastText(eta{b.ETAS, b.DoneS}, v.pass, m))
		}
	}
	return exitOK
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
