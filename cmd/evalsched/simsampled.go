package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/evalsched/evalsched/internal/sampling/montecarlo"
	"github.com/evalsched/evalsched/internal/sim"
	"github.com/evalsched/evalsched/internal/sim/report"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

var simSampledCommand = command{
	name:    "sim-sampled",
	summary: "simulate a sampled batch over many seeds: jobs saved, interval coverage",
	run:     runSimSampled,
}

const simSampledUsage = `usage: evalsched sim-sampled --scenario FILE [--seeds 200] [--seed N] [--json]
       evalsched sim-sampled --scenario FILE --replications N [--workers 2] [--seed N] [--json]

Runs one sampled batch (scenario format: scenarios/README.md, "Sampled
batches") once per seed beside the same batch in full, on the in-memory
store's sampled claim and stop rule, and prints the jobs, container-hours
and wall hours sampling saved and the share of seeds whose reported
interval held the batch's true pass rate. Exits 1 when that share is below
the scenario's confidence. Same scenario and seeds, same numbers.

With --replications, runs the batch N times on the sampling package
alone (internal/sampling/montecarlo: no store, no passes; fast enough
for 10,000 replications of 100,000 jobs) and prints how often the
interval missed the batch's true pass rate at the stop and at any look,
with their Monte-Carlo error, and the jobs run beside a fixed random
sample sized for the same margin at any rate. Exits 1 when either miss
share is above 1 − confidence.

flags:
`

func runSimSampled(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("sim-sampled", stderr, simSampledUsage)
	scenarioFile := fs.String("scenario", "", "sampled scenario file `FILE`; required")
	seeds := fs.Int("seeds", 200, "how many seeds to run, from the first (`N` ≥ 1)")
	seed := fs.Int64("seed", -1, "the first seed `N` (≥ 0; default the scenario's)")
	asJSON := fs.Bool("json", false, "print the report as JSON, with every seed's run")
	reps := fs.Int("replications", 0, "replicate `N` times on the sampling package alone (0: the full simulator over --seeds)")
	workers := fs.Int("workers", 2, "goroutines for --replications (`N` ≥ 1)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case *scenarioFile == "":
		fmt.Fprintln(stderr, "sim-sampled: --scenario is required")
		return exitUsage
	case *seeds < 1:
		fmt.Fprintln(stderr, "sim-sampled: --seeds must be at least 1")
		return exitUsage
	case *reps < 0:
		fmt.Fprintln(stderr, "sim-sampled: --replications must not be negative")
		return exitUsage
	case *workers < 1:
		fmt.Fprintln(stderr, "sim-sampled: --workers must be at least 1")
		return exitUsage
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "sim-sampled: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	sc, err := scenario.LoadSampled(*scenarioFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	first := sc.Seed
	if *seed >= 0 {
		first = *seed
	}
	if *reps > 0 {
		return runReplications(sc, uint64(first), *reps, *workers, *asJSON, stdout, stderr)
	}
	rep := sim.RunSampledSeeds(sc, first, *seeds)
	if *asJSON {
		if code := writeJSON(stdout, stderr, rep); code != exitOK {
			return code
		}
	} else {
		report.WriteSampled(stdout, sc, rep)
	}
	if !rep.CoverageHolds {
		fmt.Fprintf(stderr, "sim-sampled: coverage %.3f is below the stated confidence %g\n", rep.Coverage, rep.Confidence)
		return exitFailed
	}
	return exitOK
}

// runReplications is sim-sampled --replications.
func runReplications(sc *scenario.Sampled, first uint64, reps, workers int, asJSON bool, stdout, stderr io.Writer) int {
	r := montecarlo.Replicate(sim.SampledCase(sc), first, reps, workers)
	alpha := 1 - sc.Sampling.Confidence
	stop, _ := r.MissRate(r.MissStop)
	ever, _ := r.MissRate(r.MissEver)
	if asJSON {
		if code := writeJSON(stdout, stderr, r); code != exitOK {
			return code
		}
	} else {
		report.WriteReplications(stdout, sc, r)
	}
	if stop > alpha || ever > alpha {
		fmt.Fprintf(stderr, "sim-sampled: misses %.4f at the stop, %.4f at any look: above 1 − confidence %g\n", stop, ever, alpha)
		return exitFailed
	}
	return exitOK
}
