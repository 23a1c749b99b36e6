package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/sim"
	"github.com/evalsched/evalsched/internal/sim/faults"
	"github.com/evalsched/evalsched/internal/sim/report"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

var simCommand = command{
	name:    "sim",
	summary: "simulate a scenario under the dynamic, static and unbounded policies",
	run:     runSim,
}

const simUsage = `usage: evalsched sim --scenario FILE [flags]
       evalsched sim --family N --seed S [--lane K] [--family-out DIR] [--oracle-cache DIR] [--oracle-start | --warm] [--json]
       evalsched sim --family N --seed S --twin [--lane K] [--json]

Runs the real scheduler pass against a simulated gateway, providers and
Fargate (scenario format: scenarios/README.md) and prints the metrics per
policy side by side. Same scenario and seed, same numbers.

--faults injects, at times drawn from the seed, the faults the real system
meets (crash, overlap, events, runtask, store, metrics, intake, provider;
see internal/sim/DESIGN.md) into policy dynamic; the baselines ignore them.
Same scenario, seed and faults, same numbers. With --faults the command
exits 1 when a run lost a job, launched one twice or broke an invariant.

--family draws N random lanes from seed S (distributions:
scenarios/README.md, "Scenario family"), runs each under policy dynamic and
finds its oracle, the best fixed cap in hindsight, by sweeping policy
static's caps; it prints a line per lane and the summary against the
targets, and exits 1 when the family misses one. --lane K runs lane K only
(the same lane whatever N); --family-out DIR writes each lane's scenario
file there (lane-K.json), to replay with --scenario. --oracle-cache DIR
keeps each lane's oracle in DIR and reads it back on the next run, which
then runs only policy dynamic (a few times faster): for iterating on the
controller. A lane's file is keyed by its scenario; a change to the
simulator's engine or to policy static is not seen: empty DIR after one.
--oracle-start starts policy dynamic at each model's oracle cap (its
initial limit), which no controller knows in advance: judged as usual, the
family then bounds what a perfect ramp is worth (scenarios/README.md, "The
ramp bound"). --warm runs each lane twice and judges the second run, which
starts with the provider concurrency the first learned, as a model state
kept from one run to the next does.

--twin, with --family, measures instead each lane's twin bound
(scenarios/README.md, "The twin bound"): for a lane whose provider's
capacity drops, the lowest blocked share a policy that cannot foresee the
drop reaches, on the lane and on its twin (the lane without the drop)
alike. It prints, per lane with a drop, the bound for each cap held before
the drop is seen, the verdict, and a summary; lanes without a drop have
none.

flags:
`

// simFlags are sim's flags.
type simFlags struct {
	scenarioFile, policy, reportFile, passLog, faults, oracleGrid *string
	seed                                                          *int64
	duration                                                      *int
	asJSON, trace, summary, quiet                                 *bool
	family, lane, workers                                         *int
	familyOut, oracleCache                                        *string
	oracleStart, twin, warm, configured                           *bool
}

func addSimFlags(fs *flag.FlagSet) simFlags {
	return simFlags{
		scenarioFile: fs.String("scenario", "", "scenario file (JSON, format v1) `FILE`; required"),
		policy:       fs.String("policy", "all", "dynamic, static (the scenario's old caps), oracle (the best fixed caps in hindsight: a sweep of static), unbounded or all"),
		seed:         fs.Int64("seed", -1, "override the scenario's seed `N` (≥ 0)"),
		duration:     fs.Int("duration", 0, "override the scenario's duration_s, in seconds `S`"),
		asJSON:       fs.Bool("json", false, "print the README's output object (an array for --policy all)"),
		trace:        fs.Bool("trace", false, "with --json: add every pass of every model (passes)"),
		reportFile:   fs.String("report", "", "write a self-contained HTML report with plots to `FILE`"),
		passLog:      fs.String("pass-log", "", "write the dynamic policy's pass log (limit decisions, why jobs wait) to `FILE`"),
		faults:       fs.String("faults", "", "inject faults into policy dynamic: all, or a comma-separated list of `KINDS` ("+faultKinds()+")"),
		summary:      fs.Bool("summary", false, "print one summary line per policy (faults, lost, double launched, invariant violations) instead of the table"),
		quiet:        fs.Bool("quiet", false, "no progress line on stderr"),
		oracleGrid:   fs.String("oracle-grid", "coarse", "policy oracle's sweep: coarse (caps × 0.5-2, make run) or fine (× 0.25-4, as the family)"),
		family:       fs.Int("family", 0, "draw `N` random lanes from --seed and measure dynamic against each lane's oracle"),
		lane:         fs.Int("lane", -1, "with --family: run lane `K` only"),
		familyOut:    fs.String("family-out", "", "with --family: write each lane's scenario file to `DIR`"),
		workers:      fs.Int("workers", 2, "with --family: lanes run at once (`N`, 1 or 2)"),
		oracleCache:  fs.String("oracle-cache", "", "with --family: keep each lane's oracle in `DIR` and reuse it (only policy dynamic runs again)"),
		oracleStart:  fs.Bool("oracle-start", false, "with --family: start policy dynamic at each model's oracle cap (the ramp bound: what a perfect ramp is worth)"),
		twin:         fs.Bool("twin", false, "with --family: measure each lane's twin bound (the best a policy that cannot foresee a capacity drop can do) instead of dynamic"),
		warm:         fs.Bool("warm", false, "with --family: judge a second run of each lane that starts with what a first run learned (the model state's learned concurrency)"),
		configured:   fs.Bool("configured-concurrency", false, "with --family: the operator gives each model its provider's concurrency at the start (the model item's provider_concurrency)"),
	}
}

// isFamily reports whether any flag of --family is given.
func (f simFlags) isFamily() bool {
	return *f.family != 0 || *f.lane >= 0 || *f.familyOut != "" || *f.oracleCache != "" || *f.configured || *f.twin || *f.oracleStart || *f.warm
}

// familyMisuse is what is wrong with the family's flags, "" when nothing.
func (f simFlags) familyMisuse(fs *flag.FlagSet) string {
	switch {
	case fs.NArg() > 0:
		return fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case *f.twin && *f.family <= 0:
		return "--twin needs --family"
	case *f.family <= 0:
		return "--family must be at least 1 (--lane, --family-out, --oracle-cache, --oracle-start, --warm, --configured-concurrency and --twin need it)"
	case *f.twin && *f.oracleCache != "":
		return "--oracle-cache and --twin exclude each other (the twin bound sweeps twins of the lanes)"
	case *f.twin && *f.warm:
		return "--warm and --twin exclude each other (the twin bound runs no dynamic lane)"
	case *f.twin && *f.oracleStart:
		return "--oracle-start and --twin exclude each other (the twin bound runs no dynamic lane)"
	case *f.scenarioFile != "":
		return "--family and --scenario exclude each other"
	case *f.seed < 0:
		return "--family needs --seed"
	case *f.lane >= *f.family:
		return fmt.Sprintf("--lane must be within 0..%d (--family %d)", *f.family-1, *f.family)
	case *f.workers < 1 || *f.workers > 2:
		return "--workers must be 1 or 2"
	}
	return ""
}

// scenarioMisuse is what is wrong with a scenario run's flags, "" when
// nothing.
func (f simFlags) scenarioMisuse(fs *flag.FlagSet) string {
	switch {
	case fs.NArg() > 0:
		return fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case *f.scenarioFile == "":
		return "--scenario is required"
	case *f.trace && !*f.asJSON:
		return "--trace needs --json"
	case *f.summary && *f.asJSON:
		return "--summary and --json exclude each other"
	case *f.seed < -1:
		return "--seed must not be negative"
	case *f.duration < 0 || *f.duration > scenario.MaxDurationS:
		return fmt.Sprintf("--duration must be within 1..%d seconds", scenario.MaxDurationS)
	case *f.oracleGrid != "coarse" && *f.oracleGrid != "fine":
		return fmt.Sprintf("--oracle-grid must be coarse or fine, got %q", *f.oracleGrid)
	}
	return ""
}

func runSim(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("sim", stderr, simUsage)
	f := addSimFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "evalsched sim: "+format+"\n", a...)
		fs.Usage()
		return exitUsage
	}
	if f.isFamily() {
		if msg := f.familyMisuse(fs); msg != "" {
			return usageErr("%s", msg)
		}
		return runFamily(familyRun{seed: *f.seed, n: *f.family, lane: *f.lane, outDir: *f.familyOut, oracleCache: *f.oracleCache, workers: *f.workers,
			configured: *f.configured, twin: *f.twin, oracleStart: *f.oracleStart, warm: *f.warm}, *f.asJSON, *f.quiet, stdout, stderr)
	}
	if msg := f.scenarioMisuse(fs); msg != "" {
		return usageErr("%s", msg)
	}
	policies, err := sim.ParsePolicy(*f.policy)
	if err != nil {
		return usageErr("--policy: %v", err)
	}
	faultSet, err := faults.Parse(*f.faults)
	if err != nil {
		return usageErr("--faults: %v", err)
	}
	return runScenario(f, policies, faultSet, stdout, stderr)
}

// runScenario is sim --scenario: run the policies, write the report and
// the results.
func runScenario(f simFlags, policies []sim.Policy, faultSet faults.Set, stdout, stderr io.Writer) int {
	sc, err := scenario.Load(*f.scenarioFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	if *f.seed >= 0 {
		sc.Seed = *f.seed
	}
	if *f.duration > 0 {
		sc.DurationS = *f.duration
	}
	opt := sim.Options{Trace: *f.trace, Faults: faultSet, OracleCoarse: *f.oracleGrid == "coarse"}
	if *f.passLog != "" {
		file, err := os.Create(*f.passLog)
		if err != nil {
			fmt.Fprintf(stderr, "evalsched sim: pass log: %v\n", err)
			return exitFailed
		}
		defer file.Close()
		w := bufio.NewWriter(file)
		defer w.Flush()
		opt.PassLog = w
	}
	prog := newProgress(stderr, !*f.quiet, policies, sc.DurationS)
	opt.Progress = prog.update
	results, err := sim.RunAll(sc, policies, opt)
	prog.done()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	if *f.reportFile != "" {
		if err := cliout.WriteFile(*f.reportFile, func(w io.Writer) error { return report.WriteHTML(w, results) }); err != nil {
			fmt.Fprintf(stderr, "evalsched sim: write report: %v\n", err)
			return exitFailed
		}
	}
	if code := writeSimResults(f, results, stdout, stderr); code != exitOK {
		return code
	}
	if *f.reportFile != "" && !*f.asJSON {
		fmt.Fprintf(stdout, "\nreport: %s\n", *f.reportFile)
	}
	if faultSet != 0 && slices.ContainsFunc(results, sim.Broken) {
		return exitFailed
	}
	return exitOK
}

// writeSimResults writes the results as JSON, one summary line per policy,
// or the table; invariants broken go to stderr.
func writeSimResults(f simFlags, results []*sim.Result, stdout, stderr io.Writer) int {
	switch {
	case *f.asJSON:
		var v any = results[0]
		if *f.policy == "all" {
			v = results
		}
		if code := writeJSON(stdout, stderr, v); code != exitOK {
			return code
		}
		for _, r := range results { // invariants go to stderr, never into the JSON
			report.WriteNotes(stderr, r)
		}
	case *f.summary:
		report.WriteSummary(stdout, results)
		for _, r := range results {
			if sim.Broken(r) { // what broke, with times and jobs
				report.WriteNotes(stderr, r)
			}
		}
	default:
		if err := report.WriteTable(stdout, results); err != nil {
			fmt.Fprintf(stderr, "evalsched sim: %v\n", err)
			return exitFailed
		}
	}
	return exitOK
}

// familyRun is what the flags ask of the family.
type familyRun struct {
	seed             int64
	n, lane, workers int
	outDir           string
	oracleCache      string // keeps the lanes' oracles (sim.OracleCache); "": none
	configured       bool   // the operator configured each provider's concurrency
	twin             bool   // the lanes' twin bounds instead of dynamic against the oracle
	oracleStart      bool   // dynamic starts at the oracle's caps (sim.RunFamily)
	warm             bool   // dynamic's second run, with what the first learned
}

// runFamily draws the lanes, writes their files when asked, runs them and
// prints the lanes and the summary; it fails when the family misses a
// target.
func runFamily(f familyRun, asJSON, quiet bool, stdout, stderr io.Writer) int {
	ks, lanes := scenario.FamilyLanes(f.seed, f.n, f.lane, f.configured)
	if f.outDir != "" {
		if err := scenario.WriteLanes(f.outDir, ks, lanes); err != nil {
			fmt.Fprintf(stderr, "evalsched sim: --family-out: %v\n", err)
			return exitFailed
		}
	}
	if f.twin {
		return runTwins(f, ks, lanes, asJSON, quiet, stdout, stderr)
	}
	start := time.Now()
	progress := func(done int, lr sim.LaneResult) {
		if quiet || done%10 != 0 && done != len(lanes) {
			return
		}
		verdict := "meets"
		if !lr.Meets {
			verdict = "misses"
		}
		fmt.Fprintf(stderr, "family seed %d: %d/%d lanes done, %s (lane %d %s)\n", f.seed, done, len(lanes), cliout.Human(time.Since(start).Seconds()), lr.Lane, verdict)
	}
	if f.oracleCache != "" {
		if err := os.MkdirAll(f.oracleCache, 0o755); err != nil {
			fmt.Fprintf(stderr, "evalsched sim: --oracle-cache: %v\n", err)
			return exitFailed
		}
	}
	results, err := sim.RunFamily(lanes, ks, f.workers, sim.OracleCache(f.oracleCache), sim.LaneMode{OracleStart: f.oracleStart, Warm: f.warm}, progress)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	sum := sim.Summarize(f.seed, results)
	sum.WallS = math.Round(time.Since(start).Seconds()*10) / 10
	run := report.FamilyRun{Seed: f.seed, Workers: f.workers, WallS: sum.WallS, OracleStart: f.oracleStart, Warm: f.warm}
	if !asJSON {
		report.WriteFamilyText(stdout, run, results, sum)
	} else if err := report.WriteFamilyJSON(stdout, run, results, sum); err != nil {
		fmt.Fprintf(stderr, "evalsched sim: %v\n", err)
		return exitFailed
	}
	if f.lane < 0 && !sum.Pass {
		return exitFailed
	}
	return exitOK
}

// runTwins measures the lanes' twin bounds and prints them, lane by lane
// (those with a drop), and a summary; with asJSON the []TwinResult.
func runTwins(f familyRun, ks []int, lanes []*scenario.Scenario, asJSON, quiet bool, stdout, stderr io.Writer) int {
	start := time.Now()
	progress := func(done int, r sim.TwinResult) {
		if quiet || done%10 != 0 && done != len(lanes) {
			return
		}
		fmt.Fprintf(stderr, "twin bound seed %d: %d/%d lanes done, %s (lane %d)\n", f.seed, done, len(lanes), cliout.Human(time.Since(start).Seconds()), r.Lane)
	}
	results, err := sim.RunTwins(lanes, ks, f.workers, progress)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	if asJSON {
		return writeJSON(stdout, stderr, results)
	}
	report.WriteTwins(stdout, lanes, results)
	fmt.Fprintf(stdout, "twin bound seed %d: wall %s on %d worker(s)\n", f.seed, cliout.Human(time.Since(start).Seconds()), f.workers)
	return exitOK
}

// faultKinds lists the fault kinds for the usage text.
func faultKinds() string {
	var names []string
	for _, k := range faults.Kinds() {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

// progress draws one line on stderr, redrawn at most every 200 ms, and
// only once a run has taken more than a second: short runs stay quiet.
type progress struct {
	mu      sync.Mutex
	line    *cliout.Line
	start   time.Time
	order   []sim.Policy
	reached map[sim.Policy]float64
	total   int
}

func newProgress(w io.Writer, on bool, ps []sim.Policy, total int) *progress {
	return &progress{line: cliout.NewLine(w, on, 200*time.Millisecond), start: time.Now(), order: ps, reached: map[sim.Policy]float64{}, total: total}
}

func (p *progress) update(pol sim.Policy, simS float64, _ int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reached[pol] = simS
	if time.Since(p.start) < time.Second {
		return
	}
	var parts []string
	for _, q := range p.order {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", q, 100*p.reached[q]/float64(p.total)))
	}
	p.line.Draw(false, "sim: %s of %s simulated (%s)", strings.Join(parts, ", "), cliout.Human(float64(p.total)), cliout.Human(time.Since(p.start).Seconds()))
}

func (p *progress) done() { p.line.Clear() }
