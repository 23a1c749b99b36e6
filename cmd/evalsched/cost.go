package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/evalsched/evalsched/internal/bill"
	"github.com/evalsched/evalsched/internal/localservers"
)

var costCommand = command{
	name:    "cost",
	summary: "the monthly AWS bill for a load, from the code's measured requests (docs/cost.md)",
	run:     runCost,
}

const costUsage = `usage: evalsched cost [flags]

Prints the monthly AWS bill of evalsched itself (not the sandboxes) for a
load. The request counts are measured: a scheduler pass, the intake, the
task events, the results and the reconciler run against DynamoDB Local
(started here, ~1 minute in all) and the ECS and CloudWatch fakes, at the
load scaled down where it must be; the bill multiplies them back up, each
line with its arithmetic. The deployment (memory, the task-event rule, the
per-model metrics, alarms) is read from template.yaml.

flags:
`

func runCost(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("cost", stderr, costUsage)
	l := bill.SeedLoad()
	fs.Float64Var(&l.JobsPerWeek, "jobs-per-week", l.JobsPerWeek, "jobs submitted a week")
	fs.IntVar(&l.Models, "models", l.Models, "models configured")
	fs.IntVar(&l.ActiveModels, "active-models", l.ActiveModels, "models with jobs waiting or running")
	fs.DurationVar(&l.PassInterval, "pass-interval", l.PassInterval, "time between scheduler passes")
	fs.DurationVar(&l.JobLength, "job-length", l.JobLength, "a job's running time")
	fs.IntVar(&l.ActiveBatches, "active-batches", l.ActiveBatches, "batches with jobs waiting")
	fs.IntVar(&l.Waiting, "waiting", l.Waiting, "jobs waiting")
	fs.IntVar(&l.JobsPerMessage, "jobs-per-message", l.JobsPerMessage, "jobs in one intake message")
	inService := fs.Bool("in-service", true, "the pass reads the gateway's calls in service (the README's recommendation)")
	errorRate := fs.Bool("error-rate", true, "the pass reads the gateway's error and calls counts (the README's recommendation)")
	bridge := fs.Bool("bridge", true, "count the gateway depth bridge's writes and its task")
	cwDepth := fs.Bool("cloudwatch-depth", false, "the pass reads GetMetricData (GatewayDepthSource cloudwatch; the bridge, if counted, publishes metrics) instead of the bridge's readings item")
	template := fs.String("template", "", "the SAM template (default: template.yaml at the repository's root)")
	doc := fs.String("doc", "", "also write the bill into `FILE` between its markers (make cost-doc: docs/cost.md)")
	asJSON := fs.Bool("json", false, `print {"total_usd_month", "items": [{"service", "what", "per_month_usd", "arithmetic"}]}`)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil {
		return exitUsage
	}
	if err := l.Validate(); err != nil {
		fmt.Fprintf(stderr, "evalsched cost: %v\n", err)
		return exitUsage
	}
	if *template == "" {
		root, err := localservers.RepoRoot()
		if err != nil {
			fmt.Fprintf(stderr, "evalsched cost: %v (or give --template)\n", err)
			return exitFailed
		}
		*template = filepath.Join(root, "template.yaml")
	}
	b, err := bill.MeasureLocal(context.Background(), l, *template, bill.Options{InService: *inService, ErrorRate: *errorRate, Bridge: *bridge, CloudWatchDepth: *cwDepth})
	if err != nil {
		fmt.Fprintf(stderr, "evalsched cost: %v\n", err)
		return exitFailed
	}
	if *doc != "" {
		if err := bill.WriteDoc(*doc, b, l); err != nil {
			fmt.Fprintf(stderr, "evalsched cost: --doc: %v\n", err)
			return exitFailed
		}
	}
	if *asJSON {
		return writeJSON(stdout, stderr, b)
	}
	b.WriteMarkdown(stdout, l)
	return exitOK
}
