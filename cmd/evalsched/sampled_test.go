package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestStatusWhySampled: status and why show a sampled batch's pass rate
// estimate ± half-width, of the batch and of each stratum, from the
// verdicts recorded on DynamoDB Local.
func TestStatusWhySampled(t *testing.T) {
	ctx := context.Background()
	st := withTables(t)
	b := domain.BatchSpec{Account: "acme", Project: "evals", Batch: "mmlu", Model: "gpt-5.5", Tier: 2,
		Sampling: &sampling.Params{MOE: 0.05, Confidence: 0.9, MinPerStratum: 1}}
	for i := range 10 {
		b.Jobs = append(b.Jobs, domain.JobSpec{Key: fmt.Sprintf("hard-%d", i), Stratum: "math/hard"})
		b.Jobs = append(b.Jobs, domain.JobSpec{Key: fmt.Sprintf("easy-%d", i), Stratum: "reading"})
	}
	if _, err := st.Submit(ctx, b, time.Now()); err != nil {
		t.Fatal(err)
	}
	q := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
	committed, err := st.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: b.Model, Grants: []scheduler.Grant{{Queue: q, Count: 20}}}}}, nil)
	jobs := committed.Claimed
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{"hard-0": true, "hard-1": true, "easy-0": true, "easy-1": true, "easy-2": true, "easy-3": true}
	results := 0
	for _, j := range jobs {
		if j.Key == "hard-9" || j.Key == "easy-9" {
			continue // still running, no verdict
		}
		if _, err := st.RecordResult(ctx, j.ID, memstore.Result{Attempt: 1, Pass: passed[j.Key], At: time.Now(), Token: j.ResultToken}); err != nil {
			t.Fatal(err)
		}
		results++
	}
	if results != 18 {
		t.Fatalf("recorded %d results, want 18 (claimed %d)", results, len(jobs))
	}

	out, code := cliOut(t, "status", "--all")
	if code != exitOK {
		t.Fatalf("status: exit %d", code)
	}
	for _, want := range []string{
		"sampled acme/evals/mmlu on gpt-5.5:",
		"pass rate 0.3333 ± ", "(moe 0.05 at 90%), 18 results of 20 jobs; the stop rule does not hold yet",
		"math/hard  0.2222 ± ", "9 results of 10",
		"reading    0.4444 ± ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sampled acme/search/b17") {
		t.Errorf("status shows sampling for a batch that is not sampled:\n%s", out)
	}

	out, code = cliOut(t, "why", "acme/evals/mmlu")
	if code != exitOK || !strings.Contains(out, "  pass rate 0.3333 ± ") || !strings.Contains(out, "    math/hard  0.2222") {
		t.Errorf("why: exit %d:\n%s", code, out)
	}

	// No view shows a job's result token: not status, not why of the
	// batch or of a job still running (by id and by key), text or JSON.
	var running scheduler.Job
	for _, j := range jobs {
		if j.Key == "hard-9" {
			running = j
		}
	}
	for _, args := range [][]string{
		{"status", "--all"}, {"status", "--all", "--json"}, {"why", "acme/evals/mmlu"}, {"why", running.ID},
		{"why", "acme/evals/mmlu/hard-9"}, {"why", "--json", running.ID}, {"batches"},
	} {
		out, _ := cliOut(t, args...)
		for _, j := range jobs {
			if strings.Contains(out, j.ResultToken.Reveal()) {
				t.Errorf("%v shows %s's result token:\n%s", args, j.Key, out)
			}
		}
	}

	out, _ = cliOut(t, "status", "--all", "--json")
	var v struct {
		Batches []batchView `json:"batches"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, bv := range v.Batches {
		if bv.Batch == "acme/evals/mmlu" {
			found = bv.Sampling != nil && bv.Sampling.Results == 18 && len(bv.Sampling.Strata) == 2 &&
				bv.Sampling.HalfWidth > 0 && bv.Sampling.HalfWidth < 1
		} else if bv.Sampling != nil {
			t.Errorf("status --json: %s has sampling %+v", bv.Batch, bv.Sampling)
		}
	}
	if !found {
		t.Errorf("status --json: no sampling of acme/evals/mmlu with 18 results in 2 strata:\n%s", out)
	}
}
