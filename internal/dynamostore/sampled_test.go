package dynamostore

import (
	"context"
	"fmt"
	"testing"

	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
)

// TestSampledCountsResults: a sampled batch in two parts registers its
// strata's sizes (a redelivered part counts once); each job's verdict
// counts toward its stratum once, whatever is delivered again; Sampled
// gives the estimate of the batch and of each stratum, and holds the stop
// until every part has arrived.
func TestSampledCountsResults(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	params := &sampling.Params{MOE: 0.5, Confidence: 0.9, MinPerStratum: 1}
	part := func(n int, strata ...string) memstore.BatchSpec {
		b := memstore.BatchSpec{Account: "acme", Project: "p", Batch: "b", Model: "gpt", Tier: 1, Sampling: params, Part: n, Parts: 2}
		for i, st := range strata {
			b.Jobs = append(b.Jobs, memstore.JobSpec{Key: fmt.Sprintf("p%d-%02d", n, i), Stratum: st})
		}
		return b
	}
	p1 := part(1, "hard", "hard", "easy", "easy")
	submit(t, s, p1)
	if _, err := s.Submit(ctx, p1, t0); err != nil { // redelivered
		t.Fatal(err)
	}

	jobs := commit(t, s, grant(t0, p1, 4))
	if len(jobs) != 4 {
		t.Fatalf("claimed %d jobs, want 4", len(jobs))
	}
	for _, j := range jobs {
		pass := j.Key != "p1-01" // hard (p1-00, p1-01): one of two passes; easy (p1-02, p1-03): both
		for range 2 {            // delivered twice
			if _, err := s.RecordResult(ctx, j.ID, memstore.Result{Attempt: 1, Pass: pass, At: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sb, ok, err := s.Sampled(ctx, "acme/p/b")
	if err != nil || !ok {
		t.Fatalf("Sampled: %v, %v", ok, err)
	}
	got := map[string]string{}
	for _, st := range sb.Strata {
		got[st.Name] = fmt.Sprintf("%d jobs %d results %d passes", st.Jobs, st.Results, st.Passes)
	}
	want := map[string]string{"easy": "2 jobs 2 results 2 passes", "hard": "2 jobs 2 results 1 passes"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("strata %v, want %v", got, want)
	}
	if sb.Params != *params || sb.Estimate.Mean != 0.75 || sb.Estimate.Results != 4 || sb.Estimate.HalfWidth != 0 {
		t.Errorf("batch %+v %+v, want mean 0.75 from 4 results, exact (every job of the strata known so far ran)", sb.Params, sb.Estimate)
	}
	if sb.Estimate.Stop {
		t.Error("the stop rule holds before part 2 arrived")
	}

	submit(t, s, part(2, "hard", "easy", "new"))
	sb, _, _ = s.Sampled(ctx, "acme/p/b")
	if sb.Estimate.Jobs != 7 || sb.Estimate.HalfWidth != 1 || sb.Estimate.Stop {
		t.Errorf("after part 2: %+v, want 7 jobs and no bound (stratum \"new\" has no result)", sb.Estimate)
	}

	if _, ok, err := s.Sampled(ctx, "acme/p/other"); ok || err != nil {
		t.Errorf("a batch that is not sampled: %v, %v", ok, err)
	}
}
