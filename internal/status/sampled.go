package status

import (
	"context"
	"fmt"
	"io"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/sampling"
)

// sampledReader reads a sampled batch's estimate; *dynamostore.Store has it.
type sampledReader interface {
	Sampled(ctx context.Context, batch string) (domain.SampledBatch, bool, error)
}

// SampledView is what status and why show of a sampled batch: the pass
// rate's estimate ± half-width (docs/sampling.md) of the batch
// and of each stratum.
type SampledView struct {
	MOE        float64 `json:"moe"`
	Confidence float64 `json:"confidence"`
	Estimate   float64 `json:"estimate"`
	HalfWidth  float64 `json:"half_width"` // 1 until every stratum has a result
	Results    int     `json:"results"`
	Jobs       int     `json:"jobs"`
	Stop       bool    `json:"stop_rule_holds"`
	// ExpectedResults is where the stop rule is expected to hold
	// (sampling.Rule.ExpectedResults; -1: not known yet).
	ExpectedResults int              `json:"expected_results"`
	Strata          []SampledStratum `json:"strata"`
}

type SampledStratum struct {
	Stratum   string  `json:"stratum"`
	Jobs      int     `json:"jobs"`
	Results   int     `json:"results"`
	Passes    int     `json:"passes"`
	Estimate  float64 `json:"estimate"`
	HalfWidth float64 `json:"half_width"`
}

// addSampling gives each sampled batch its estimate: one read per batch.
func (v *View) addSampling(ctx context.Context, st sampledReader) error {
	read := map[string]*SampledView{}
	for i := range v.Batches {
		id := v.Batches[i].Batch
		sv, done := read[id]
		if !done {
			sb, ok, err := st.Sampled(ctx, id)
			if err != nil {
				return err
			}
			if ok {
				sv = sampledViewOf(sb)
			}
			read[id] = sv
		}
		v.Batches[i].Sampling = sv
	}
	return nil
}

func sampledViewOf(sb domain.SampledBatch) *SampledView {
	sv := &SampledView{MOE: sb.Params.MOE, Confidence: sb.Params.Confidence, Estimate: sb.Estimate.Mean, HalfWidth: sb.Estimate.HalfWidth,
		Results: sb.Estimate.Results, Jobs: sb.Estimate.Jobs, Stop: sb.Estimate.Stop, Strata: []SampledStratum{}, ExpectedResults: -1}
	if r, err := sampling.NewRule(sb.Params); err == nil {
		strata := make([]sampling.Stratum, len(sb.Strata))
		for i, s := range sb.Strata {
			strata[i] = s.Stratum
		}
		sv.ExpectedResults = r.ExpectedResults(sb.Estimate, strata)
	}
	for _, s := range sb.Strata {
		sv.Strata = append(sv.Strata, SampledStratum{Stratum: s.Name, Jobs: s.Jobs, Results: s.Results, Passes: s.Passes,
			Estimate: s.Estimate.Mean, HalfWidth: s.Estimate.HalfWidth})
	}
	return sv
}

// WriteSampling writes a sampled batch's estimate, indented:
//
//	pass rate 0.7447 ± 0.0143 (moe 0.015 at 99%), 7292 results of 40000 jobs; the stop rule holds
//	  math/hard   0.3512 ± 0.0391   1203 results of 4000
func WriteSampling(w io.Writer, indent string, sv *SampledView) {
	if sv == nil {
		return
	}
	stop := "the stop rule does not hold yet"
	if sv.Stop {
		stop = "the stop rule holds"
	}
	fmt.Fprintf(w, "%spass rate %s (moe %g at %g%%), %d results of %d jobs; %s\n", indent, estimateText(sv.Estimate, sv.HalfWidth, sv.Results),
		sv.MOE, sv.Confidence*100, sv.Results, sv.Jobs, stop)
	width := 0
	for _, s := range sv.Strata {
		width = max(width, len(s.Stratum))
	}
	for _, s := range sv.Strata {
		fmt.Fprintf(w, "%s  %-*s  %s  %d results of %d\n", indent, width, s.Stratum, estimateText(s.Estimate, s.HalfWidth, s.Results), s.Results, s.Jobs)
	}
}

// estimateText is "0.7447 ± 0.0143", "—" without results, "0.7000 ± —"
// while some stratum has none.
func estimateText(mean, hw float64, results int) string {
	switch {
	case results == 0:
		return "—"
	case hw >= 1:
		return fmt.Sprintf("%.4f ± —", mean)
	}
	return fmt.Sprintf("%.4f ± %.4f", mean, hw)
}
