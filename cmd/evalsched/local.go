package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/evalsched/evalsched/internal/devstack"
)

var localCommand = command{
	name:    "local",
	summary: "run the whole system on this machine: DynamoDB Local, fauxqs and a simulated gateway and Fargate",
	run:     runLocal,
}

// Local mode's defaults. A default job (devstack.DefaultModel: a 30 s
// start, 10 calls of 8 s with 4 s between) lives 150 s of world time: at 3×
// that is 50 s, five passes, so jobs start and end across passes rather
// than in one wave per pass (at 10× a job lived about one pass).
const (
	defaultLocalSpeed    = 3
	defaultLocalInterval = 10 * time.Second
)

func runLocal(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("local", stderr, fmt.Sprintf("usage: %s local [flags]\n\nStarts DynamoDB Local and fauxqs on 127.0.0.1 (unless AWS_ENDPOINT_URL_DYNAMODB /\nAWS_ENDPOINT_URL_SQS name running ones), creates the tables and queues, and runs the\nintake, scheduler and task-events code in this process until Ctrl-C, which stops it\ncleanly (exit 0). It prints what to export in another shell, then intake rejects with\ntheir reasons, conflicts, stored batches, the pass's warnings (malformed pins and\nmodels) and a line per busy model every three passes; the full pass log goes to --log.\nNeeds Java 17 (a JDK: javac), Node 20 and `npm ci` (make local does it; pass flags\nwith make local ARGS=\"--speed 20\"). See docs/local-aws.md.\n\n", programName))
	speed := fs.Float64("speed", defaultLocalSpeed, "compress the simulated world's time `N`-fold (container starts, calls, think time)")
	interval := fs.Duration("interval", defaultLocalInterval, "between scheduler passes")
	prefix := fs.String("table-prefix", "evalsched-", "the tables' name `PREFIX`")
	logFile := fs.String("log", "", "write every log line (the pass log: each limit decision and its reason) as JSON to `FILE` (default: a new file in the temporary directory)")
	verbose := fs.Bool("verbose", false, "print every log line, not only intake rejects, conflicts, stored batches, pass warnings and errors")
	if pos, err := parseInterspersed(fs, args); err != nil {
		return flagExit(err)
	} else if len(pos) > 0 {
		fs.Usage()
		return exitUsage
	}
	if *speed <= 0 || *interval < time.Second {
		fmt.Fprintf(stderr, "%s local: --speed must be positive and --interval at least 1s\n", programName)
		return exitUsage
	}
	// Ctrl-C (or SIGTERM) stops the loops, the world and the servers, and
	// the command exits 0. Later ones are noted and change nothing: dying
	// at once would leave DynamoDB Local and fauxqs running (they are in
	// their own process group), and the stop is bounded (5 s a server).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer func() { signal.Stop(signals); close(signals) }()
	go func() {
		if _, ok := <-signals; !ok {
			return // ended without a signal
		}
		fmt.Fprintf(stderr, "\n%s local: stopping\n", programName)
		cancel()
		for range signals {
			fmt.Fprintf(stderr, "%s local: still stopping the servers\n", programName)
		}
	}()
	err := devstack.Run(ctx, devstack.Options{
		DynamoDB: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), SQS: os.Getenv("AWS_ENDPOINT_URL_SQS"),
		Prefix: *prefix, Speed: *speed, Interval: *interval, Out: stdout, LogFile: *logFile, Verbose: *verbose,
	})
	if err != nil {
		fmt.Fprintf(stderr, "%s local: %v\n", programName, err)
		return exitFailed
	}
	return exitOK
}
