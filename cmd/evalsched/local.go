package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/evalsched/evalsched/internal/localmode"
)

var localCommand = command{
	name:    "local",
	summary: "run the whole system on this machine: DynamoDB Local, fauxqs and a simulated gateway and Fargate",
	run:     runLocal,
}

func runLocal(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	speed := fs.Float64("speed", 10, "compress the simulated world's time `N`-fold (container starts, calls, think time)")
	interval := fs.Duration("interval", 10*time.Second, "between scheduler passes")
	prefix := fs.String("table-prefix", "evalsched-", "the tables' name `PREFIX`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s local [flags]\n\nStarts DynamoDB Local and fauxqs (unless AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS\nname running ones), creates the tables and queues, and runs the intake, scheduler and\ntask-events code in this process until interrupted. Needs `npm ci` (make local does it).\n\n", programName)
		fs.PrintDefaults()
	}
	if pos, err := parseInterspersed(fs, args); err != nil || len(pos) > 0 {
		return exitUsage
	}
	if *speed <= 0 || *interval < time.Second {
		fmt.Fprintf(stderr, "%s local: --speed must be positive and --interval at least 1s\n", programName)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := localmode.Run(ctx, localmode.Options{
		DynamoDB: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), SQS: os.Getenv("AWS_ENDPOINT_URL_SQS"),
		Prefix: *prefix, Speed: *speed, Interval: *interval, Out: stdout,
	})
	if err != nil {
		fmt.Fprintf(stderr, "%s local: %v\n", programName, err)
		return exitFailed
	}
	return exitOK
}
