package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/evalsched/evalsched/internal/sim"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// WriteTwins prints each lane's twin bound (lanes with a drop) and the
// summary.
func WriteTwins(w io.Writer, lanes []*scenario.Scenario, results []sim.TwinResult) {
	dropped, meet, within := 0, 0, 0
	for i, r := range results {
		if len(r.Drops) == 0 {
			continue
		}
		dropped++
		var ds []string
		for _, d := range r.Drops {
			s := fmt.Sprintf("%s drops at %.0f s (seen %.0f s)", lanes[i].Models[d.Model].Name, d.AtS, d.SeenAtS)
			if d.RecoverAtS > 0 {
				s += fmt.Sprintf(", recovers at %.0f s", d.RecoverAtS)
			} else {
				s += ", no recovery"
			}
			ds = append(ds, s)
		}
		fmt.Fprintf(w, "lane %d: %s\n", r.Lane, strings.Join(ds, "; "))
		fmt.Fprintf(w, "  twin oracle caps %v, %d jobs; lane oracle %d jobs; dynamic: lane blocked %.3f (thr %.3f), twin thr %.3f blocked %.3f\n",
			r.TwinOracleCaps, r.TwinOracleJobs, r.LaneOracleJobs, r.DynamicBlocked, r.DynamicThroughput, r.DynamicTwinThroughput, r.DynamicTwinBlocked)
		fmt.Fprintf(w, "  %-9s %8s %8s %9s %8s %6s %6s\n", "pre-drop", "twin thr", "twin blk", "lane blk", "lane thr", "f2", "f3")
		for _, row := range r.Rows {
			mark := ""
			if !row.LaneThroughputOK {
				mark = " (lane thr < 0.95)"
			}
			fmt.Fprintf(w, "  ×%-8.2f %8.3f %8.3f %9.3f %8.3f %6.2f %6.2f%s\n",
				row.PreDrop, row.TwinThroughput, row.TwinBlocked, row.LaneBlocked, row.LaneThroughput, row.AfterDrop, row.AfterRecovery, mark)
		}
		switch {
		case r.Best < 0:
			fmt.Fprintf(w, "  bound: no pre-drop cap keeps both throughputs ≥ 0.95: misses in the bound\n")
		case r.Meets:
			fmt.Fprintf(w, "  bound: blocked %.3f at ×%.2f before the drop: meets in the bound (≤ 0.10)\n", r.Best, r.BestPre)
		default:
			fmt.Fprintf(w, "  bound: blocked %.3f at ×%.2f before the drop: misses in the bound (> 0.10)\n", r.Best, r.BestPre)
		}
		if r.Meets {
			meet++
		}
		if r.Best >= 0 && r.Best <= sim.FamilyMaxBlocked {
			within++
		}
	}
	fmt.Fprintf(w, "twin bound: %d lane(s), %d with a drop; %d meet in the bound (blocked ≤ 0.10), %d within %.2f\n",
		len(results), dropped, meet, within, sim.FamilyMaxBlocked)
}
