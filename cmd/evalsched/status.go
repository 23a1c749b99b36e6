package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/status"
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

// What status and why show, and how, is internal/status's; here are their
// flags.

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status", stderr, fmt.Sprintf("usage: %s status [flags]\n\nPer model: its limit, gateway depth, running, starting and waiting jobs (paused\nones beside them), end rate, when its backlog drains, breaker and what the next\npass would admit. Per batch with waiting jobs: its tier, admitted share, ETA and\nnext pass; --all adds running and finished batches with their jobs by state.\n\n", programName))
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	all := fs.Bool("all", false, "every batch, running and finished ones too, with its jobs by state (evalsched batches lists only those)")
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
	ctx := context.Background()
	st, cfg, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s status: %v\n", programName, err)
		return exitFailed
	}
	v, err := status.Look(ctx, st, cfg, time.Now(), counts)
	if err != nil {
		fmt.Fprintf(stderr, "%s status: %v\n", programName, err)
		return exitFailed
	}
	if *asJSON {
		return writeJSON(stdout, stderr, v)
	}
	status.WriteTable(stdout, v)
	return exitOK
}

func runWhy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("why", stderr, fmt.Sprintf("usage: %s why [flags] ACCOUNT/PROJECT/BATCH[/KEY] | JOB_ID\n\nA batch by the names it was submitted with; a job by its batch and key, or by its id.\n\n", programName))
	sf := addStoreFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
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
	st, cfg, err := sf.open(ctx)
	if err != nil {
		return fail(err)
	}
	jobID, err := status.JobOfTarget(ctx, st, target)
	if err != nil {
		if errors.Is(err, status.ErrNotATarget) {
			fmt.Fprintf(stderr, "%s why: want ACCOUNT/PROJECT/BATCH[/KEY] or a job id, not %q\n", programName, target)
			return exitUsage
		}
		return fail(err)
	}
	var job *status.JobView
	if jobID != "" {
		// A job: say where it is; if it waits, explain its batch.
		j, ok, err := st.Job(ctx, jobID)
		if err != nil {
			return fail(err)
		}
		if !ok {
			return fail(fmt.Errorf("no batch or job %s (evalsched batches lists the batches)", target))
		}
		job = &status.JobView{ID: j.ID, Key: j.Key, Batch: j.Account + "/" + j.Project + "/" + j.Batch, Model: j.Model,
			State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Reason: j.Reason}
		target = job.Batch
	}
	answers, pass, err := status.Why(ctx, st, cfg, time.Now(), target, job)
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		return writeJSON(stdout, stderr, answers)
	}
	status.WriteWhy(stdout, answers, job, pass)
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
