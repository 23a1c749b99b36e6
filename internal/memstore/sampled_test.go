package memstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// sampledSpec is a sampled batch of strata "a" and "b", n jobs each.
func sampledSpec(name string, n, minPer int) job.BatchSpec {
	b := job.BatchSpec{Account: "lab", Project: "sweep", Batch: name, Model: "gpt", Tier: -1,
		Sampling: &sampling.Params{MOE: 0.2, Confidence: 0.9, MinPerStratum: minPer}}
	for _, st := range []string{"a", "b"} {
		for i := range n {
			b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("%s%03d", st, i), Stratum: st})
		}
	}
	return b
}

// finish runs a claimed job to its end with a verdict.
func finish(t *testing.T, s *Store, j scheduler.Job, pass bool) {
	t.Helper()
	ctx := context.Background()
	if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: j.Attempt, Pass: pass, At: t0, Token: j.ResultToken}); !ok || err != nil {
		t.Fatalf("RecordResult(%s): %v, %v", j.Key, ok, err)
	}
	if err := s.TaskStopped(ctx, j.ID, j.Attempt, job.Exit{}, t0); err != nil {
		t.Fatal(err)
	}
}

func TestSampledClaimOrder(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	if _, err := s.Submit(context.Background(), sampledSpec("b", 50, 5), t0); err != nil {
		t.Fatal(err)
	}
	jobs := claim(t, s, "gpt", "b", 10)
	// min_per_stratum first: 5 of each stratum.
	var inA, inB []string
	for _, j := range jobs {
		if strings.HasPrefix(j.Key, "a") {
			inA = append(inA, j.Key)
		} else {
			inB = append(inB, j.Key)
		}
	}
	if len(inA) != 5 || len(inB) != 5 {
		t.Fatalf("claimed %v and %v, want 5 of each stratum", inA, inB)
	}
	// Within a stratum, by keyed rank, not submission order.
	var want []string
	for i := range 50 {
		want = append(want, fmt.Sprintf("a%03d", i))
	}
	slices.SortFunc(want, func(x, y string) int {
		return compareRanked(rankedJob{sampling.Rank("lab/sweep/b", x), &Job{Job: scheduler.Job{Key: x}}},
			rankedJob{sampling.Rank("lab/sweep/b", y), &Job{Job: scheduler.Job{Key: y}}})
	})
	if !slices.Equal(inA, want[:5]) {
		t.Errorf("stratum a claimed %v, want the lowest ranks %v", inA, want[:5])
	}
	if slices.IsSorted(inA) && slices.IsSorted(inB) {
		t.Errorf("claims %v %v are in submission order", inA, inB)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

func TestSampledNeymanFollowsResults(t *testing.T) {
	s := New(scheduler.ModelConfig{})
	b := sampledSpec("b", 400, 20)
	b.Sampling.MOE = 0.001 // never stops here
	if _, err := s.Submit(context.Background(), b, t0); err != nil {
		t.Fatal(err)
	}
	// 20 each; a passes every time, b half the time.
	nb := 0
	for _, j := range claim(t, s, "gpt", "b", 40) {
		if !strings.HasPrefix(j.Key, "a") {
			nb++
		}
		finish(t, s, j, strings.HasPrefix(j.Key, "a") || nb%2 == 0)
	}
	nA := 0
	for _, j := range claim(t, s, "gpt", "b", 100) {
		if strings.HasPrefix(j.Key, "a") {
			nA++
		}
	}
	// S̃_a = sqrt(21/22·1/22) ≈ 0.21, S̃_b ≈ 0.5: a gets well under half.
	if nA > 35 {
		t.Errorf("stratum a (all passed) got %d of 100 claims, want Neyman's smaller share", nA)
	}
}

func TestRecordResultStaleAndRepeated(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	s.Submit(ctx, spec("b", "gpt", 1), t0)
	j := claim(t, s, "gpt", "b", 1)[0]
	tok := j.ResultToken
	if !resulttoken.Valid(tok.Reveal()) {
		t.Fatalf("the claimed job's token %q has not a token's form", tok.Reveal())
	}
	if ok, _ := s.RecordResult(ctx, j.ID, job.Result{Attempt: 2, Pass: true, Token: tok}); ok {
		t.Error("a result of another attempt was recorded")
	}
	if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 1, Pass: false, Token: tok}); !ok || err != nil {
		t.Fatalf("RecordResult: %v, %v", ok, err)
	}
	if ok, _ := s.RecordResult(ctx, j.ID, job.Result{Attempt: 1, Pass: true, Token: tok}); ok {
		t.Error("a repeated result was recorded")
	}
	if r, _ := s.JobResult(j.ID); r.Pass || r.Token != "" {
		t.Errorf("JobResult = %+v: the repeat replaced the first result, or the token was kept", r)
	}
	if _, err := s.RecordResult(ctx, strings.Repeat("0", 32), job.Result{Attempt: 1, Token: tok}); err == nil {
		t.Error("a result for an unknown job was accepted")
	}
}

// TestRecordResultNeedsTheAttemptsToken: a result naming the job's
// current attempt with another attempt's token, a guessed one or none is
// refused with job.ErrWrongToken and records nothing; the next attempt gets a
// new token, and the earlier one no longer speaks for the job.
func TestRecordResultNeedsTheAttemptsToken(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	s.Submit(ctx, spec("b", "gpt", 2), t0)
	jobs := claim(t, s, "gpt", "b", 2)
	j, sibling := jobs[0], jobs[1]
	if j.ResultToken == sibling.ResultToken {
		t.Fatal("two claims drew the same token")
	}
	for name, tok := range map[string]resulttoken.Token{"none": "", "sibling's": sibling.ResultToken, "guessed": resulttoken.New()} {
		ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 1, Pass: true, Token: tok})
		if ok || !errors.Is(err, job.ErrWrongToken) {
			t.Errorf("%s token: %v, %v; want refused with job.ErrWrongToken", name, ok, err)
		}
	}
	if _, ok := s.JobResult(j.ID); ok {
		t.Fatal("a refused result was recorded")
	}
	// The task is lost; attempt 2's claim draws a new token.
	if err := s.TaskStopped(ctx, j.ID, 1, job.Exit{Infrastructure: true}, t0); err != nil {
		t.Fatal(err)
	}
	j2 := claim(t, s, "gpt", "b", 1)[0]
	if j2.ID != j.ID || j2.Attempt != 2 || j2.ResultToken == j.ResultToken {
		t.Fatalf("claimed %s attempt %d (same token: %v), want %s attempt 2 with a new token", j2.ID, j2.Attempt, j2.ResultToken == j.ResultToken, j.ID)
	}
	if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 2, Pass: true, Token: j.ResultToken}); ok || !errors.Is(err, job.ErrWrongToken) {
		t.Errorf("attempt 1's token for attempt 2: %v, %v; want job.ErrWrongToken", ok, err)
	}
	if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 2, Pass: true, Token: j2.ResultToken}); !ok || err != nil {
		t.Errorf("attempt 2's own result: %v, %v; want recorded", ok, err)
	}
}

func TestSampledStopSkipsTheRest(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	b := sampledSpec("b", 500, 10)
	b.Sampling.MOE = 0.1
	s.Submit(ctx, b, t0)
	var stopped bool
	ran := 0
	for !stopped {
		jobs := claim(t, s, "gpt", "b", 5)
		if len(jobs) == 0 {
			t.Fatal("ran out of jobs before the rule stopped the batch")
		}
		for _, j := range jobs {
			finish(t, s, j, strings.HasPrefix(j.Key, "a"))
			ran++
		}
		sb, _ := s.Sampled("lab/sweep/b")
		stopped = sb.Stopped
	}
	sb, _ := s.Sampled("lab/sweep/b")
	c := s.Counts()
	if c.Waiting != 0 || c.Skipped != 1000-ran || c.Succeeded != ran {
		t.Errorf("counts %+v after %d ran, want the other %d skipped", c, ran, 1000-ran)
	}
	if sb.Estimate.HalfWidth > 0.1 || !strings.Contains(sb.Reason, "sampling stopped: pass rate") {
		t.Errorf("stopped at %+v, reason %q", sb.Estimate, sb.Reason)
	}
	var skipped Job
	for _, k := range []string{"a499", "b499", "a000"} {
		if j, _ := s.Job(job.JobID("lab", "sweep", "b", k)); j.State == job.Skipped {
			skipped = j
		}
	}
	if skipped.Reason != sb.Reason {
		t.Errorf("a skipped job's reason %q, want the batch's %q", skipped.Reason, sb.Reason)
	}
	if got := claim(t, s, "gpt", "b", 5); len(got) != 0 {
		t.Errorf("claimed %d jobs of a stopped batch", len(got))
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

// TestSampledRetryAfterStopIsSkipped: a job whose task stops after its
// sampled batch stopped, by the infrastructure or by a yield (a retry to the
// stopped batch), ends SKIPPED with the stop's reason, ended now, at the
// attempt that ran, its max attempts as submitted (TestRetryAfterStopIsSkipped
// and TestYieldAfterStopIsSkipped in the DynamoDB store).
func TestSampledRetryAfterStopIsSkipped(t *testing.T) {
	for name, exit := range map[string]job.Exit{
		"infrastructure": {Infrastructure: true, Reason: "spot"},
		"yield":          {Yielded: true, Reason: "yielded"},
		"provider":       {Code: 75, ProviderError: true, Reason: "exit code 75: provider error"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(scheduler.ModelConfig{})
			b := sampledSpec("b", 3, 1)
			b.Sampling.MOE = 0.5
			s.Submit(ctx, b, t0)
			jobs := claim(t, s, "gpt", "b", 6)
			// All 6 are out; the last claimed comes back after the rest
			// stop the batch (the first five are the counted prefix).
			for _, j := range jobs[:5] {
				finish(t, s, j, true)
			}
			sb, _ := s.Sampled("lab/sweep/b")
			if !sb.Stopped {
				t.Fatalf("not stopped after 5 of 6 passed: %+v", sb.Estimate)
			}
			later := t0.Add(time.Minute)
			s.TaskStopped(ctx, jobs[5].ID, 1, exit, later)
			if j, _ := s.Job(jobs[5].ID); j.State != job.Skipped || j.Reason != sb.Reason || !j.EndedAt.Equal(later) || j.Attempt != 1 || j.MaxAttempts != 3 {
				t.Errorf("a job returned after the stop is %s %q ended %v attempt %d of %d, want SKIPPED %q ended %v attempt 1 of 3",
					j.State, j.Reason, j.EndedAt, j.Attempt, j.MaxAttempts, sb.Reason, later)
			}
			released := 0
			got, _ := s.Sampled("lab/sweep/b")
			for _, st := range got.Strata {
				released += st.Released
			}
			if released != 5 {
				t.Errorf("released %d after the skip, want the 5 that ran", released)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// A provider failure (exit 75) has no verdict: the job goes back to its
// stratum's waiting jobs, released no more, so the estimate neither counts
// it as measured nor leaves it out of the sample; it runs again and its
// verdict then counts once.
func TestSampledProviderFailureIsNotMeasured(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	s.Submit(ctx, sampledSpec("b", 20, 2), t0)
	jobs := claim(t, s, "gpt", "b", 4)
	strata := func() (released, results int) {
		got, _ := s.Sampled("lab/sweep/b")
		for _, st := range got.Strata {
			released += st.Released
			results += st.Results
		}
		return released, results
	}
	failed := jobs[0]
	if err := s.TaskStopped(ctx, failed.ID, 1, job.Exit{Code: 75, ProviderError: true}, t0); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Job(failed.ID); j.State != job.Waiting || j.Attempt != 2 || j.ProviderRetries != 1 {
		t.Fatalf("after exit 75: %s attempt %d, %d provider retries; want WAITING attempt 2, 1", j.State, j.Attempt, j.ProviderRetries)
	}
	if released, results := strata(); released != 3 || results != 0 {
		t.Errorf("released %d, results %d after a provider failure; want 3 and 0", released, results)
	}
	if c := s.Counts(); c.ProviderRetries != 1 || c.Failed != 0 {
		t.Errorf("counts %+v, want 1 provider retry and no failure", c)
	}
	// Its stratum's lowest rank again: the next claim of that stratum takes it.
	again := claim(t, s, "gpt", "b", 1)
	if len(again) != 1 || again[0].ID != failed.ID || again[0].Attempt != 2 {
		t.Fatalf("the next claim took %v, want %s at attempt 2", again, failed.Key)
	}
	finish(t, s, again[0], true)
	if released, results := strata(); released != 4 || results != 1 {
		t.Errorf("released %d, results %d after it ran again; want 4 and 1", released, results)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

func TestSampledWaitsForAllParts(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	b := sampledSpec("b", 100, 1)
	b.Sampling.MOE = 0.5
	b.Part, b.Parts = 1, 2
	s.Submit(ctx, b, t0)
	for _, j := range claim(t, s, "gpt", "b", 30) {
		finish(t, s, j, true)
	}
	if sb, _ := s.Sampled("lab/sweep/b"); sb.Stopped {
		t.Fatal("stopped before part 2 arrived")
	}
	other := sampledSpec("b", 1, 1) // a part with other sampling
	other.Part, other.Parts = 2, 2
	other.Sampling.MinPerStratum = 7
	if _, err := s.Submit(ctx, other, t0); err == nil || !strings.Contains(err.Error(), "sampling.min_per_stratum: 7, but the batch was stored with 1") {
		t.Errorf("a part with other sampling: %v", err)
	}
}

// TestSampledRepeatedKeyCountsOnce: a key repeated in part 2 of a sampled
// batch is the job part 1 stored (skipped, not created again): its
// stratum's size counts it once. A copy in another stratum is refused
// whole as a conflict naming jobs[i].stratum (it would weigh the job in
// two strata). The DynamoDB store does the same
// (TestSampledRepeatedKeyCountsOnce there).
func TestSampledRepeatedKeyCountsOnce(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	p1, p2 := sampledSpec("b", 10, 1), sampledSpec("b", 15, 1) // a000…a014, b000…b014: a000…a009, b000…b009 repeated
	p1.Part, p1.Parts, p2.Part, p2.Parts = 1, 2, 2, 2
	if n, err := s.Submit(ctx, p1, t0); n != 20 || err != nil {
		t.Fatalf("part 1: %d, %v", n, err)
	}
	if n, err := s.Submit(ctx, p2, t0); n != 10 || err != nil {
		t.Fatalf("part 2: %d created, %v; want the 10 new", n, err)
	}
	sb, _ := s.Sampled("lab/sweep/b")
	for _, st := range sb.Strata {
		if st.Jobs != 15 {
			t.Errorf("stratum %s counts %d jobs, want 15", st.Name, st.Jobs)
		}
	}
	moved := sampledSpec("c", 2, 1)
	if _, err := s.Submit(ctx, moved, t0); err != nil {
		t.Fatal(err)
	}
	moved.Jobs[1].Stratum = "b" // a001
	_, err := s.Submit(ctx, moved, t0)
	if !errors.Is(err, job.ErrConflict) || !strings.Contains(err.Error(), `jobs[1].stratum: "b", but the stored job "a001" is in stratum "a"`) {
		t.Errorf("a key moved to another stratum: %v, want a conflict naming jobs[1].stratum", err)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

// TestSampledCountsResultsInReleaseOrder: results count toward the
// estimate only as a completed prefix of the claims. With the first claim
// still running, 39 later passes count for nothing (they might be the
// quick ones); its result lets all 40 in at once.
func TestSampledCountsResultsInReleaseOrder(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	s.Submit(ctx, sampledSpec("b", 100, 1), t0)
	jobs := claim(t, s, "gpt", "b", 40)
	for _, j := range jobs[1:] {
		finish(t, s, j, true)
	}
	sb, _ := s.Sampled("lab/sweep/b")
	if sb.Estimate.Results != 0 || sb.Estimate.Lower != 0 || sb.Estimate.Upper != 1 || sb.Stopped {
		t.Errorf("first claim running: %+v, want no result counted, [0, 1], not stopped", sb.Estimate)
	}
	finish(t, s, jobs[0], false)
	sb, _ = s.Sampled("lab/sweep/b")
	if sb.Estimate.Results != 40 || !(sb.Estimate.Lower > 0 && sb.Estimate.Upper < 1) {
		t.Errorf("every claim in: %+v, want 40 results counted and an interval inside (0, 1)", sb.Estimate)
	}
	if m := (sb.Estimate.Lower + sb.Estimate.Upper) / 2; math.Abs(sb.Estimate.Mean-m) > 1e-12 {
		t.Errorf("Mean %v, want the interval's midpoint %v", sb.Estimate.Mean, m)
	}
}

// TestSampledRetryKeepsItsPlace: a claimed job whose task is lost goes
// back to waiting and is the next one claimed; until it reports, the
// results claimed after it do not count.
func TestSampledRetryKeepsItsPlace(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{})
	s.Submit(ctx, sampledSpec("b", 100, 1), t0)
	jobs := claim(t, s, "gpt", "b", 10)
	if err := s.TaskStopped(ctx, jobs[0].ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs[1:] {
		finish(t, s, j, true)
	}
	if sb, _ := s.Sampled("lab/sweep/b"); sb.Estimate.Results != 0 {
		t.Errorf("first claim back to waiting: %d results counted, want 0", sb.Estimate.Results)
	}
	again := claim(t, s, "gpt", "b", 1)
	if len(again) != 1 || again[0].ID != jobs[0].ID {
		t.Fatalf("claimed %v after the loss, want %s again", again, jobs[0].Key)
	}
	finish(t, s, again[0], false)
	if sb, _ := s.Sampled("lab/sweep/b"); sb.Estimate.Results != 10 {
		t.Errorf("the retried job reported: %d results counted, want 10", sb.Estimate.Results)
	}
}
