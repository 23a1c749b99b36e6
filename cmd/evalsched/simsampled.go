package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/evalsched/evalsched/internal/sim"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

var simSampledCommand = command{
	name:    "sim-sampled",
	summary: "simulate a sampled batch over many seeds: jobs saved, interval coverage",
	run:     runSimSampled,
}

const simSampledUsage = `usage: evalsched sim-sampled --scenario FILE [--seeds 200] [--seed N] [--json]

Runs one sampled batch (scenario format: scenarios/README.md, "Sampled
batches") once per seed beside the same batch in full, on the in-memory
store's sampled claim and stop rule, and prints the jobs, container-hours
and wall hours sampling saved and the share of seeds whose reported
interval held the batch's true pass rate. Exits 1 when that share is below
the scenario's confidence. Same scenario and seeds, same numbers.

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
