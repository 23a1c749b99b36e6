package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/evalsched/evalsched/internal/sim"
)

// WriteHTML writes one self-contained HTML page: inline SVG drawn here by
// hand, no script, no network. It shows, for dynamic, each model's limit,
// running jobs, provider capacity and the depth the pass saw over time;
// container starts by tier and by project over time for every policy, on
// one y-scale per chart kind; and the policies side by side: per batch its
// first start and its finish on log axes, the wait share over the jobs every
// policy finished, the old caps (static) beside the oracle.
func WriteHTML(w io.Writer, results []*sim.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("no results to report")
	}
	bw := bufio.NewWriter(w)
	rp := &reporter{w: bw, results: results}
	rp.page()
	return bw.Flush()
}

// maxPoints caps a plotted series; longer ones are thinned evenly.
const maxPoints = 1000

var policyColor = map[sim.Policy]string{sim.Dynamic: "#1f77b4", sim.Static: "#ff7f0e", sim.Oracle: "#2ca02c", sim.Unbounded: "#7f7f7f"}

// palette colours tiers and projects.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"}

type reporter struct {
	w       *bufio.Writer
	results []*sim.Result
}

func (rp *reporter) printf(format string, a ...any) { fmt.Fprintf(rp.w, format, a...) }

func esc(s string) string { return html.EscapeString(s) }

func (rp *reporter) page() {
	r0 := rp.results[0]
	rp.printf(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>evalsched sim: %s</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:15px;margin:12px 0 4px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}
th:first-child,td:first-child{text-align:left}.grid{display:flex;flex-wrap:wrap;gap:16px}
.note{color:#666}.bad{color:#b00;font-weight:bold}svg{background:#fff}
svg text{font:11px system-ui,sans-serif;fill:#333}
</style></head><body>
<h1>evalsched sim: %s</h1>
<p class="note">seed %d, %d simulated seconds. Definitions: scenarios/README.md.</p>
`, esc(r0.Scenario), esc(r0.Scenario), r0.Seed, r0.DurationS)
	rp.totals()
	rp.sideBySide()
	for _, r := range rp.results {
		if r.Policy == sim.Dynamic {
			rp.models(r)
		}
	}
	rp.starts()
	rp.printf("</body></html>\n")
}

func (rp *reporter) totals() {
	rp.printf("<h2>Totals</h2><table><tr><th>policy</th><th>submitted</th><th>succeeded</th><th>failed</th><th>waiting</th><th>running</th><th>launches</th><th>lost</th><th>double launched</th><th>store check violations</th></tr>\n")
	for _, r := range rp.results {
		t := r.Totals
		bad := func(n int) string {
			if n != 0 {
				return fmt.Sprintf(`<span class="bad">%d</span>`, n)
			}
			return "0"
		}
		rp.printf("<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			r.Policy, t.Submitted, t.Succeeded, t.Failed, t.Waiting, t.Running, t.Launches, bad(t.Lost), bad(t.DoubleLaunched), bad(r.CheckViolations))
	}
	rp.printf("</table>\n")
	for _, r := range rp.results {
		for _, v := range r.Violations {
			rp.printf(`<p class="bad">%s: %s</p>`+"\n", r.Policy, esc(v))
		}
		for reason, n := range sortedCounts(r.Retries) {
			rp.printf(`<p class="note">%s: %d launches refused: %s</p>`+"\n", r.Policy, n, esc(reason))
		}
	}
}

// sortedCounts iterates a count map in key order.
func sortedCounts(m map[string]int) func(yield func(string, int) bool) {
	return func(yield func(string, int) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		for i := 1; i < len(keys); i++ {
			for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
			}
		}
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

func (rp *reporter) sideBySide() {
	r0 := rp.results[0]
	rp.printf("<h2>Policies side by side</h2>\n<div class=\"grid\">\n")
	var names []string
	for _, r := range rp.results {
		names = append(names, string(r.Policy))
	}
	perModel := func(title string, f func(*sim.ModelResult) float64, format string) {
		vals := make([][]*float64, len(r0.ModelNames))
		for g, m := range r0.ModelNames {
			for _, r := range rp.results {
				mr := r.Models[m]
				if mr.RunningS == 0 && mr.Succeeded+mr.Failed == 0 {
					// The policy never ran the model: its 0 blocked would
					// read as the best value.
					vals[g] = append(vals[g], nil)
					continue
				}
				v := f(mr)
				vals[g] = append(vals[g], &v)
			}
		}
		rp.bars(title, r0.ModelNames, names, vals, format, "—", false)
	}
	perModel("Throughput (succeeded jobs per hour; higher is better)", func(m *sim.ModelResult) float64 { return m.ThroughputPerH }, "%.0f")
	perModel("Backlog utilization (provider busy while work waits; higher is better)", func(m *sim.ModelResult) float64 { return m.BacklogUtilization }, "%.3f")
	perModel("Blocked share (container time queued at the gateway; lower is better)", func(m *sim.ModelResult) float64 { return m.BlockedShare }, "%.3f")
	perBatch := func(title string, f func(*sim.BatchResult) *float64) {
		vals := make([][]*float64, len(r0.BatchKeys))
		for g, k := range r0.BatchKeys {
			for _, r := range rp.results {
				vals[g] = append(vals[g], f(r.Batches[k]))
			}
		}
		// A log axis: one batch that waited hours must not flatten the
		// seconds of the others.
		rp.bars(title, r0.BatchKeys, names, vals, "%.0f", never, true)
	}
	perBatch("First start of each batch (s after submit, log scale; shorter is better)", func(b *sim.BatchResult) *float64 { return b.FirstStartS })
	perBatch("Each batch finished (its last job's end, s after submit, log scale; shorter is better)", func(b *sim.BatchResult) *float64 { return b.LastEndS })
	n, p50, p90 := sim.CommonWaitShare(rp.results)
	rp.bars(fmt.Sprintf("Wait share ((submit→running + blocked at the gateway) / submit→end; lower is better) over the %d jobs every policy finished", n),
		[]string{"p50", "p90"}, names, [][]*float64{p50, p90}, "%.2f", "–", false)
	rp.printf("</div>\n")
	if n == 0 {
		rp.printf(`<p class="note">No job finished under every policy: the wait shares are not comparable.</p>` + "\n")
	}
	rp.printf(`<p class="note">%s</p>`+"\n", esc(baselineNote(rp.results)))
}

// baselineNote says what each baseline is and what dynamic is measured
// against it.
func baselineNote(results []*sim.Result) string {
	var parts []string
	for _, r := range results {
		switch r.Policy {
		case sim.Static:
			parts = append(parts, "static: the scenario's old hand-set caps (static_cap); against it dynamic wins throughput")
		case sim.Oracle:
			parts = append(parts, fmt.Sprintf("oracle: static with the best fixed caps in hindsight (%v, the best of %d static runs), which no operator can set in advance; against it dynamic is measured on fairness (small batches behind big ones, tiers) and adaptation (capacity changes, error bursts)", r.OracleCaps, r.OracleRuns))
		case sim.Unbounded:
			parts = append(parts, "unbounded: no per-model cap")
		}
	}
	return strings.Join(parts, ". ") + "."
}

func (rp *reporter) models(r *sim.Result) {
	s := r.Series
	if s == nil || len(s.T) == 0 {
		return
	}
	rp.printf("<h2>dynamic: each model over time</h2>\n<p class=\"note\">Left: the limit the pass set, containers running and the provider's concurrency. Right: the gateway depth the pass saw (metric_delay_s late) against the target.</p>\n")
	x := make([]float64, len(s.T))
	for i, t := range s.T {
		x[i] = float64(t)
	}
	for i, name := range s.Models {
		rp.printf("<h3>%s</h3><div class=\"grid\">\n", esc(name))
		rp.lines("jobs", x, []line{
			{"limit", "#1f77b4", false, ints(s.Limit[i])},
			{"running", "#2ca02c", false, ints(s.Running[i])},
			{"provider concurrency", "#d62728", true, ints(s.Capacity[i])},
		}, 0)
		target := make([]float64, len(x))
		for k := range target {
			target[k] = s.Targets[i]
		}
		rp.lines("gateway depth", x, []line{
			{"depth seen", "#9467bd", false, s.Depth[i]},
			{"target", "#555", true, target},
		}, 0)
		rp.printf("</div>\n")
	}
}

func (rp *reporter) starts() {
	rp.printf("<h2>Container starts over time (cumulative)</h2>\n<p class=\"note\">One y-scale for every policy, per chart kind.</p>\n")
	// One scale per chart kind across the policies, so the charts compare.
	var tierMax, projMax float64
	for _, r := range rp.results {
		if s := r.Series; s != nil {
			for _, v := range s.TierStarts {
				if len(v) > 0 {
					tierMax = max(tierMax, float64(v[len(v)-1]))
				}
			}
			for _, v := range s.ProjectStarts {
				if len(v) > 0 {
					projMax = max(projMax, float64(v[len(v)-1]))
				}
			}
		}
	}
	for _, r := range rp.results {
		s := r.Series
		if s == nil || len(s.T) == 0 {
			continue
		}
		x := make([]float64, len(s.T))
		for i, t := range s.T {
			x[i] = float64(t)
		}
		rp.printf("<h3>%s</h3><div class=\"grid\">\n", r.Policy)
		var tiers []line
		for t := range s.Tiers {
			tiers = append(tiers, line{"tier " + strconv.Itoa(t), palette[t%len(palette)], false, ints(s.TierStarts[t])})
		}
		rp.lines("starts by tier", x, tiers, tierMax)
		var projects []line
		for p, name := range s.Projects {
			projects = append(projects, line{name, palette[p%len(palette)], p >= len(palette), ints(s.ProjectStarts[p])})
		}
		rp.lines("starts by project", x, projects, projMax)
		rp.printf("</div>\n")
	}
}

type line struct {
	name  string
	color string
	dash  bool
	y     []float64 // NaN: a gap
}

func ints(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Chart geometry.
const (
	chartW, chartH = 640, 260
	padL, padR     = 56, 12
	padT, padB     = 28, 34
)

// lines draws a line chart over time (seconds), thinned to maxPoints; its
// y axis reaches at least ymin, so charts to compare can share a scale.
func (rp *reporter) lines(title string, x []float64, ls []line, ymin float64) {
	step := max(1, (len(x)+maxPoints-1)/maxPoints)
	xmax := x[len(x)-1]
	ymax := 0.0
	for _, l := range ls {
		for _, v := range l.y {
			if !math.IsNaN(v) {
				ymax = max(ymax, v)
			}
		}
	}
	ymax = niceCeil(max(ymax, ymin))
	legendRows := (len(ls) + 3) / 4
	h := chartH + 14*legendRows
	top := padT + 14*legendRows
	pw, ph := float64(chartW-padL-padR), float64(h-top-padB)
	sx := func(v float64) float64 { return padL + pw*v/math.Max(xmax, 1) }
	sy := func(v float64) float64 { return float64(top) + ph - ph*v/ymax }
	rp.printf(`<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" data-ymax="%g"><title>%s</title>`+"\n", chartW, h, chartW, h, ymax, esc(title))
	rp.printf(`<text x="%d" y="14" style="font-weight:bold">%s</text>`+"\n", padL, esc(title))
	for i, l := range ls {
		lx, ly := padL+150*(i%4), 28+14*(i/4)
		rp.printf(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
			lx, ly-4, lx+16, ly-4, l.color, dashAttr(l.dash), lx+20, ly, esc(l.name))
	}
	rp.axes(top, h, ymax, xmax, sx, sy)
	for _, l := range ls {
		var b strings.Builder
		flush := func() {
			if b.Len() > 0 {
				rp.printf(`<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`+"\n", l.color, dashAttr(l.dash), b.String())
				b.Reset()
			}
		}
		for i := 0; i < len(x); i += step {
			v := l.y[i]
			if math.IsNaN(v) {
				flush()
				continue
			}
			fmt.Fprintf(&b, "%.1f,%.1f ", sx(x[i]), sy(v))
		}
		flush()
	}
	rp.printf("</svg>\n")
}

func dashAttr(dash bool) string {
	if dash {
		return ` stroke-dasharray="5,3"`
	}
	return ""
}

// axes draws the frame, 5 y ticks and time ticks in minutes.
func (rp *reporter) axes(top, h int, ymax, xmax float64, sx, sy func(float64) float64) {
	bottom := float64(h - padB)
	rp.printf(`<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#999"/>`, padL, top, padL, bottom)
	rp.printf(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`+"\n", padL, bottom, chartW-padR, bottom)
	for k := 0; k <= 5; k++ {
		v := ymax * float64(k) / 5
		y := sy(v)
		rp.printf(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			padL, y, chartW-padR, y, padL-4, y+4, compact(v))
	}
	minutes := xmax / 60
	tick := niceCeil(minutes / 8)
	for m := 0.0; m <= minutes+1e-9; m += tick {
		x := sx(m * 60)
		rp.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			x, bottom, x, bottom+4, x, bottom+16, compact(m))
	}
	rp.printf(`<text x="%d" y="%d" text-anchor="end">minutes</text>`+"\n", chartW-padR, h-4)
}

// bars draws a horizontal grouped bar chart: per group one bar per series.
// A nil value is drawn as a hatched stub labelled missing. On a log axis a
// bar's length is log(1+v)/log(1+max), so 10 s and 7,000 s both show.
func (rp *reporter) bars(title string, groups, series []string, vals [][]*float64, format, missing string, logScale bool) {
	const rowH, labelW, barW = 14, 190, 330
	vmax := 0.0
	for _, g := range vals {
		for _, v := range g {
			if v != nil {
				vmax = max(vmax, *v)
			}
		}
	}
	vmax = niceCeil(vmax)
	length := func(v float64) float64 { return float64(barW) * v / vmax }
	scale := "linear"
	if logScale {
		scale = "log"
		length = func(v float64) float64 { return float64(barW) * math.Log1p(max(v, 0)) / math.Log1p(vmax) }
	}
	w := labelW + barW + 80
	h := 40 + len(groups)*(len(series)*rowH+8)
	rp.printf(`<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" data-scale="%s"><title>%s</title>`+"\n", w, h, w, h, scale, esc(title))
	rp.printf(`<text x="4" y="14" style="font-weight:bold">%s</text>`+"\n", esc(title))
	for i, s := range series {
		color := policyColor[sim.Policy(s)]
		if color == "" {
			color = palette[i%len(palette)]
		}
		rp.printf(`<rect x="%d" y="20" width="10" height="10" fill="%s"/><text x="%d" y="29">%s</text>`, labelW+90*i, color, labelW+90*i+14, esc(s))
	}
	y := 38
	for g, name := range groups {
		rp.printf(`<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-6, y+rowH*len(series)/2+4, esc(name))
		for i, s := range series {
			color := policyColor[sim.Policy(s)]
			if color == "" {
				color = palette[i%len(palette)]
			}
			v := vals[g][i]
			if v == nil && missing == never {
				// Never is the worst of "shorter is better": drawn past
				// the axis's end, dashed, never as the shortest bar.
				rp.printf(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="%s" stroke-dasharray="4 3" data-series="%s" data-missing="never"/><text x="%d" y="%d">%s</text>`+"\n",
					labelW, y+1, barW+40, rowH-3, color, esc(s), labelW+barW+44, y+rowH-3, esc(missing))
			} else if v == nil {
				rp.printf(`<rect x="%d" y="%d" width="6" height="%d" fill="none" stroke="%s" data-series="%s"/><text x="%d" y="%d">%s</text>`+"\n",
					labelW, y+1, rowH-3, color, esc(s), labelW+10, y+rowH-3, esc(missing))
			} else {
				bw := length(*v)
				rp.printf(`<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s" data-series="%s" data-value="%g"/><text x="%.1f" y="%d">%s</text>`+"\n",
					labelW, y+1, bw, rowH-3, color, esc(s), *v, float64(labelW)+bw+4, y+rowH-3, fmt.Sprintf(format, *v))
			}
			y += rowH
		}
		y += 8
	}
	rp.printf("</svg>\n")
}

// never labels a batch that never started or finished within the run.
const never = "never"

// niceCeil rounds up to 1, 2 or 5 times a power of ten; 1 for nothing.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func compact(v float64) string {
	switch {
	case v >= 10000:
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
