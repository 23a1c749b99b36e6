package status

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/forecast"
	domain "github.com/evalsched/evalsched/internal/job"
)

// JobView is the job why was asked about.
type JobView struct {
	ID          string       `json:"id"`
	Key         string       `json:"key"`
	Batch       string       `json:"batch"`
	Model       string       `json:"model"`
	State       domain.State `json:"state"`
	Attempt     int          `json:"attempt"`
	MaxAttempts int          `json:"max_attempts"`
	Reason      string       `json:"reason,omitempty"`
}

// WhyAnswer is why's answer for one batch and model.
type WhyAnswer struct {
	Job   *JobView  `json:"job,omitempty"`
	Batch BatchView `json:"batch"`
	Model ModelView `json:"model"`
}

// Why answers why for the batch target (ACCOUNT/PROJECT/BATCH) and, when
// job is not nil, that job of it: one answer per model of the batch (the
// job's model only), from Look at now. A job's batch with no row (registered
// before batches were listed) still answers with the job alone.
func Why(ctx context.Context, st Store, cfg config.Config, now time.Time, target string, job *JobView) ([]WhyAnswer, time.Duration, error) {
	scope := scopeOf(target)
	v, err := Look(ctx, st, cfg, now, &scope)
	if err != nil {
		return nil, 0, err
	}
	var answers []WhyAnswer
	for _, b := range v.Batches {
		if b.Batch == target && (job == nil || b.Model == job.Model) {
			answers = append(answers, WhyAnswer{Job: job, Batch: b, Model: v.modelOf(b.Model)})
		}
	}
	if len(answers) == 0 {
		if job == nil {
			return nil, 0, fmt.Errorf("no batch %s (evalsched batches lists the batches)", target)
		}
		answers = append(answers, WhyAnswer{Job: job}) // a job of a batch registered before batches were listed
	}
	return answers, v.pass, nil
}

// WriteWhy writes why's answers in words: the job (when asked about one;
// nothing more unless it waits), then each batch's tier, model and what
// the next pass does; pass is one scheduler pass, for the forecast.
func WriteWhy(w io.Writer, answers []WhyAnswer, job *JobView, pass time.Duration) {
	if job != nil {
		fmt.Fprintf(w, "job %s (%s of %s on %s): %s", job.ID, job.Key, job.Batch, job.Model, job.State)
		if job.State != domain.Skipped { // a skipped job never ran: no attempt to count
			fmt.Fprintf(w, ", attempt %d of %d", job.Attempt, job.MaxAttempts)
		}
		if job.Reason != "" {
			fmt.Fprintf(w, ", %s", job.Reason)
		}
		fmt.Fprintln(w)
		if job.State != domain.Waiting {
			return
		}
	}
	for _, a := range answers {
		writeAnswer(w, a, pass)
	}
}

// writeAnswer writes one batch's answer.
func writeAnswer(w io.Writer, a WhyAnswer, pass time.Duration) {
	b, m := a.Batch, a.Model
	if b.Jobs != nil && b.Waiting == 0 {
		fmt.Fprintf(w, "%s on %s: %s, none waiting: %s\n", b.Batch, b.Model, b.Jobs.State, JobsText(*b.Jobs))
		WriteSampling(w, "  ", b.Sampling)
		return
	}
	fmt.Fprintf(w, "%s on %s: %d waiting, tier %d (%s)\n", b.Batch, b.Model, b.Waiting, b.Tier, b.TierSource)
	if b.Jobs != nil {
		fmt.Fprintf(w, "  its jobs: %s\n", JobsText(*b.Jobs))
	}
	WriteSampling(w, "  ", b.Sampling)
	switch {
	case m.Malformed != "":
		fmt.Fprintf(w, "  model %s: its model item is malformed, so its jobs wait: %s\n", m.Model, m.Malformed)
	case m.NoItem:
		fmt.Fprintf(w, "  model %s: no model item, so its jobs wait: add one (see docs/operator.md, Models: limits and targets)\n", m.Model)
	default:
		fmt.Fprintf(w, "  model %s: limit %d (%s)\n", m.Model, m.Limit, m.LimitReason)
		fmt.Fprintf(w, "  provider concurrency: %s%s; target depth steered to %s\n", concText(m.ProviderConc, m.SeenConc, m.SeenConcAgeS), freshText(m), targetText(m.SteerTarget, m.Target))
		fmt.Fprintf(w, "  %d running, %d starting, %s across its batches; breaker %s\n", m.Running, m.Starting, m.waitingText(), m.Breaker)
	}
	switch {
	case b.PausedBy != "":
		fmt.Fprintf(w, "  paused (%s): run %s resume %s to admit it again\n", b.PausedBy, program, pauseArg(b.PausedBy))
	case b.NextAdmit > 0:
		fmt.Fprintf(w, "  the next pass would start %d of its jobs\n", b.NextAdmit)
	case m.Why != "":
		fmt.Fprintf(w, "  the next pass starts none of its jobs: %s\n", strings.TrimSpace(m.Why))
	}
	if m.NextAdmit > 0 && b.NextAdmit == 0 && b.PausedBy == "" {
		fmt.Fprintf(w, "  the model's %d free slots go to batches of more urgent tiers or earlier turns\n", m.NextAdmit)
	}
	if b.PausedBy == "" {
		fmt.Fprintf(w, "  forecast: %s\n", forecastText(forecast.ETA{StartS: b.ETAS, DoneS: b.DoneS}, pass, m))
	}
}

// program is the CLI's name, in the commands why suggests.
const program = "evalsched"

// pauseArg is the CLI's form of a pause's scope: "project#acme/x" → "acme/x".
func pauseArg(scope string) string {
	_, names, _ := strings.Cut(scope, "#")
	return names
}
