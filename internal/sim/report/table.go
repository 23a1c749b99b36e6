package report

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/evalsched/evalsched/internal/sim"
	"github.com/evalsched/evalsched/internal/sim/faults"
)

// WriteTable prints results side by side, one column per policy: per model
// the throughput, how well the provider was used while work waited, how
// long containers sat blocked, the depth and the final limit; per batch when
// it was first admitted, first started and finished; starts by tier; the
// wait share; and the totals, lost and double-launched jobs included.
func WriteTable(w io.Writer, results []*sim.Result) error {
	if len(results) == 0 {
		return nil
	}
	r0 := results[0]
	var head []string
	for _, r := range results {
		head = append(head, string(r.Policy))
	}
	fmt.Fprintf(w, "scenario %s, seed %d, %d s simulated\n", r0.Scenario, r0.Seed, r0.DurationS)
	for _, r := range results {
		switch r.Policy {
		case sim.Static:
			fmt.Fprintf(w, "static: the scenario's old caps (static_cap)\n")
		case sim.Oracle:
			fmt.Fprintf(w, "oracle: static with the best fixed caps in hindsight, %v, the best of %d static runs\n", r.OracleCaps, r.OracleRuns)
		}
	}
	fmt.Fprintln(w)
	// Labels are padded here to one width, so the right alignment the
	// numbers need leaves them left-aligned.
	w1 := len("BATCH (s after at_s)")
	for _, k := range append(slices.Clone(r0.ModelNames), r0.BatchKeys...) {
		w1 = max(w1, len(k))
	}
	const w2 = len("store check violations")
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(a, b string, cells ...string) {
		fmt.Fprintf(tw, "%-*s  %-*s\t%s\t\n", w1, a, w2, b, strings.Join(cells, "\t"))
	}
	blank := func() { row("", "", make([]string, len(results))...) }
	each := func(f func(*sim.Result) string) []string {
		out := make([]string, len(results))
		for i, r := range results {
			out[i] = f(r)
		}
		return out
	}

	row("MODEL", "", head...)
	for _, name := range r0.ModelNames {
		m := func(f func(*sim.ModelResult) string) []string {
			return each(func(r *sim.Result) string { return f(r.Models[name]) })
		}
		row(name, "succeeded", m(func(x *sim.ModelResult) string { return strconv.Itoa(x.Succeeded) })...)
		row("", "throughput/h", m(func(x *sim.ModelResult) string { return fmt.Sprintf("%.0f", x.ThroughputPerH) })...)
		row("", "backlog s", m(func(x *sim.ModelResult) string { return fmt.Sprintf("%.0f", x.BacklogS) })...)
		row("", "backlog utilization", m(func(x *sim.ModelResult) string { return fmt.Sprintf("%.3f", x.BacklogUtilization) })...)
		row("", "blocked share", m(func(x *sim.ModelResult) string { return fmt.Sprintf("%.3f", x.BlockedShare) })...)
		row("", "depth mean / p90", m(func(x *sim.ModelResult) string { return fmt.Sprintf("%.1f / %.0f", x.MeanDepth, x.P90Depth) })...)
		row("", "final limit", m(func(x *sim.ModelResult) string { return strconv.Itoa(x.FinalLimit) })...)
	}
	blank()
	row("BATCH (s after at_s)", "", head...)
	for _, key := range r0.BatchKeys {
		b := func(f func(*sim.BatchResult) string) []string {
			return each(func(r *sim.Result) string { return f(r.Batches[key]) })
		}
		row(key, "done / jobs", b(func(x *sim.BatchResult) string { return fmt.Sprintf("%d / %d", x.Succeeded+x.Failed, x.Jobs) })...)
		row("", "first admit", b(func(x *sim.BatchResult) string { return secs(x.FirstAdmitS) })...)
		row("", "first start", b(func(x *sim.BatchResult) string { return secs(x.FirstStartS) })...)
		row("", "last end", b(func(x *sim.BatchResult) string { return secs(x.LastEndS) })...)
	}
	blank()
	row("TIER", "starts (share)", head...)
	// Tier keys are "0", "1", …: sort them as numbers.
	tiers := slices.SortedFunc(maps.Keys(r0.Tiers), func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	for _, t := range tiers {
		row(t, "", each(func(r *sim.Result) string {
			total := 0
			for _, v := range r.Tiers {
				total += v.Starts
			}
			n := r.Tiers[t].Starts
			if total == 0 {
				return "0"
			}
			return fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(total))
		})...)
	}
	blank()
	// Lower is better; a policy's own finished jobs differ from another's,
	// so the second row compares the jobs every policy finished.
	row("WAIT SHARE", "p50/p90, own done", each(func(r *sim.Result) string {
		return share(r.WaitShare.P50) + " / " + share(r.WaitShare.P90)
	})...)
	n, p50, p90 := sim.CommonWaitShare(results)
	cells := make([]string, len(results))
	for i := range results {
		cells[i] = share(p50[i]) + " / " + share(p90[i])
	}
	row("(lower is better)", fmt.Sprintf("%d done by all", n), cells...)
	blank()
	row("TOTALS", "", head...)
	t := func(f func(sim.Totals) int) []string {
		return each(func(r *sim.Result) string { return strconv.Itoa(f(r.Totals)) })
	}
	row("", "submitted", t(func(x sim.Totals) int { return x.Submitted })...)
	row("", "succeeded", t(func(x sim.Totals) int { return x.Succeeded })...)
	row("", "failed", t(func(x sim.Totals) int { return x.Failed })...)
	row("", "waiting", t(func(x sim.Totals) int { return x.Waiting })...)
	row("", "running", t(func(x sim.Totals) int { return x.Running })...)
	row("", "launches", t(func(x sim.Totals) int { return x.Launches })...)
	row("", "yielded", t(func(x sim.Totals) int { return x.Yielded })...)
	row("", "lost", t(func(x sim.Totals) int { return x.Lost })...)
	row("", "double launched", t(func(x sim.Totals) int { return x.DoubleLaunched })...)
	row("", "store check violations", each(func(r *sim.Result) string { return strconv.Itoa(r.CheckViolations) })...)
	row("", "invariant violations", t(func(x sim.Totals) int { return x.InvariantViolations })...)
	if slices.ContainsFunc(results, func(r *sim.Result) bool { return r.Faults != nil }) {
		blank()
		row("FAULTS INJECTED", "", head...)
		injected := func(kind string) []string {
			return each(func(r *sim.Result) string {
				if r.Faults == nil {
					return "–" // the baselines ignore faults
				}
				if kind == "" {
					return strconv.Itoa(r.Totals.FaultsInjected)
				}
				return strconv.Itoa(r.Faults[kind])
			})
		}
		row("", "all", injected("")...)
		for _, k := range faults.Kinds() {
			row("", k.String(), injected(k.String())...)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for l := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(l, " \n"))
	}
	var walls []string
	for _, r := range results {
		walls = append(walls, fmt.Sprintf("%s %.2f s (%d events)", r.Policy, r.Wall.Seconds(), r.Events))
	}
	fmt.Fprintf(w, "\nwall time: %s\n", strings.Join(walls, ", "))
	for _, r := range results {
		WriteNotes(w, r)
	}
	return nil
}

// WriteNotes prints what went wrong in a run: broken invariants, refused
// launches, pass warnings; with faults, how the system met them. Nothing
// when all is well.
func WriteNotes(w io.Writer, r *sim.Result) {
	var retries []string
	for _, reason := range slices.Sorted(maps.Keys(r.Retries)) {
		retries = append(retries, fmt.Sprintf("%d × %s", r.Retries[reason], reason))
	}
	if len(r.Violations)+len(retries)+len(r.Warnings) == 0 && r.Chaos == nil {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", r.Policy)
	if c := r.Chaos; c != nil {
		fmt.Fprintf(w, "  faults met: %d invocations (%d exited on a held lease, %d stopped on losing it, %d crashed), %d passes failed, %d stale commits refused\n",
			c.Invocations, c.LeaseHeldExits, c.LeaseLost, c.Crashes, c.PassesFailed, c.StaleRefused)
		fmt.Fprintf(w, "  reconciler: %d runs; launches recorded %d, requeued %d, lost RUNNING %d, lost STOPPED %d; %d task events lost, %d redelivered\n",
			c.Reconciles, c.Repairs.Recorded, c.Repairs.Requeued, c.Repairs.Started, c.Repairs.Ended, c.EventsLost, c.EventRetries)
	}
	if n := r.Totals.InvariantViolations; n > len(r.Violations) {
		fmt.Fprintf(w, "  %d invariant violations, the first %d:\n", n, len(r.Violations))
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  VIOLATION %s\n", v)
	}
	for _, s := range retries {
		fmt.Fprintf(w, "  launches refused: %s\n", s)
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "  warning %s\n", s)
	}
}

func secs(p *float64) string {
	if p == nil {
		return "never"
	}
	return fmt.Sprintf("%.0f", *p)
}

func share(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *p)
}

// WriteSummary prints one line per run: the scenario, seed and policy, the
// faults injected by kind, and the invariants (lost, double launched,
// invariant violations), each of which must be 0.
func WriteSummary(w io.Writer, results []*sim.Result) {
	for _, r := range results {
		fmt.Fprintf(w, "%s seed=%d %s", r.Scenario, r.Seed, r.Policy)
		if r.Faults != nil {
			fmt.Fprintf(w, " faults=%d", r.Totals.FaultsInjected)
			var kinds []string
			for _, k := range faults.Kinds() {
				kinds = append(kinds, fmt.Sprintf("%s=%d", k, r.Faults[k.String()]))
			}
			fmt.Fprintf(w, " (%s)", strings.Join(kinds, " "))
		}
		t := r.Totals
		verdict := "ok"
		if sim.Broken(r) {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, " succeeded=%d lost=%d double_launched=%d invariant_violations=%d wall=%.1fs %s\n",
			t.Succeeded, t.Lost, t.DoubleLaunched, t.InvariantViolations, r.Wall.Seconds(), verdict)
	}
}
