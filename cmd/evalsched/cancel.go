package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/smithy-go/logging"

	"github.com/evalsched/evalsched/internal/ecslauncher"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

var (
	pauseCommand = command{
		name:    "pause",
		summary: "stop admitting an account's, project's or batch's waiting jobs (running ones go on)",
		run:     func(args []string, stdout, stderr io.Writer) int { return runPause(args, stdout, stderr, true) },
	}
	resumeCommand = command{
		name:    "resume",
		summary: "admit a paused scope's waiting jobs again",
		run:     func(args []string, stdout, stderr io.Writer) int { return runPause(args, stdout, stderr, false) },
	}
	cancelCommand = command{
		name:    "cancel",
		summary: "cancel an account's, project's or batch's waiting jobs; --stop-running stops its tasks too",
		run:     runCancel,
	}
)

// parseScope reads ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH and
// returns it with its pin-item form ("project#A/P"). Names may hold "/"
// themselves; the CLI takes the first two separators.
func parseScope(arg string) (scheduler.Scope, string, error) {
	if kind, rest, ok := strings.Cut(arg, "#"); ok {
		return scheduler.Scope{}, "", fmt.Errorf("scope %q is in a pin item's form (%s#…); here a scope is ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH, e.g. %q", arg, kind, rest)
	}
	parts := strings.SplitN(arg, "/", 3)
	for _, p := range parts {
		if p == "" {
			return scheduler.Scope{}, "", fmt.Errorf("scope %q has an empty name; want ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH", arg)
		}
	}
	var scope scheduler.Scope
	var pin string
	switch len(parts) {
	case 1:
		scope, pin = scheduler.Scope{Account: parts[0]}, "account#"+arg
	case 2:
		scope, pin = scheduler.Scope{Account: parts[0], Project: parts[1]}, "project#"+arg
	default:
		scope, pin = scheduler.Scope{Account: parts[0], Project: parts[1], Batch: parts[2]}, "batch#"+arg
	}
	if reason := priority.CheckScope(pin); reason != "" {
		return scheduler.Scope{}, "", fmt.Errorf("scope %q: %s", arg, strings.TrimPrefix(reason, "scope "))
	}
	return scope, pin, nil
}

// scopeReader is what a scope's check needs of the store.
type scopeReader interface {
	batchLister
	Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error)
}

// scopeHasBatches tells whether any batch lies inside the scope: one listed
// by batches, or one with waiting jobs (a batch registered before batches
// were listed has only those).
func scopeHasBatches(ctx context.Context, st scopeReader, scope scheduler.Scope) (bool, error) {
	rows, err := st.Batches(ctx, scope)
	if err != nil || len(rows) > 0 {
		return len(rows) > 0, err
	}
	snap, err := st.Snapshot(ctx, time.Now())
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(snap.Queues, func(q scheduler.Queue) bool { return scope.Matches(q.Key()) }), nil
}

func runPause(args []string, stdout, stderr io.Writer, pause bool) int {
	name := map[bool]string{true: "pause", false: "resume"}[pause]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	allowEmpty := new(bool)
	if pause { // resume lifts whatever pause there is
		allowEmpty = fs.Bool("allow-empty", false, "pause a scope that has no batch yet (its first batch then waits)")
	}
	fs.Usage = func() {
		what := "Stops admitting the scope's waiting jobs (running ones go on) until resume.\nA pause is apart from pins: pin, pin --delete and a pin's expiry leave it alone."
		if !pause {
			what = "Admits the scope's waiting jobs again."
		}
		fmt.Fprintf(stderr, "usage: %s %s [flags] SCOPE\n\n%s\n\n%s\n\n", programName, name, what, scopeHelp)
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
	scope, key, err := parseScope(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", programName, name, err)
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s %s: %v\n", programName, name, err)
		return exitFailed
	}
	ctx := context.Background()
	st, _, err := sf.open(ctx)
	if err != nil {
		return fail(err)
	}
	snap, err := st.Snapshot(ctx, time.Now())
	if err != nil {
		return fail(err)
	}
	was := slices.ContainsFunc(snap.Pauses, func(p scheduler.Pause) bool { return p.Scope == key })
	if pause && !was && !*allowEmpty {
		ok, err := scopeHasBatches(ctx, st, scope)
		if err != nil {
			return fail(err)
		}
		if !ok {
			return fail(fmt.Errorf("%s has no batches (evalsched batches lists them); to pause it before its first batch arrives, add --allow-empty", pos[0]))
		}
	}
	if err := st.SetPaused(ctx, key, pause, time.Now()); err != nil {
		return fail(err)
	}
	if *asJSON {
		return writeJSON(stdout, stderr, struct {
			Scope   string `json:"scope"`
			Paused  bool   `json:"paused"`
			Changed bool   `json:"changed"`
		}{pos[0], pause, was != pause})
	}
	switch {
	case was == pause && pause:
		fmt.Fprintf(stdout, "%s was already paused\n", pos[0])
	case was == pause:
		fmt.Fprintf(stdout, "%s was not paused\n", pos[0])
	default:
		fmt.Fprintf(stdout, "%sd %s; the next pass applies it\n", name, pos[0])
	}
	return exitOK
}

func runCancel(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	stop := fs.Bool("stop-running", false, "also stop the scope's tasks (their jobs end CANCELLED)")
	cluster := fs.String("cluster", "", "the sandbox `CLUSTER`, for --stop-running (EVALSCHED_CLUSTER)")
	asJSON := fs.Bool("json", false, "print JSON for scripts (and no progress bar)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s cancel [flags] SCOPE\n\n%s\n\n", programName, scopeHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s cancel: %s\n", programName, fmt.Sprintf(format, a...))
		return exitUsage
	}
	if len(pos) != 1 {
		return usageErr("want one SCOPE (ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH)")
	}
	scope, _, err := parseScope(pos[0])
	if err != nil {
		return usageErr("%v", err)
	}
	// Every argument is checked before the first write: a cancel that then
	// refuses to stop the tasks would leave half of what was asked done.
	ctx := context.Background()
	st, cfg, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s cancel: %v\n", programName, err)
		return exitFailed
	}
	var stopper ecslauncher.StopAPI
	c := cmp.Or(*cluster, cfg.Cluster)
	if *stop {
		if stopper, err = stopRunning(ctx, c, sf); err != nil {
			return usageErr("%v", err)
		}
	}
	result := cancelResult{Scope: pos[0]}
	finish := func(err error, hint string) int { return result.finish(*asJSON, stdout, stderr, err, hint) }
	bar := &countProgress{w: stderr, on: !*asJSON && isTerminal(stderr), what: "cancelling " + pos[0]}
	n, err := st.CancelWatched(ctx, scope, time.Now(), bar.draw)
	bar.clear()
	result.Cancelled = n
	if err != nil {
		if !*asJSON {
			fmt.Fprintf(stdout, "cancelled %s of %s\n", count(n, "waiting job"), pos[0])
		}
		return finish(err, " (the rest are still waiting; run it again)")
	}
	if n == 0 && !*stop {
		// Nothing waited: a finished scope, or a typo, which must not pass
		// for success — and says only that.
		if ok, err := scopeHasBatches(ctx, st, scope); err != nil || !ok {
			return finish(cmp.Or(err, fmt.Errorf("%s has no batches (evalsched batches lists them); nothing was cancelled", pos[0])), "")
		}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "cancelled %s of %s\n", count(n, "waiting job"), pos[0])
	}
	if !*stop {
		return finish(nil, "")
	}
	stopped, err := stopScope(ctx, st, stopper, c, scope)
	result.Stopped = &stopped
	if !*asJSON {
		fmt.Fprintf(stdout, "stopped %s of %s\n", count(stopped, "task"), pos[0])
	}
	return finish(err, "")
}

// cancelResult is cancel's --json.
type cancelResult struct {
	Scope     string `json:"scope"`
	Cancelled int    `json:"cancelled"`
	Stopped   *int   `json:"stopped,omitempty"`
	Error     string `json:"error,omitempty"`
}

// finish writes the result (with --json) and err, followed by hint.
func (r *cancelResult) finish(asJSON bool, stdout, stderr io.Writer, err error, hint string) int {
	if asJSON {
		if err != nil {
			r.Error = err.Error()
		}
		if code := writeJSON(stdout, stderr, r); code != exitOK {
			return code
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s cancel: %v%s\n", programName, err, hint)
		return exitFailed
	}
	return exitOK
}

// stopRunning is the ECS client of --stop-running, checked before anything
// is cancelled.
func stopRunning(ctx context.Context, cluster string, sf storeFlags) (ecslauncher.StopAPI, error) {
	if cluster == "" {
		return nil, errors.New("--stop-running needs --cluster or EVALSCHED_CLUSTER; nothing was cancelled")
	}
	client, err := ecsClient(ctx, sf.sdkLogger())
	if err != nil {
		return nil, fmt.Errorf("--stop-running: %v; nothing was cancelled", err)
	}
	return client, nil
}

// ecsClient is the ECS client of --stop-running, from the usual AWS
// configuration (AWS_ENDPOINT_URL_ECS names another endpoint). It refuses
// when the tables are at a local endpoint but ECS is not: that is local
// mode, whose tasks the real ECS does not know (evalsched local prints the
// AWS_ENDPOINT_URL_ECS of its world).
func ecsClient(ctx context.Context, log logging.Logger) (*ecs.Client, error) {
	ddbLocal := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	ecsLocal := os.Getenv("AWS_ENDPOINT_URL_ECS") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	if ddbLocal && !ecsLocal {
		return nil, fmt.Errorf("the tables are at a local endpoint (AWS_ENDPOINT_URL_DYNAMODB) but ECS is not: " +
			"set AWS_ENDPOINT_URL_ECS (evalsched local prints it) so that the local world's tasks are stopped, not the real ECS's")
	}
	aws, err := loadAWS(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	return ecs.NewFromConfig(aws, func(o *ecs.Options) { o.Logger = log }), nil
}

// jobLister is what stopScope needs of the store.
type jobLister interface {
	InFlight(ctx context.Context) ([]scheduler.InFlight, error)
	TaskStopped(ctx context.Context, jobID string, attempt int, exit domain.Exit, now time.Time) error
}

// stopScope stops the tasks of the scope's jobs (the reason
// taskevent.CancelReason) and ends each job CANCELLED; the tasks' STOPPED
// events then find the jobs ended and change nothing — or, if this command
// dies between the two, end them CANCELLED by that reason.
func stopScope(ctx context.Context, st jobLister, client ecslauncher.StopAPI, cluster string, scope scheduler.Scope) (int, error) {
	stopper := &ecslauncher.Stopper{API: client, Cluster: cluster, Reason: taskevent.CancelReason}
	jobs, err := st.InFlight(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range jobs {
		if j.TaskARN == "" {
			continue
		}
		if !scope.Matches(j.Key()) {
			continue
		}
		if err := stopper.StopOne(ctx, j); err != nil {
			return n, fmt.Errorf("stop %s: %w", j.TaskARN, err)
		}
		if err := st.TaskStopped(ctx, j.ID, j.Attempt, domain.Exit{Code: -1, Cancelled: true, Reason: domain.OperatorCancelReason}, time.Now()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// countProgress draws "cancelling X [####....] 4,500/19,518 jobs" on a
// terminal, at most ten times a second.
type countProgress struct {
	w     io.Writer
	on    bool
	what  string
	drawn bool
	last  time.Time
}

func (p *countProgress) draw(done, total int) {
	if !p.on {
		return
	}
	now := time.Now()
	if done > 0 && done < total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	fill := min(barWidth, barWidth*done/max(total, 1))
	fmt.Fprintf(p.w, "\r\033[K%s [%s%s] %s/%s jobs", p.what,
		strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill), commas(done), commas(total))
	p.drawn = true
}

func (p *countProgress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// scopeHelp says what a SCOPE is, for the -h of pause, resume and cancel.
const scopeHelp = `SCOPE is ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH, by the names the
batches were submitted with (e.g. acme, acme/search, acme/search/b17): the
scope holds every batch under it. The first two "/" separate the names, so
only a batch name may hold "/" here. Not the pin item's form: "project#A/P"
is what pin takes, not pause, resume or cancel.`
