package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/status"
)

// TestStatusWhySampled: status and why show a sampled batch's pass rate
// estimate ± half-width (the betting sequence's, over the release log's
// counted prefix), of the batch and of each stratum, from the verdicts
// recorded on DynamoDB Local. The last two jobs claimed still run.
func TestStatusWhySampled(t *testing.T) {
	ctx := context.Background()
	st := withTables(t)
	b := domain.BatchSpec{Account: "acme", Project: "evals", Batch: "mmlu", Model: "gpt-5.5", Tier: 2,
		Sampling: &sampling.Params{MOE: 0.04, Confidence: 0.9, MinPerStratum: 1}}
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
	for i, j := range jobs {
		if i >= 18 {
			continue // still running, no verdict: the last places in the release log
		}
		if _, err := st.RecordResult(ctx, j.ID, domain.Result{Attempt: 1, Pass: passed[j.Key], At: time.Now(), Token: j.ResultToken}); err != nil {
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
	sb, _, err := st.Sampled(ctx, "acme/evals/mmlu")
	if err != nil || len(sb.Strata) != 2 {
		t.Fatalf("Sampled: %+v, %v", sb, err)
	}
	wants := []string{
		"sampled acme/evals/mmlu on gpt-5.5:",
		fmt.Sprintf("pass rate %.4f ± ", sb.Estimate.Mean), "(moe 0.04 at 90%), 18 results of 20 jobs; the stop rule does not hold yet",
	}
	for _, sv := range sb.Strata {
		wants = append(wants, fmt.Sprintf("%-9s  %.4f ± ", sv.Name, sv.Estimate.Mean), fmt.Sprintf("%d results of 10", sv.Results))
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sampled acme/search/b17") {
		t.Errorf("status shows sampling for a batch that is not sampled:\n%s", out)
	}

	out, code = cliOut(t, "why", "acme/evals/mmlu")
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("  pass rate %.4f ± ", sb.Estimate.Mean)) || !strings.Contains(out, "    math/hard  ") {
		t.Errorf("why: exit %d:\n%s", code, out)
	}

	// No view shows a job's result token: not status, not why of the
	// batch or of a job still running (by id and by key), text or JSON.
	running := jobs[18]
	for _, args := range [][]string{
		{"status", "--all"}, {"status", "--all", "--json"}, {"why", "acme/evals/mmlu"}, {"why", running.ID},
		{"why", "acme/evals/mmlu/" + running.Key}, {"why", "--json", running.ID}, {"batches"},
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
		Batches []status.BatchView `json:"batches"`
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

// stoppedSampledBatch submits a sampled batch of 300 jobs at tier 1 and
// runs it until its stop rule holds; it returns how many jobs ran.
func stoppedSampledBatch(t *testing.T, st interface {
	Submit(ctx context.Context, b domain.BatchSpec, now time.Time) (int, error)
	Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error)
	RecordResult(ctx context.Context, jobID string, r domain.Result) (bool, error)
}) int {
	t.Helper()
	ctx := context.Background()
	b := domain.BatchSpec{Account: "acme", Project: "evals", Batch: "early", Model: "gpt-5.5", Tier: 1,
		Sampling: &sampling.Params{MOE: 0.2, Confidence: 0.9, MinPerStratum: 5}}
	for i := range 150 {
		b.Jobs = append(b.Jobs, domain.JobSpec{Key: fmt.Sprintf("a%03d", i), Stratum: "a"}, domain.JobSpec{Key: fmt.Sprintf("b%03d", i), Stratum: "b"})
	}
	if _, err := st.Submit(ctx, b, time.Now()); err != nil {
		t.Fatal(err)
	}
	q := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
	ran := 0
	for {
		c, err := st.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: b.Model, Grants: []scheduler.Grant{{Queue: q, Tier: 1, Count: 10}}}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Claimed) == 0 {
			return ran
		}
		for _, j := range c.Claimed {
			if _, err := st.RecordResult(ctx, j.ID, domain.Result{Attempt: j.Attempt, Pass: j.Key[0] == 'a', At: time.Now(), Token: j.ResultToken}); err != nil {
				t.Fatal(err)
			}
			ran++
		}
	}
}

// TestStoppedSampledBatchCounts: a sampled batch stopped early shows its
// skipped jobs in batches (SKIPPED) and status --all (not as admitted),
// and its tier as sent once none of its jobs waits.
func TestStoppedSampledBatchCounts(t *testing.T) {
	st := withTables(t)
	ran := stoppedSampledBatch(t, st)
	if ran >= 300 || ran == 0 {
		t.Fatalf("%d of 300 ran: the stop rule did not stop it early", ran)
	}
	out, code := cliOut(t, "batches", "acme/evals/early")
	if code != exitOK || !strings.Contains(out, "SKIPPED") {
		t.Fatalf("batches: exit %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	head, row := strings.Fields(lines[0]), strings.Fields(lines[len(lines)-1])
	col := slices.Index(head, "SKIPPED")
	if len(row) != len(head) || row[col] != fmt.Sprint(300-ran) {
		t.Errorf("batches: want %d under SKIPPED:\n%s", 300-ran, out)
	}
	out, _ = cliOut(t, "status", "--all")
	want := fmt.Sprintf("%d/300 (%d%%)", ran, ran*100/300)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "acme/evals/early") {
			line = l
		}
	}
	if !strings.Contains(line, want) || !strings.Contains(line, "1 (submitted)") {
		t.Errorf("status --all: want ADMITTED %s and tier 1 (submitted) in\n%s", want, line)
	}
	// A skipped job never ran: why counts no attempt of it.
	found := false
	for i := range 300 {
		key := fmt.Sprintf("%c%03d", "ab"[i/150], i%150)
		j, _, err := st.Job(context.Background(), domain.JobID("acme", "evals", "early", key))
		if err != nil || j.State != domain.Skipped {
			continue
		}
		out, _ := cliOut(t, "why", "acme/evals/early/"+key)
		if !strings.Contains(out, "SKIPPED") || strings.Contains(out, "attempt") {
			t.Errorf("why of a skipped job:\n%s", out)
		}
		found = true
		break
	}
	if !found {
		t.Error("no job SKIPPED")
	}
}
