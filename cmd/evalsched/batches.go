package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

var batchesCommand = command{
	name:    "batches",
	summary: "every batch, finished ones included: its jobs waiting, starting, running, succeeded, failed, cancelled, and parts arrived",
	run:     runBatches,
}

// batchRow is one batch's jobs of one model by state.
type batchRow struct {
	Batch      string `json:"batch"` // ACCOUNT/PROJECT/BATCH
	Model      string `json:"model"`
	State      string `json:"state"` // waiting, running (none waits), finished (every job ended)
	Registered int    `json:"registered"`
	Waiting    int    `json:"waiting"`
	Starting   int    `json:"starting"` // claimed or launched, not yet running
	Running    int    `json:"running"`
	Succeeded  int    `json:"succeeded"`
	Failed     int    `json:"failed"`
	Cancelled  int    `json:"cancelled"`
	Skipped    int    `json:"skipped,omitempty"` // a sampled batch's rest, once its estimate was good enough
	// ProviderRetries: attempts the provider failed (exit 75) that sent a
	// job back to waiting; not in any state's count.
	ProviderRetries int `json:"provider_retries,omitempty"`
	// SubmittedTier is the tier the batch was sent with (< 0: none), for
	// status --all's tier of a batch none of whose jobs wait.
	SubmittedTier int `json:"-"`
	// PartsArrived of PartsExpected for a batch sent in several messages;
	// both 0 for a batch of one message.
	PartsArrived  int `json:"parts_arrived"`
	PartsExpected int `json:"parts_expected"`
}

func rowOf(c dynamostore.BatchCounts) batchRow {
	r := batchRow{
		Batch: c.Account + "/" + c.Project + "/" + c.Batch, Model: c.Model,
		Registered: c.Registered, Waiting: c.Waiting, Starting: c.Starting, Running: c.Running,
		Succeeded: c.Succeeded, Failed: c.Failed, Cancelled: c.Cancelled, Skipped: c.Skipped,
		ProviderRetries: c.ProviderRetries, PartsArrived: c.PartsSeen, PartsExpected: c.Parts, SubmittedTier: c.Tier,
	}
	switch {
	case c.Waiting > 0:
		r.State = "waiting"
	case c.Starting+c.Running > 0 || c.PartsSeen < c.Parts:
		r.State = "running"
	default:
		r.State = "finished"
	}
	return r
}

// batchLister is what batches and why need of the store.
type batchLister interface {
	Batches(ctx context.Context, scope scheduler.Scope) ([]dynamostore.BatchCounts, error)
}

func listBatches(ctx context.Context, st batchLister, scope scheduler.Scope) ([]batchRow, error) {
	counts, err := st.Batches(ctx, scope)
	if err != nil {
		return nil, err
	}
	rows := make([]batchRow, len(counts))
	for i, c := range counts {
		rows[i] = rowOf(c)
	}
	return rows, nil
}

func runBatches(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("batches", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s batches [flags] [SCOPE]\n\nLists every batch inside SCOPE (all when omitted), finished ones included,\nwith its jobs by state: one row per batch and model.\n\n%s\n\n", programName, scopeHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var scope scheduler.Scope
	switch len(pos) {
	case 0:
	case 1:
		if scope, _, err = parseScope(pos[0]); err != nil {
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
	rows, err := listBatches(ctx, st, scope)
	if err != nil {
		fmt.Fprintf(stderr, "%s batches: %v\n", programName, err)
		return exitFailed
	}
	if *asJSON {
		if rows == nil {
			rows = []batchRow{}
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
