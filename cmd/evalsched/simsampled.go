package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/evalsched/evalsched/internal/sampling/montecarlo"
	"github.com/evalsched/evalsched/internal/sim"
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
	fs := flag.NewFlagSet("sim-sampled", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simSampledUsage)
		fs.PrintDefaults()
	}
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
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailed
		}
	} else {
		printSampledReport(stdout, sc, rep)
	}
	if !rep.CoverageHolds {
		fmt.Fprintf(stderr, "sim-sampled: coverage %.3f is below the stated confidence %g\n", rep.Coverage, rep.Confidence)
		return exitFailed
	}
	return exitOK
}

func printSampledReport(w io.Writer, sc *scenario.Sampled, r sim.SampledReport) {
	fmt.Fprintf(w, "scenario %s: %d jobs in %d strata, moe %g at %g%% confidence, min %d per stratum; seeds %d..%d\n",
		r.Scenario, r.Jobs, len(sc.Strata), sc.Sampling.MOE, sc.Sampling.Confidence*100, sc.Sampling.MinPerStratum,
		r.FirstSeed, r.FirstSeed+int64(r.Seeds)-1)
	fmt.Fprintf(w, "%-18s %12s %12s %8s\n", "", "full", "sampled", "saved")
	fmt.Fprintf(w, "%-18s %12d %12.0f %7.1f%%\n", "jobs (mean)", r.Jobs, r.MeanRan, 100*r.JobsSaved)
	fmt.Fprintf(w, "%-18s %12.0f %12.0f %7.1f%%\n", "container-hours", r.MeanFullContH, r.MeanContainerH, 100*r.ContainerHSaved)
	var wall, fullWall float64
	for _, run := range r.Runs {
		wall += run.WallH
		fullWall += run.FullWallH
	}
	n := float64(len(r.Runs))
	fmt.Fprintf(w, "%-18s %12.2f %12.2f %7.1f%%\n", "wall hours", fullWall/n, wall/n, 100*r.WallSaved)
	fmt.Fprintf(w, "interval: mean half-width %.4f, mean |error| %.4f; held the true pass rate in %d of %d seeds (%.3f, stated %g)\n",
		r.MeanHalfWidth, r.MeanAbsError, r.Covered, r.Seeds, r.Coverage, r.Confidence)
}

// runReplications is sim-sampled --replications.
func runReplications(sc *scenario.Sampled, first uint64, reps, workers int, asJSON bool, stdout, stderr io.Writer) int {
	r := montecarlo.Replicate(sim.SampledCase(sc), first, reps, workers)
	alpha := 1 - sc.Sampling.Confidence
	stop, stopSE := r.MissRate(r.MissStop)
	ever, everSE := r.MissRate(r.MissEver)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailed
		}
	} else {
		fmt.Fprintf(stdout, "scenario %s: %d jobs in %d strata (pass rate %.4f), moe %g at %g%% confidence, min %d per stratum, %d in flight, window %d, failures ×%g; %d replications from seed %d\n",
			r.Case, r.Jobs, len(sc.Strata), r.TruePassRate, sc.Sampling.MOE, sc.Sampling.Confidence*100, sc.Sampling.MinPerStratum,
			sc.Slots, sc.Window, sc.FailFactor, r.Replications, r.FirstSeed)
		fmt.Fprintf(stdout, "missed the true rate: at the stop %.2f%% ± %.2f, at any look %.2f%% ± %.2f (± one Monte-Carlo standard error; allowed %.2f%%)\n",
			100*stop, 100*stopSE, 100*ever, 100*everSE, 100*alpha)
		fmt.Fprintf(stdout, "jobs run: %.0f (sd %.0f; %.0f counted at the stop, the rest in flight or past an unfinished one), %.1f%% saved; fixed random sample for ±%g at any rate: %d (adaptive/fixed %.2f); mean half-width %.4f; ran in full %d\n",
			r.MeanRan, r.SDRan, r.MeanPrefix, 100*(1-r.MeanRan/float64(r.Jobs)), sc.Sampling.MOE, r.FixedSample, r.MeanRan/float64(r.FixedSample), r.MeanHalfWidth, r.RanInFull)
	}
	if stop > alpha || ever > alpha {
		fmt.Fprintf(stderr, "sim-sampled: misses %.4f at the stop, %.4f at any look: above 1 − confidence %g\n", stop, ever, alpha)
		return exitFailed
	}
	return exitOK
}
