package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/smithy-go/logging"

	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/operator"
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

func runPause(args []string, stdout, stderr io.Writer, pause bool) int {
	name, what := "pause", "Stops admitting the scope's waiting jobs (running ones go on) until resume.\nA pause is apart from pins: pin, pin --delete and a pin's expiry leave it alone."
	if !pause {
		name, what = "resume", "Admits the scope's waiting jobs again."
	}
	fs := newFlags(name, stderr, fmt.Sprintf("usage: %s %s [flags] SCOPE\n\n%s\n\n%s\n\n", programName, name, what, operator.ScopeHelp))
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	allowEmpty := new(bool)
	if pause { // resume lifts whatever pause there is
		allowEmpty = fs.Bool("allow-empty", false, "pause a scope that has no batch yet (its first batch then waits)")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	if _, _, err := operator.ParseScope(pos[0]); err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", programName, name, err)
		return exitUsage
	}
	ctx := context.Background()
	st, _, err := sf.open(ctx)
	if err == nil {
		var was bool
		if was, err = operator.Pause(ctx, st, pos[0], pause, *allowEmpty, time.Now()); err == nil {
			return pauseResult(pos[0], name, pause, was, *asJSON, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "%s %s: %v\n", programName, name, err)
	return exitFailed
}

// pauseResult writes what pause or resume changed.
func pauseResult(scope, name string, pause, was, asJSON bool, stdout, stderr io.Writer) int {
	if asJSON {
		return writeJSON(stdout, stderr, struct {
			Scope   string `json:"scope"`
			Paused  bool   `json:"paused"`
			Changed bool   `json:"changed"`
		}{scope, pause, was != pause})
	}
	switch {
	case was == pause && pause:
		fmt.Fprintf(stdout, "%s was already paused\n", scope)
	case was == pause:
		fmt.Fprintf(stdout, "%s was not paused\n", scope)
	default:
		fmt.Fprintf(stdout, "%sd %s; the next pass applies it\n", name, scope)
	}
	return exitOK
}

func runCancel(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("cancel", stderr, fmt.Sprintf("usage: %s cancel [flags] SCOPE\n\n%s\n\n", programName, operator.ScopeHelp))
	sf := addStoreFlags(fs)
	stop := fs.Bool("stop-running", false, "also stop the scope's tasks (their jobs end CANCELLED)")
	cluster := fs.String("cluster", "", "the sandbox `CLUSTER`, for --stop-running (EVALSCHED_CLUSTER)")
	asJSON := fs.Bool("json", false, "print JSON for scripts (and no progress bar)")
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
	scope, _, err := operator.ParseScope(pos[0])
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
	bar := cliout.NewLine(stderr, !*asJSON, 100*time.Millisecond)
	n, err := st.CancelWatched(ctx, scope, time.Now(), func(done, total int) {
		bar.Draw(done == 0 || done >= total, "%s", cancelling(pos[0], done, total))
	})
	bar.Clear()
	result.Cancelled = n
	if err != nil {
		if !*asJSON {
			fmt.Fprintf(stdout, "cancelled %s of %s\n", cliout.Count(n, "waiting job"), pos[0])
		}
		return finish(err, " (the rest are still waiting; run it again)")
	}
	if n == 0 && !*stop {
		// Nothing waited: a finished scope, or a typo, which must not pass
		// for success — and says only that.
		if ok, err := operator.HasBatches(ctx, st, scope, time.Now()); err != nil || !ok {
			return finish(cmp.Or(err, fmt.Errorf("%s has no batches (evalsched batches lists them); nothing was cancelled", pos[0])), "")
		}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "cancelled %s of %s\n", cliout.Count(n, "waiting job"), pos[0])
	}
	if !*stop {
		return finish(nil, "")
	}
	stopped, err := operator.StopScope(ctx, st, stopper, c, scope, time.Now)
	result.Stopped = &stopped
	if !*asJSON {
		fmt.Fprintf(stdout, "stopped %s of %s\n", cliout.Count(stopped, "task"), pos[0])
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

// cancelling is cancel's progress line: "cancelling X [####....] 4,500/19,518 jobs".
func cancelling(scope string, done, total int) string {
	return fmt.Sprintf("cancelling %s %s %s/%s jobs", scope, cliout.Bar(done, total), cliout.Commas(done), cliout.Commas(total))
}
