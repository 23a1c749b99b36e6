package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/operator"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/status"
)

var batchesCommand = command{
	name:    "batches",
	summary: "every batch, finished ones included: its jobs waiting, starting, running, succeeded, failed, cancelled, and parts arrived",
	run:     runBatches,
}

// batchLister is what batches and why need of the store.
type batchLister interface {
	Batches(ctx context.Context, scope scheduler.Scope) ([]dynamostore.BatchCounts, error)
}

func runBatches(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("batches", stderr, fmt.Sprintf("usage: %s batches [flags] [SCOPE]\n\nLists every batch inside SCOPE (all when omitted), finished ones included,\nwith its jobs by state: one row per batch and model.\n\n%s\n\n", programName, operator.ScopeHelp))
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var scope scheduler.Scope
	switch len(pos) {
	case 0:
	case 1:
		if scope, _, err = operator.ParseScope(pos[0]); err != nil {
			fmt.Fprintf(stderr, "%s batches: %v\n", programName, err)
			return exitUsage
		}
	default:
		fs.Usage()
		return exitUsage
	}
	ctx := context.Background()
	st, _, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s batches: %v\n", programName, err)
		return exitFailed
	}
	rows, err := status.ListBatches(ctx, st, scope)
	if err != nil {
		fmt.Fprintf(stderr, "%s batches: %v\n", programName, err)
		return exitFailed
	}
	if *asJSON {
		if rows == nil {
			rows = []status.BatchRow{}
		}
		return writeJSON(stdout, stderr, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no batches")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tMODEL\tSTATE\tJOBS\tWAITING\tSTARTING\tRUNNING\tSUCCEEDED\tFAILED\tCANCELLED\tSKIPPED\tPROVIDER-RETRIES\tPARTS\t")
	for _, r := range rows {
		parts := "-"
		if r.PartsExpected > 0 {
			parts = fmt.Sprintf("%d/%d", r.PartsArrived, r.PartsExpected)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Batch, r.Model, r.State, r.Registered,
			r.Waiting, r.Starting, r.Running, r.Succeeded, r.Failed, r.Cancelled, r.Skipped, r.ProviderRetries, parts)
	}
	tw.Flush()
	return exitOK
}
