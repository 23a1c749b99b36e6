package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/sim"
)

// WriteFamily prints one line per lane and the summary with its targets.
func WriteFamily(w io.Writer, lanes []sim.LaneResult, s sim.FamilySummary) {
	fmt.Fprintf(w, "%5s %6s %-15s %6s %8s %8s %8s %8s %8s %8s %8s %9s %10s %7s  %s\n",
		"lane", "models", "concurrency", "dur", "thr/orc", "blocked", "orc blk", "thr/any", "any blk", "p90/tgt", "old thr", "small adm", "recovery", "old", "verdict")
	for _, lr := range lanes {
		conc := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(lr.Concurrency)), ","), "[]")
		small := "-"
		switch {
		case lr.SmallNever:
			small = "never"
		case lr.SmallAdmitS != nil:
			small = fmt.Sprintf("%.0fs", *lr.SmallAdmitS)
		}
		rec := "-"
		if lr.Burst {
			rec = "never"
			if lr.RecoveryS != nil {
				rec = fmt.Sprintf("%.0fs", *lr.RecoveryS)
			}
		}
		verdict := "meets"
		if !lr.Meets {
			verdict = "MISSES: " + lr.Missed
		}
		if lr.Drop {
			verdict = fmt.Sprintf("%s [drop: twin %.3f, bar %.3g]", verdict, lr.TwinBest, lr.MaxBlocked)
		}
		old := "meets"
		if !lr.OldMeets {
			old = "misses"
		}
		fmt.Fprintf(w, "%5d %6d %-15s %5dm %8.3f %8.3f %8.3f %8.3f %8.3f %8.1f %8.3f %9s %10s %7s  %s\n",
			lr.Lane, lr.Models, conc, lr.DurationS/60, lr.Throughput, lr.Blocked, lr.OracleBlock, lr.ThroughputAny, lr.AnyCapBlock, lr.DepthRatio, lr.OldThroughput, small, rec, old, verdict)
	}
	WriteFamilySummary(w, s)
}

// WriteFamilySummary prints the summary lines with the targets.
func WriteFamilySummary(w io.Writer, s sim.FamilySummary) {
	mark := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	fmt.Fprintf(w, "family seed %d: %d lanes, %d meet (%.1f %%; target ≥ %.0f %%: %s); median blocked %.3f (target ≤ %.2f: %s); max blocked %.3f, lane %d; %d lanes over their max (≤ %.2f, a drop lane's max(%.2f, twin + 0.05): %s); drop lanes %d, %d meet\n",
		s.Seed, s.Lanes, s.Meeting, 100*s.MeetShare, 100*sim.FamilyMinMeeting, mark(s.MeetShare >= sim.FamilyMinMeeting),
		s.MedianBlock, sim.FamilyMaxMedian, mark(s.MedianBlock <= sim.FamilyMaxMedian),
		s.MaxBlock, s.MaxLane, s.OverMax, sim.FamilyMaxBlocked, sim.FamilyMaxBlocked, mark(s.OverMax == 0), s.DropLanes, s.DropMeet)
	fmt.Fprintf(w, "family seed %d: old judge (oracle within 0.10 by succeeded jobs, no drop bar): %d meet (%.1f %%: %s); max blocked %.3f (target ≤ %.2f: %s)\n",
		s.Seed, s.OldMeeting, 100*s.OldMeetShare, mark(s.OldMeetShare >= sim.FamilyMinMeeting), s.MaxBlock, sim.FamilyMaxBlocked, mark(s.MaxBlock <= sim.FamilyMaxBlocked))
	fmt.Fprintf(w, "family seed %d: median throughput %.3f × oracle (%.3f × the most jobs of any cap, whatever it blocked); median p90 depth/target %.1f; small batches in %d lanes, never admitted in %d, first admit p90 %.0f s; error-burst lanes %d, %d meet; lanes took %.0f s summed\n",
		s.Seed, s.MedianThr, s.MedianAny, s.MedianDepth, s.SmallLanes, s.SmallNever, s.SmallAdmit, s.BurstLanes, s.BurstMeet, s.LaneS)
}

// FamilyRun says how a family ran, for its output.
type FamilyRun struct {
	Seed        int64
	Workers     int
	WallS       float64
	OracleStart bool // dynamic started at the oracle's caps: the ramp bound
	Warm        bool // each lane's second run, with what its first learned
}

// WriteFamilyJSON writes the lanes and the summary as one JSON object.
func WriteFamilyJSON(w io.Writer, run FamilyRun, lanes []sim.LaneResult, s sim.FamilySummary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		// OracleStart: dynamic started at the oracle's caps, so the
		// verdict is the ramp bound's, not the controller's.
		OracleStart bool              `json:"oracle_start,omitempty"`
		Warm        bool              `json:"warm,omitempty"`
		Summary     sim.FamilySummary `json:"summary"`
		Lanes       []sim.LaneResult  `json:"lanes"`
	}{run.OracleStart, run.Warm, s, lanes})
}

// WriteFamilyText writes the lanes' table and summary (WriteFamily), then
// how the family ran.
func WriteFamilyText(w io.Writer, run FamilyRun, lanes []sim.LaneResult, s sim.FamilySummary) {
	WriteFamily(w, lanes, s)
	fmt.Fprintf(w, "family seed %d: wall %s on %d worker(s)\n", run.Seed, cliout.Human(run.WallS), run.Workers)
	if run.OracleStart {
		fmt.Fprintf(w, "family seed %d: dynamic started at each model's oracle cap (--oracle-start): the ramp bound, not the controller's verdict\n", run.Seed)
	}
	if run.Warm {
		fmt.Fprintf(w, "family seed %d: warm (--warm): each lane's second run, started with the concurrency its first run learned\n", run.Seed)
	}
}
