package dynamostore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestRecordResultPerAttempt: a verdict is kept for the job's current
// attempt only; a stale attempt's, a repeat and one for a job that never
// ran change nothing; a later attempt's replaces an earlier one's.
func TestRecordResultPerAttempt(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("acme", "p", "b", "gpt", 1, 2)
	submit(t, s, b)
	j := commit(t, s, grant(t0, b, 1))[0]
	launchAll(t, s, nil)
	waiting := jobAt(t, s, b, 1)
	score := 0.75
	record := func(id string, r job.Result) bool {
		t.Helper()
		ok, err := s.RecordResult(ctx, id, r)
		if err != nil {
			t.Fatalf("RecordResult: %v", err)
		}
		return ok
	}
	if record(waiting.ID, job.Result{Attempt: 1, Pass: true, At: t0, Token: j.ResultToken}) {
		t.Error("a waiting job's result was recorded")
	}
	if record(j.ID, job.Result{Attempt: 2, Pass: true, At: t0, Token: j.ResultToken}) {
		t.Error("a result for an attempt the job has not reached was recorded")
	}
	if !record(j.ID, job.Result{Attempt: 1, Pass: false, Score: &score, At: t0, Token: j.ResultToken}) {
		t.Fatal("the current attempt's result was not recorded")
	}
	if record(j.ID, job.Result{Attempt: 1, Pass: true, At: t0, Token: j.ResultToken}) {
		t.Error("a repeated result was recorded")
	}
	r, ok, err := s.JobResult(ctx, j.ID)
	if err != nil || !ok || r.Pass || r.Attempt != 1 || r.Score == nil || *r.Score != 0.75 || !r.At.Equal(t0) {
		t.Errorf("JobResult = %+v, %v, %v; want the first verdict (fail, 0.75, attempt 1)", r, ok, err)
	}

	// The task is lost; attempt 2 runs and reports; attempt 1's late
	// duplicate is stale.
	if err := s.TaskStopped(ctx, j.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	// Waiting again, at attempt 2, its item still holding attempt 1's
	// token: attempt 1's sandbox naming attempt 2 is refused by the state.
	if w, _, _ := s.Job(ctx, j.ID); w.State != job.Waiting || w.Attempt != 2 {
		t.Fatalf("after the lost task: %s attempt %d, want WAITING attempt 2", w.State, w.Attempt)
	}
	if record(j.ID, job.Result{Attempt: 2, Pass: true, At: t0, Token: j.ResultToken}) {
		t.Error("a result for a job waiting again was recorded")
	}
	j2 := commit(t, s, grant(t0, b, 1))[0]
	if j2.ID != j.ID || j2.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d, want %s attempt 2", j2.ID, j2.Attempt, j.ID)
	}
	if record(j.ID, job.Result{Attempt: 1, Pass: true, At: t0, Token: j.ResultToken}) {
		t.Error("attempt 1's result was recorded while attempt 2 runs")
	}
	if !record(j.ID, job.Result{Attempt: 2, Pass: true, At: t0, Token: j2.ResultToken}) {
		t.Fatal("attempt 2's result was not recorded")
	}
	if r, _, _ := s.JobResult(ctx, j.ID); !r.Pass || r.Attempt != 2 || r.Score != nil {
		t.Errorf("JobResult = %+v, want attempt 2's pass without a score", r)
	}

	_, err = s.RecordResult(ctx, strings.Repeat("f", 32), job.Result{Attempt: 1, Token: j.ResultToken})
	if !errors.Is(err, job.ErrUnknownJob) {
		t.Errorf("unknown job: %v, want ErrUnknownJob", err)
	}
}

// TestClaimStoresTheResultToken: each claim path — the batched claim at a
// queue's cursor, the slow claim of a retried job, a sampled batch's claim
// — writes the attempt's token on the job item in the claim's own write
// and hands the same token to the launcher; every attempt and job gets its
// own, and the CLI's copy of a job carries none.
func TestClaimStoresTheResultToken(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	plain := batch("acme", "p", "b", "gpt", 1, 2)
	sampled := stopBatch()
	submit(t, s, plain)
	submit(t, s, sampled)
	seen := map[resulttoken.Token]string{}
	check := func(path string, j scheduler.Job) {
		t.Helper()
		if !resulttoken.Valid(j.ResultToken.Reveal()) {
			t.Fatalf("%s: claimed %s with token %q", path, j.Key, j.ResultToken.Reveal())
		}
		if other, dup := seen[j.ResultToken]; dup {
			t.Errorf("%s: %s attempt %d drew the token of %s", path, j.Key, j.Attempt, other)
		}
		seen[j.ResultToken] = path + " " + j.Key
		res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.State), Key: key(jobPK(j.ID), skJob), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := res.Item[attrResultToken].(*types.AttributeValueMemberS); got == nil || got.Value != j.ResultToken.Reveal() {
			t.Errorf("%s: %s's item holds token %v, the launcher got another", path, j.Key, res.Item[attrResultToken])
		}
		if cli, _, _ := s.Job(ctx, j.ID); cli.ResultToken != "" {
			t.Errorf("%s: Job(%s) carries the token", path, j.Key)
		}
	}
	jobs := commit(t, s, grant(t0, plain, 2))
	for _, j := range jobs {
		check("batched", j)
	}
	if err := s.TaskStopped(ctx, jobs[0].ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	retried := commit(t, s, grant(t0, plain, 1))
	if len(retried) != 1 || retried[0].Attempt != 2 {
		t.Fatalf("claimed %v, want the retried job's attempt 2", retried)
	}
	check("slow (retried)", retried[0])
	for _, j := range commit(t, s, grant(t0, sampled, 3)) {
		check("sampled", j)
	}
}

// TestRecordResultNeedsTheAttemptsToken: a result naming the job's
// current attempt with no token, a sibling's, a guessed one or an earlier
// attempt's is refused with ErrWrongToken and records nothing; the
// attempt's own token records it.
func TestRecordResultNeedsTheAttemptsToken(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("acme", "p", "b", "gpt", 1, 2)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 2))
	j, sibling := jobs[0], jobs[1]
	if err := s.TaskStopped(ctx, j.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	j2 := commit(t, s, grant(t0, b, 1))[0]
	for name, tok := range map[string]resulttoken.Token{
		"none": "", "sibling's": sibling.ResultToken, "guessed": resulttoken.New(), "attempt 1's": j.ResultToken,
	} {
		ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 2, Pass: true, At: t0, Token: tok})
		if ok || !errors.Is(err, job.ErrWrongToken) {
			t.Errorf("%s token: %v, %v; want refused with ErrWrongToken", name, ok, err)
		}
	}
	if _, ok, _ := s.JobResult(ctx, j.ID); ok {
		t.Fatal("a refused result was recorded")
	}
	if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 2, Pass: true, At: t0, Token: j2.ResultToken}); !ok || err != nil {
		t.Fatalf("the attempt's own result: %v, %v", ok, err)
	}
	// Recorded: a forgery is still told apart from a repeat.
	if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 2, Pass: false, At: t0, Token: sibling.ResultToken}); ok || !errors.Is(err, job.ErrWrongToken) {
		t.Errorf("a forgery after the verdict: %v, %v; want ErrWrongToken", ok, err)
	}
	if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 2, Pass: true, At: t0, Token: j2.ResultToken}); ok || err != nil {
		t.Errorf("a repeat: %v, %v; want ignored", ok, err)
	}
}

// TestForgedResultsRaceTheTrueOne: for each of several running jobs — a
// plain batch's and a sampled batch's — forged verdicts (right id and
// attempt, a sibling's or a made-up token) race the job's true one,
// all sent at once. Only the true verdict is recorded, every forgery is
// refused with ErrWrongToken, and a sampled stratum counts one result per
// job.
func TestForgedResultsRaceTheTrueOne(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	plain := batch("acme", "p", "race", "gpt", 1, 6)
	sampled := stopBatch()
	submit(t, s, plain)
	submit(t, s, sampled)
	jobs := append(commit(t, s, grant(t0, plain, 6)), commit(t, s, grant(t0, sampled, 4))...)
	const forgers = 6
	type outcome struct {
		forged bool
		ok     bool
		err    error
	}
	var wg sync.WaitGroup
	results := make([][]outcome, len(jobs))
	start := make(chan struct{})
	for i, j := range jobs {
		results[i] = make([]outcome, forgers+1)
		for k := range forgers + 1 {
			r := job.Result{Attempt: j.Attempt, Pass: false, At: t0, Token: resulttoken.New()} // forged: fail
			if k%2 == 1 {
				r.Token = jobs[(i+1)%len(jobs)].ResultToken // a sibling's
			}
			if k == forgers {
				r.Pass, r.Token = true, j.ResultToken // the true one: pass
			}
			wg.Go(func() {
				<-start
				ok, err := s.RecordResult(ctx, j.ID, r)
				results[i][k] = outcome{forged: k < forgers, ok: ok, err: err}
			})
		}
	}
	close(start)
	wg.Wait()
	for i, j := range jobs {
		for k, o := range results[i] {
			switch {
			case o.forged && (o.ok || !errors.Is(o.err, job.ErrWrongToken)):
				t.Errorf("%s: forgery %d: recorded %v, %v; want refused with ErrWrongToken", j.Key, k, o.ok, o.err)
			case !o.forged && (!o.ok || o.err != nil):
				t.Errorf("%s: the true verdict: recorded %v, %v", j.Key, o.ok, o.err)
			}
		}
		if r, ok, err := s.JobResult(ctx, j.ID); err != nil || !ok || !r.Pass {
			t.Errorf("%s: JobResult = %+v, %v, %v; want the true pass", j.Key, r, ok, err)
		}
	}
	sb, _, err := s.Sampled(ctx, sampled.Account+"/"+sampled.Project+"/"+sampled.Batch)
	if err != nil {
		t.Fatal(err)
	}
	counted, passes := 0, 0
	for _, st := range sb.Strata {
		counted, passes = counted+st.Results, passes+st.Passes
	}
	if counted != 4 || passes != 4 {
		t.Errorf("the sampled strata count %d results, %d passes; want the 4 true passes", counted, passes)
	}
}
