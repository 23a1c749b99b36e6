package status

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/forecast"
)

// WriteTable writes status's tables: the shards (when sharded), the models,
// the batches with their sampled estimates, then the warnings.
func WriteTable(w io.Writer, v *View) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(v.Shards) > 0 {
		fmt.Fprintln(tw, "SHARD\tMODELS\tHOLDS\tCAP (BY LOAD)\tLAUNCHES/PASS\tREPORTED\t")
		for _, s := range v.Shards {
			age := "never"
			if s.ReportAgeS >= 0 {
				age = cliout.Human(s.ReportAgeS) + " ago"
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t\n", s.Shard, s.Models, s.Held, s.GlobalMaxRunning, s.Launches, age)
		}
		tw.Flush()
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	}
	fmt.Fprintln(tw, "MODEL\tLIMIT\tDEPTH/TARGET\tPROVIDER CONC\tRUNNING\tSTARTING\tWAITING\tENDED/MIN\tDRAINS IN\tBREAKER\tNEXT PASS\tNOTE\t")
	for _, m := range v.Models {
		depth := "-"
		if m.DepthAgeS >= 0 {
			depth = fmt.Sprintf("%s/%s (%s ago)", num(m.Depth), targetText(m.SteerTarget, m.Target), cliout.Human(m.DepthAgeS))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%.1f\t%s\t%s\t+%d\t%s\t\n", m.Model, m.Limit, depth, concText(m.ProviderConc, m.SeenConc, m.SeenConcAgeS), m.Running, m.Starting, m.waitingCell(), m.EndedPerMin, m.drainText(), m.Breaker, m.NextAdmit, m.note())
	}
	tw.Flush()
	if len(v.Batches) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BATCH\tMODEL\tTIER\tADMITTED\tWAITING\tETA\tNEXT PASS\t")
		for _, b := range v.Batches {
			next := fmt.Sprintf("+%d", b.NextAdmit)
			if b.PausedBy != "" {
				next = "paused (" + b.PausedBy + ")"
			}
			if b.Jobs != nil {
				next += "; " + JobsText(*b.Jobs)
				if b.Waiting == 0 {
					next = b.Jobs.State + ": " + JobsText(*b.Jobs)
				}
			}
			if b.Parts != "" {
				next += ", parts " + b.Parts + " arrived"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%s\t%d\t%s\t%s\t\n", b.Batch, b.Model, b.Tier, b.TierSource, admittedOf(b.admitted(), b.Registered), b.Waiting, etaText(forecast.ETA{StartS: b.ETAS, DoneS: b.DoneS}, v.pass), next)
		}
		tw.Flush()
		for _, b := range v.Batches {
			if b.Sampling != nil {
				fmt.Fprintf(w, "\nsampled %s on %s:\n", b.Batch, b.Model)
				WriteSampling(w, "  ", b.Sampling)
			}
		}
	}
	for _, warn := range v.Warns {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}
