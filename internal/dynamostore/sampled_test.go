package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
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
	part := func(n int, strata ...string) job.BatchSpec {
		b := job.BatchSpec{Account: "acme", Project: "p", Batch: "b", Model: "gpt", Tier: 1, Sampling: params, Part: n, Parts: 2}
		for i, st := range strata {
			b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("p%d-%02d", n, i), Stratum: st})
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
			if _, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 1, Pass: pass, At: t0, Token: j.ResultToken}); err != nil {
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
	// Counted anew for the new sizes from the release log: 4 results of
	// 7 jobs; the 3 unmeasured may each pass or fail.
	if e := sb.Estimate; e.Jobs != 7 || e.Results != 4 || e.Lower > 3.0/7+1e-12 || e.Upper < 6.0/7-1e-12 || e.Stop {
		t.Errorf("after part 2: %+v, want 7 jobs, 4 results and at least [3/7, 6/7] (stratum \"new\" has no result)", sb.Estimate)
	}

	if _, ok, err := s.Sampled(ctx, "acme/p/other"); ok || err != nil {
		t.Errorf("a batch that is not sampled: %v, %v", ok, err)
	}
}

// A provider failure (exit 75) has no verdict: the job waits again in its
// stratum, released no more, so the estimate neither counts it as measured
// nor drops it from the sample; claimed again, its verdict counts once.
func TestSampledProviderFailureIsNotMeasured(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := job.BatchSpec{Account: "acme", Project: "p", Batch: "pf", Model: "gpt", Tier: 1,
		Sampling: &sampling.Params{MOE: 0.1, Confidence: 0.9, MinPerStratum: 2}}
	for i := range 10 {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("k%02d", i), Stratum: "only"})
	}
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 2))
	stratum := func() sampling.Stratum {
		t.Helper()
		sb, _, err := s.Sampled(ctx, "acme/p/pf")
		if err != nil || len(sb.Strata) != 1 {
			t.Fatalf("Sampled: %+v, %v", sb, err)
		}
		return sb.Strata[0].Stratum
	}
	failed := jobs[0]
	for range 2 { // delivered twice: one retry
		if err := s.TaskStopped(ctx, failed.ID, 1, job.Exit{Code: 75, ProviderError: true}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if st := stratum(); st.Released != 1 || st.Results != 0 {
		t.Errorf("after exit 75: released %d, results %d; want 1 and 0", st.Released, st.Results)
	}
	// The result message of the failed attempt, had one come, is stale.
	if ok, err := s.RecordResult(ctx, failed.ID, job.Result{Attempt: 1, Pass: true, At: t0, Token: failed.ResultToken}); ok || err != nil {
		t.Errorf("a verdict for the provider-failed attempt: %v, %v; want refused as stale", ok, err)
	}
	again := commit(t, s, grant(t0, b, 1))
	if len(again) != 1 || again[0].ID != failed.ID || again[0].Attempt != 2 {
		t.Fatalf("the next claim took %+v, want %s at attempt 2", again, failed.Key)
	}
	if ok, err := s.RecordResult(ctx, failed.ID, job.Result{Attempt: 2, Pass: true, At: t0, Token: again[0].ResultToken}); !ok || err != nil {
		t.Fatalf("the verdict of attempt 2: %v, %v", ok, err)
	}
	if st := stratum(); st.Released != 2 || st.Results != 1 || st.Passes != 1 {
		t.Errorf("after attempt 2's verdict: %+v; want released 2, 1 result, 1 pass", st)
	}
	rows, err := s.Batches(ctx, scheduler.Scope{Account: "acme", Project: "p", Batch: "pf"})
	if err != nil || len(rows) != 1 || rows[0].ProviderRetries != 1 || rows[0].Failed != 0 {
		t.Errorf("Batches: %+v, %v; want 1 provider retry, no failure", rows, err)
	}
	check(t, s)
}

// TestSampledStopSkipsTheRest: once the results make the stop rule hold,
// the batch's waiting jobs end SKIPPED with the estimate as the reason,
// its queue leaves the pass's snapshot, its counts say skipped, and a
// later claim finds nothing.
func TestSampledStopSkipsTheRest(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := job.BatchSpec{Account: "acme", Project: "p", Batch: "s", Model: "gpt", Tier: 1,
		Sampling: &sampling.Params{MOE: 0.2, Confidence: 0.9, MinPerStratum: 5}}
	for i := range 150 {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("a%03d", i), Stratum: "a"}, job.JobSpec{Key: fmt.Sprintf("b%03d", i), Stratum: "b"})
	}
	submit(t, s, b)
	// A retried job waits among the rest: the skip takes it too.
	first := commit(t, s, grant(t0, b, 1))[0]
	if err := s.TaskStopped(ctx, first.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for stopped := false; !stopped; {
		jobs := commit(t, s, grant(t0, b, 10))
		if len(jobs) == 0 {
			t.Fatal("ran out of jobs before the stop rule held")
		}
		for _, j := range jobs {
			if _, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: j.Attempt, Pass: j.Key[0] == 'a', At: t0, Token: j.ResultToken}); err != nil {
				t.Fatal(err)
			}
			ran++
		}
		sb, _, _ := s.Sampled(ctx, "acme/p/s")
		stopped = sb.Estimate.Stop
	}
	if ran >= 300 {
		t.Fatalf("ran all %d jobs", ran)
	}
	rows, err := s.Batches(ctx, scheduler.Scope{Account: "acme", Project: "p", Batch: "s"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Batches: %v %v", rows, err)
	}
	if r := rows[0]; r.Waiting != 0 || r.Skipped != 300-ran {
		t.Errorf("counts %+v after %d ran, want 0 waiting, %d skipped", r, ran, 300-ran)
	}
	for _, q := range snapshot(t, s).Queues {
		if q.Batch == "s" {
			t.Errorf("the stopped batch's queue is still in the snapshot: %+v", q)
		}
	}
	skipped := 0
	for _, js := range b.Jobs {
		j, _, _ := s.Job(ctx, job.JobID(b.Account, b.Project, b.Batch, js.Key))
		switch j.State {
		case job.Skipped:
			skipped++
			if !strings.HasPrefix(j.Reason, "sampling stopped: pass rate 0.") {
				t.Errorf("job %s skipped with reason %q", js.Key, j.Reason)
			}
		case job.Waiting:
			t.Errorf("job %s still waits", js.Key)
		}
	}
	if skipped != 300-ran {
		t.Errorf("%d jobs SKIPPED, want %d", skipped, 300-ran)
	}
	if got := commit(t, s, grant(t0, b, 10)); len(got) != 0 {
		t.Errorf("claimed %d jobs of a stopped batch", len(got))
	}
	check(t, s) // the retried job's back item went with its skip
}

// sampledRange is jobs [from, to) of a sampled batch whose stop rule is
// far off, stratum x, y or z by i mod 3; part p of parts (0, 0: a message
// without parts).
func sampledRange(name string, from, to, p, parts int) job.BatchSpec {
	b := job.BatchSpec{Account: "acme", Project: "p", Batch: name, Model: "gpt", Tier: 1, Part: p, Parts: parts,
		Sampling: &sampling.Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 2}}
	for i := from; i < to; i++ {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("k%03d", i), Stratum: []string{"x", "y", "z"}[i%3], Env: map[string]string{"I": fmt.Sprint(i)}})
	}
	return b
}

// strataSizes is the sizes of a sampled batch's strata, "x:n y:n z:n".
func strataSizes(t testing.TB, s *Store, batch string) string {
	t.Helper()
	sb, ok, err := s.Sampled(context.Background(), batch)
	if err != nil || !ok {
		t.Fatalf("Sampled(%s): %v, %v", batch, ok, err)
	}
	var out []string
	for _, st := range sb.Strata {
		out = append(out, fmt.Sprintf("%s:%d", st.Name, st.Jobs))
	}
	return strings.Join(out, " ")
}

// TestSampledRepeatedKeyCountsOnce: a job key repeated across two parts
// (or two messages without parts) of a sampled batch is one job — the
// second copy is skipped as already stored — and counts once in its
// stratum's size, as in memstore; every waiting job of both is claimable.
// A copy in another stratum is a conflict naming jobs[i].stratum.
func TestSampledRepeatedKeyCountsOnce(t *testing.T) {
	ctx := context.Background()
	for _, parts := range []int{2, 0} {
		t.Run(fmt.Sprintf("parts=%d", parts), func(t *testing.T) {
			s, _ := newStore(t)
			m := memstore.New(scheduler.ModelConfig{})
			p1, p2 := sampledRange("r", 0, 30, min(parts, 1), parts), sampledRange("r", 20, 45, parts, parts)
			for _, st := range []interface {
				Submit(context.Context, job.BatchSpec, time.Time) (int, error)
			}{s, m} {
				for _, p := range []job.BatchSpec{p1, p2, p2} { // p2 redelivered
					if _, err := st.Submit(ctx, p, t0); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := "x:15 y:15 z:15" // k000 … k044 once
			if got := strataSizes(t, s, "acme/p/r"); got != want {
				t.Errorf("DynamoDB strata %s, want %s", got, want)
			}
			ms, _ := m.Sampled("acme/p/r")
			var mem []string
			for _, st := range ms.Strata {
				mem = append(mem, fmt.Sprintf("%s:%d", st.Name, st.Jobs))
			}
			if got := strings.Join(mem, " "); got != want {
				t.Errorf("memstore strata %s, want %s", got, want)
			}
			check(t, s) // every waiting job has its wait item
			if got := commit(t, s, grant(t0, p1, 60)); len(got) != 45 {
				t.Errorf("claimed %d, want the 45 jobs", len(got))
			}

			moved := sampledRange("r", 44, 46, parts, parts) // k044 in another stratum
			if parts > 0 {
				moved.Part = 2
			}
			moved.Jobs[0].Stratum = "x"
			_, err := s.Submit(ctx, moved, t0)
			if !errors.Is(err, job.ErrConflict) || !strings.Contains(err.Error(), `jobs[0].stratum: "x", but the stored job "k044" is in stratum "z"`) {
				t.Errorf("a key moved to another stratum: %v, want a conflict naming jobs[0].stratum", err)
			}
		})
	}
}
