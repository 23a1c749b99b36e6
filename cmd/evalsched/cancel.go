package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/memstore"
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

// parseScope reads ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH. Names
// may hold "/" themselves; the CLI takes the first two separators, and
// --project/--batch flags name them unambiguously.
func parseScope(arg string) (scheduler.Scope, string, error) {
	parts := strings.SplitN(arg, "/", 3)
	for _, p := range parts {
		if p == "" {
			return scheduler.Scope{}, "", fmt.Errorf("scope %q has an empty name; want ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH", arg)
		}
	}
	switch len(parts) {
	case 1:
		return scheduler.Scope{Account: parts[0]}, "account#" + arg, nil
	case 2:
		return scheduler.Scope{Account: parts[0], Project: parts[1]}, "project#" + arg, nil
	default:
		return scheduler.Scope{Account: parts[0], Project: parts[1], Batch: parts[2]}, "batch#" + arg, nil
	}
}

func runPause(args []string, stdout, stderr io.Writer, pause bool) int {
	name := map[bool]string{true: "pause", false: "resume"}[pause]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "usage: %s %s ACCOUNT[/PROJECT[/BATCH]]\n", programName, name)
		return exitUsage
	}
	_, pin, err := parseScope(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", programName, name, err)
		return exitUsage
	}
	ctx := context.Background()
	st, _, err := sf.open(ctx)
	if err == nil {
		err = st.SetPaused(ctx, pin, pause)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", programName, name, err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "%sd %s (pin item %s); the next pass applies it\n", name, pos[0], pin)
	return exitOK
}

func runCancel(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	stop := fs.Bool("stop-running", false, "also stop the scope's tasks (their jobs end CANCELLED)")
	cluster := fs.String("cluster", "", "the sandbox `CLUSTER`, for --stop-running (EVALSCHED_CLUSTER)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "usage: %s cancel [--stop-running] ACCOUNT[/PROJECT[/BATCH]]\n", programName)
		return exitUsage
	}
	scope, _, err := parseScope(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s cancel: %v\n", programName, err)
		return exitUsage
	}
	ctx := context.Background()
	st, cfg, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s cancel: %v\n", programName, err)
		return exitFailed
	}
	n, err := st.Cancel(ctx, scope, time.Now())
	fmt.Fprintf(stdout, "cancelled %d waiting jobs of %s\n", n, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s cancel: %v (the rest are still waiting; run it again)\n", programName, err)
		return exitFailed
	}
	if !*stop {
		return exitOK
	}
	c := *cluster
	if c == "" {
		c = cfg.Cluster
	}
	if c == "" {
		fmt.Fprintf(stderr, "%s cancel: --stop-running needs --cluster or EVALSCHED_CLUSTER\n", programName)
		return exitUsage
	}
	stopped, err := stopScope(ctx, st, c, scope)
	fmt.Fprintf(stdout, "stopped %d tasks of %s\n", stopped, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s cancel: %v\n", programName, err)
		return exitFailed
	}
	return exitOK
}

// jobLister is what stopScope needs of the store.
type jobLister interface {
	InFlight(ctx context.Context) ([]scheduler.InFlight, error)
	TaskStopped(ctx context.Context, jobID string, attempt int, exit memstore.Exit, now time.Time) error
}

// stopScope stops the tasks of the scope's jobs (the reason
// taskevent.CancelReason) and ends each job CANCELLED; the tasks' STOPPED
// events then find the jobs ended and change nothing — or, if this command
// dies between the two, end them CANCELLED by that reason.
func stopScope(ctx context.Context, st jobLister, cluster string, scope scheduler.Scope) (int, error) {
	jobs, err := st.InFlight(ctx)
	if err != nil {
		return 0, err
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return 0, err
	}
	client := ecs.NewFromConfig(aws)
	n := 0
	for _, j := range jobs {
		if j.TaskARN == "" {
			continue
		}
		if !scope.Matches(j.Key()) {
			continue
		}
		if _, err := client.StopTask(ctx, &ecs.StopTaskInput{Cluster: &cluster, Task: &j.TaskARN, Reason: ptr(taskevent.CancelReason)}); err != nil {
			return n, fmt.Errorf("stop %s: %w", j.TaskARN, err)
		}
		if err := st.TaskStopped(ctx, j.ID, j.Attempt, memstore.Exit{Code: -1, Cancelled: true, Reason: "cancelled by an operator"}, time.Now()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func ptr(s string) *string { return &s }
