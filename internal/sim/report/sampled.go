package report

import (
	"fmt"
	"io"

	"github.com/evalsched/evalsched/internal/sampling/montecarlo"
	"github.com/evalsched/evalsched/internal/sim"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// WriteSampled prints sim-sampled's report: the jobs, container-hours and
// wall hours sampling saved over the seeds, and how often the interval
// held the batch's true pass rate.
func WriteSampled(w io.Writer, sc *scenario.Sampled, r sim.SampledReport) {
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

// WriteReplications prints sim-sampled --replications' report: how often
// the interval missed the true pass rate at the stop and at any look, with
// their Monte-Carlo error, and the jobs run beside a fixed random sample.
func WriteReplications(w io.Writer, sc *scenario.Sampled, r montecarlo.Report) {
	alpha := 1 - sc.Sampling.Confidence
	stop, stopSE := r.MissRate(r.MissStop)
	ever, everSE := r.MissRate(r.MissEver)
	fmt.Fprintf(w, "scenario %s: %d jobs in %d strata (pass rate %.4f), moe %g at %g%% confidence, min %d per stratum, %d in flight, window %d, failures ×%g; %d replications from seed %d\n",
		r.Case, r.Jobs, len(sc.Strata), r.TruePassRate, sc.Sampling.MOE, sc.Sampling.Confidence*100, sc.Sampling.MinPerStratum,
		sc.Slots, sc.Window, sc.FailFactor, r.Replications, r.FirstSeed)
	fmt.Fprintf(w, "missed the true rate: at the stop %.2f%% ± %.2f, at any look %.2f%% ± %.2f (± one Monte-Carlo standard error; allowed %.2f%%)\n",
		100*stop, 100*stopSE, 100*ever, 100*everSE, 100*alpha)
	fmt.Fprintf(w, "jobs run: %.0f (sd %.0f; %.0f counted at the stop, the rest in flight or past an unfinished one), %.1f%% saved; fixed random sample for ±%g at any rate: %d (adaptive/fixed %.2f); mean half-width %.4f; ran in full %d\n",
		r.MeanRan, r.SDRan, r.MeanPrefix, 100*(1-r.MeanRan/float64(r.Jobs)), sc.Sampling.MOE, r.FixedSample, r.MeanRan/float64(r.FixedSample), r.MeanHalfWidth, r.RanInFull)
}
