package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// slowBatch is a sampled batch of one stratum whose verdicts are a fixed
// function of the key (about 70 % pass).
func slowBatch() job.BatchSpec {
	b := job.BatchSpec{Account: "acme", Project: "p", Batch: "slow", Model: "gpt", Tier: 1, MaxAttempts: 2,
		Sampling: &sampling.Params{MOE: 0.2, Confidence: 0.9, MinPerStratum: 5}}
	for i := range 200 {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("k%03d", i), Stratum: "only"})
	}
	return b
}

func slowPass(key string) bool { return sampling.Rank("verdict", key)%10 < 7 }

// TestSampledStopWaitsForTheSlowPrefix: 80 jobs are claimed; the passes
// come back first, out of release order, and the failures (the slow ones,
// as when a failing job runs to its timeout) after, in release order; the
// first failure's task is cancelled without a verdict, the second's fails
// with the provider (exit 75: back to waiting, claimed again, then its
// verdict). The same
// events go to memstore. At every step the estimate counts only the
// completed prefix — the passes past the first slow failure wait, so the
// stop does not move — and DynamoDB's estimate, stop and reason equal
// memstore's bit for bit; the batch stops, and only once the prefix holds
// the stop.
func TestSampledStopWaitsForTheSlowPrefix(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := memstore.New(scheduler.ModelConfig{})
	b := slowBatch()
	submit(t, s, b)
	if _, err := m.Submit(ctx, b, t0); err != nil {
		t.Fatal(err)
	}
	dj := commit(t, s, grant(t0, b, 80))
	mc, err := m.Commit(ctx, grant(t0, b, 80), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(dj), keysOf(mc.Claimed); len(dj) != 80 || !slices.Equal(got, want) {
		t.Fatalf("claimed %v, memstore %v", got, want)
	}
	mjob := map[string]scheduler.Job{}
	for _, j := range mc.Claimed {
		mjob[j.Key] = j
	}
	same := func(step string) job.SampledBatch {
		t.Helper()
		sb, _, err := s.Sampled(ctx, "acme/p/slow")
		if err != nil {
			t.Fatal(err)
		}
		mb, _ := m.Sampled("acme/p/slow")
		if sb.Estimate != mb.Estimate || sb.Stopped != mb.Stopped || sb.Reason != mb.Reason {
			t.Fatalf("%s: DynamoDB %+v stopped %v %q; memstore %+v stopped %v %q", step,
				sb.Estimate, sb.Stopped, sb.Reason, mb.Estimate, mb.Stopped, mb.Reason)
		}
		return sb
	}
	record := func(j scheduler.Job) {
		t.Helper()
		r := job.Result{Attempt: j.Attempt, Pass: slowPass(j.Key), At: t0, Token: j.ResultToken}
		if ok, err := s.RecordResult(ctx, j.ID, r); !ok || err != nil {
			t.Fatalf("record %s: %v %v", j.Key, ok, err)
		}
		mj := mjob[j.Key]
		r.Token = mj.ResultToken
		if ok, err := m.RecordResult(ctx, mj.ID, r); !ok || err != nil {
			t.Fatalf("memstore: record %s: %v %v", j.Key, ok, err)
		}
	}
	stop := func(j scheduler.Job, e job.Exit) {
		t.Helper()
		if err := s.TaskStopped(ctx, j.ID, j.Attempt, e, t0); err != nil {
			t.Fatal(err)
		}
		if err := m.TaskStopped(ctx, mjob[j.Key].ID, j.Attempt, e, t0); err != nil {
			t.Fatal(err)
		}
	}

	// Release order: the claim's (positions 0…79).
	firstFail := slices.IndexFunc(dj, func(j scheduler.Job) bool { return !slowPass(j.Key) })
	var fails []scheduler.Job
	for _, j := range dj {
		if slowPass(j.Key) {
			record(j)
		} else {
			fails = append(fails, j)
		}
	}
	sb := same("the passes in")
	if sb.Estimate.Results != firstFail || sb.Stopped {
		t.Fatalf("with only passes in: %d results counted, stopped %v; want the %d before the first slow failure, not stopped",
			sb.Estimate.Results, sb.Stopped, firstFail)
	}
	if len(fails) < 3 {
		t.Fatalf("only %d failures among the claimed: the test needs 3", len(fails))
	}
	unmeasured, provider := fails[0], fails[1]
	stop(provider, job.Exit{Code: 75, ProviderError: true})
	if sb := same("a provider failure"); sb.Estimate.Results != firstFail {
		t.Fatalf("after exit 75: %d results, want %d (the provider-failed job holds its place)", sb.Estimate.Results, firstFail)
	}
	stop(unmeasured, job.Exit{Cancelled: true})
	at := slices.IndexFunc(dj, func(j scheduler.Job) bool { return j.ID == provider.ID })
	if sb := same("a job without a verdict"); sb.Estimate.Results != at-1 {
		t.Fatalf("after a job ended without a verdict: %d results, want %d (passed over, not counted)", sb.Estimate.Results, at-1)
	}
	for _, j := range fails[2:] {
		record(j)
		if sb := same("failure " + j.Key); sb.Stopped || sb.Estimate.Results != at-1 {
			t.Fatalf("after %s: %d results, stopped %v; want %d, the provider-failed job holding the prefix", j.Key, sb.Estimate.Results, sb.Stopped, at-1)
		}
	}
	again := commit(t, s, grant(t0, b, 1))
	mc, err = m.Commit(ctx, grant(t0, b, 1), nil)
	if err != nil || len(again) != 1 || len(mc.Claimed) != 1 || again[0].ID != provider.ID || mc.Claimed[0].Key != provider.Key {
		t.Fatalf("claimed %+v and memstore %+v, %v; want %s again", keysOf(again), keysOf(mc.Claimed), err, provider.Key)
	}
	mjob[provider.Key] = mc.Claimed[0]
	record(again[0])
	sb = same("the provider-failed job's verdict")
	if !sb.Stopped || sb.Estimate.Results != 79 || !sb.Estimate.Stop {
		t.Errorf("with every claimed job done: %+v, stopped %v; want 79 results counted (one unmeasured) and the stop", sb.Estimate, sb.Stopped)
	}
}

// isSeqWrite reports whether a request is an UpdateItem of a SEQ item.
func isSeqWrite(op string, in any) bool {
	u, ok := in.(*dynamodb.UpdateItemInput)
	if op != "UpdateItem" || !ok {
		return false
	}
	sk, _ := u.Key["sk"].(*types.AttributeValueMemberS)
	return sk != nil && sk.Value == skSeq
}

// TestRacingAdvancesCountEachResult: two results of a sampled batch race;
// the first's advance read the sequence and counted its own, and before
// its write the second's advance counts both and writes. The first's
// write — conditioned on the version it read — is refused; read again,
// nothing is left to count: both results are in the sequence, once.
func TestRacingAdvancesCountEachResult(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := slowBatch()
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 2))
	result := func(j scheduler.Job) job.Result {
		return job.Result{Attempt: 1, Pass: true, At: t0, Token: j.ResultToken}
	}
	var o sync.Once
	c.before = func(op string, in any) {
		if isSeqWrite(op, in) {
			o.Do(func() {
				if ok, err := other.RecordResult(ctx, jobs[1].ID, result(jobs[1])); !ok || err != nil {
					t.Errorf("the second result: %v, %v", ok, err)
				}
			})
		}
	}
	if ok, err := s.RecordResult(ctx, jobs[0].ID, result(jobs[0])); !ok || err != nil {
		t.Fatalf("the first result: %v, %v", ok, err)
	}
	c.before = nil
	sb, _, err := s.Sampled(ctx, "acme/p/slow")
	if err != nil {
		t.Fatal(err)
	}
	if sb.Estimate.Results != 2 || sb.Strata[0].Passes != 2 {
		t.Errorf("counted %d results, %d passes; want 2 and 2", sb.Estimate.Results, sb.Strata[0].Passes)
	}
}

// TestRacingSampledClaimsTakeTheirOwnPlaces: two passes claim from one
// sampled batch; the second claims between the first's read of the log
// counter and its read of the waiting jobs (so the two take other jobs). The first's transaction — conditioned on
// the counter it read — is refused, and it claims again: every claimed
// job has its own place in the release log, 0 … n−1.
func TestRacingSampledClaimsTakeTheirOwnPlaces(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := slowBatch()
	submit(t, s, b)
	var theirs []scheduler.Job
	var o sync.Once
	c.before = func(op string, in any) {
		q, ok := in.(*dynamodb.QueryInput)
		if op != "Query" || !ok {
			return
		}
		if pk, _ := q.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS); pk != nil && strings.HasPrefix(pk.Value, waitPrefix) {
			o.Do(func() { theirs = commit(t, other, grant(t0, b, 3)) })
		}
	}
	mine := commit(t, s, grant(t0, b, 4))
	c.before = nil
	var places []int64
	for _, j := range append(mine, theirs...) {
		it, ok, err := s.readJob(ctx, j.ID)
		if err != nil || !ok || it.ReleasePos == nil {
			t.Fatalf("job %s: %+v, %v, %v; want a place in the release log", j.Key, it.ReleasePos, ok, err)
		}
		places = append(places, *it.ReleasePos)
	}
	slices.Sort(places)
	if len(mine) != 4 || len(theirs) != 3 || !slices.Equal(places, []int64{0, 1, 2, 3, 4, 5, 6}) {
		t.Errorf("claimed %d and %d, places %v; want 4 and 3 at 0 … 6", len(mine), len(theirs), places)
	}
	check(t, s)
}

// TestSampledWindowHoldsClaims: a batch with sampling.window 5 holds at
// most 5 claims past its counted prefix, in DynamoDB as in memstore: 5 of
// 10 granted; the results of places 1 … 4 move nothing while place 0
// runs, so the next grant claims none; place 0's result lets 5 more go.
func TestSampledWindowHoldsClaims(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := memstore.New(scheduler.ModelConfig{})
	b := slowBatch()
	p := *b.Sampling
	p.Window = 5
	b.Sampling = &p
	submit(t, s, b)
	if _, err := m.Submit(ctx, b, t0); err != nil {
		t.Fatal(err)
	}
	mjob := map[string]scheduler.Job{}
	claim := func(want int) []scheduler.Job {
		t.Helper()
		dj := commit(t, s, grant(t0, b, 10))
		mc, err := m.Commit(ctx, grant(t0, b, 10), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(dj); len(dj) != want || !slices.Equal(got, keysOf(mc.Claimed)) {
			t.Fatalf("claimed %v, memstore %v; want %d", got, keysOf(mc.Claimed), want)
		}
		for _, j := range mc.Claimed {
			mjob[j.Key] = j
		}
		return dj
	}
	record := func(j scheduler.Job) {
		t.Helper()
		r := job.Result{Attempt: 1, Pass: slowPass(j.Key), At: t0, Token: j.ResultToken}
		if ok, err := s.RecordResult(ctx, j.ID, r); !ok || err != nil {
			t.Fatalf("record %s: %v %v", j.Key, ok, err)
		}
		r.Token = mjob[j.Key].ResultToken
		if ok, err := m.RecordResult(ctx, mjob[j.Key].ID, r); !ok || err != nil {
			t.Fatalf("memstore: record %s: %v %v", j.Key, ok, err)
		}
	}
	first := claim(5)
	for _, j := range first[1:] {
		record(j)
	}
	claim(0)
	record(first[0])
	claim(5)
	if sb, _, _ := s.Sampled(ctx, "acme/p/slow"); sb.Params.Window != 5 {
		t.Errorf("stored window %d, want 5", sb.Params.Window)
	}
}

// TestSampledWindowIsATerm: a part whose sampling.window differs from the
// batch's first is refused whole, naming the field.
func TestSampledWindowIsATerm(t *testing.T) {
	s, _ := newStore(t)
	b := slowBatch()
	p := *b.Sampling
	p.Window = 5
	b.Sampling, b.Part, b.Parts = &p, 1, 2
	submit(t, s, b)
	other := slowBatch()
	q := p
	q.Window = 6
	other.Sampling, other.Part, other.Parts, other.Jobs = &q, 2, 2, []job.JobSpec{{Key: "z", Stratum: "only"}}
	if _, err := s.Submit(context.Background(), other, t0); err == nil || !strings.Contains(err.Error(), "sampling.window: 6, but the batch was stored with 5") {
		t.Errorf("a part with another window: %v", err)
	}
}

// TestSampledUnreportedSuccessPassedAfterGrace: a job that succeeded
// (exit 0) without reporting holds the counted prefix for its result
// grace, then is passed over as unmeasured, in DynamoDB as in memstore;
// one that reports after its end but within the grace counts. Place 0
// succeeds and never reports in time; place 1 succeeds and reports a
// minute later; places 2 … 9 report. Nothing counts until the grace
// (sampling.DefaultResultGrace) is out; the first claim after it passes
// place 0 over and counts the nine others; place 0's verdict after that
// counts nothing.
func TestSampledUnreportedSuccessPassedAfterGrace(t *testing.T) {
	w := newTwin(t, slowBatch())
	jobs := w.claim(t0, 10)
	w.stop(jobs[0], job.Exit{}, t0)
	w.stop(jobs[1], job.Exit{}, t0)
	for _, j := range jobs[2:] {
		w.record(j, slowPass(j.Key), t0)
	}
	if sb := w.same("place 0 and 1 ended without a verdict"); sb.Estimate.Results != 0 {
		t.Fatalf("%d results counted; want 0: place 0 succeeded and may still report", sb.Estimate.Results)
	}
	w.record(jobs[1], slowPass(jobs[1].Key), t0.Add(time.Minute))
	w.claim(t0.Add(4*time.Minute), 1)
	if sb := w.same("within the grace"); sb.Estimate.Results != 0 {
		t.Fatalf("%d results counted within the grace; want 0", sb.Estimate.Results)
	}
	w.claim(t0.Add(5*time.Minute), 1)
	if sb := w.same("the grace out"); sb.Estimate.Results != 9 {
		t.Fatalf("%d results counted after the grace; want 9 (place 0 passed over, place 1's late verdict counted)", sb.Estimate.Results)
	}
	w.record(jobs[0], true, t0.Add(6*time.Minute))
	if sb := w.same("place 0's verdict after the grace"); sb.Estimate.Results != 9 {
		t.Errorf("%d results counted; want 9: place 0 was passed over", sb.Estimate.Results)
	}
}

// TestSampledFirstVerdictIsFinal: a sampled job reports a failure, its
// task is lost (an infrastructure exit: it runs again, keeping its
// place), and its second attempt reports a pass. Both stores refuse the
// second verdict and count the first, while place 0 still runs and only
// after it reports: the job's outcome is the draw first reported, never
// the newest when the prefix gets there.
func TestSampledFirstVerdictIsFinal(t *testing.T) {
	w := newTwin(t, slowBatch())
	jobs := w.claim(t0, 3)
	if !w.record(jobs[1], false, t0) {
		t.Fatalf("the first verdict of %s was not recorded", jobs[1].Key)
	}
	w.stop(jobs[1], job.Exit{Code: 1, Infrastructure: true}, t0)
	again := w.claim(t0, 1)
	if len(again) != 1 || again[0].ID != jobs[1].ID || again[0].Attempt != 2 {
		t.Fatalf("claimed %v; want %s at attempt 2", keysOf(again), jobs[1].Key)
	}
	if w.record(again[0], true, t0) {
		t.Errorf("attempt 2's verdict was recorded over attempt 1's")
	}
	w.stop(again[0], job.Exit{}, t0)
	w.record(jobs[2], true, t0)
	w.record(jobs[0], true, t0)
	sb := w.same("every verdict in")
	if sb.Estimate.Results != 3 || sb.Strata[0].Passes != 2 {
		t.Errorf("%d results, %d passes; want 3 and 2 (the job's first verdict, a failure)", sb.Estimate.Results, sb.Strata[0].Passes)
	}
	dr, ok, err := w.d.JobResult(context.Background(), jobs[1].ID)
	mr, mok := w.m.JobResult(w.mjob[jobs[1].Key].ID)
	if err != nil || !ok || !mok || dr.Pass || mr.Pass || dr.Attempt != 1 || mr.Attempt != 1 {
		t.Errorf("job result %+v (%v %v), memstore %+v (%v); want attempt 1's failure in both", dr, ok, err, mr, mok)
	}
}

// TestSampledCancelOfARetriedJobPassesItsPlace: place 0's provider fails
// it (exit 75: it waits again, holding its place and the prefix); places
// 1 and 2 report. An operator cancels the batch: the retried job ends
// CANCELLED without a result, so its place is passed over as unmeasured
// and the two verdicts after it count — in DynamoDB (a none in its log
// entry, with the cancel) as in memstore.
func TestSampledCancelOfARetriedJobPassesItsPlace(t *testing.T) {
	w := newTwin(t, slowBatch())
	jobs := w.claim(t0, 3)
	w.stop(jobs[0], job.Exit{Code: 75, ProviderError: true}, t0)
	w.record(jobs[1], true, t0)
	w.record(jobs[2], false, t0)
	if sb := w.same("place 0 waiting again"); sb.Estimate.Results != 0 {
		t.Fatalf("%d results counted; want 0: place 0 waits to run again", sb.Estimate.Results)
	}
	ctx := context.Background()
	scope := scheduler.Scope{Account: "acme", Project: "p", Batch: "slow"}
	n, err := w.d.Cancel(ctx, scope, t0)
	mn, merr := w.m.Cancel(ctx, scope, t0)
	if err != nil || merr != nil || n != mn || n != 198 {
		t.Fatalf("cancelled %d (%v), memstore %d (%v); want 198 (the retried job and the 197 never claimed)", n, err, mn, merr)
	}
	if sb := w.same("the batch cancelled"); sb.Estimate.Results != 2 {
		t.Errorf("%d results counted; want 2: the cancelled place 0 passed over", sb.Estimate.Results)
	}
}

// TestSampledJobClaimedBeforeThePlacesIsNotCounted: a job claimed under
// the release before the release log (no release_pos; the log counter
// never counted it) reports: its verdict is kept on the job but never
// counted in the batch's sequence, and it holds no place, so the jobs
// claimed after it count as their results come (docs/sampling.md,
// "Upgrade notes").
func TestSampledJobClaimedBeforeThePlacesIsNotCounted(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := slowBatch()
	submit(t, s, b)
	old := commit(t, s, grant(t0, b, 1))[0]
	// What the older release's claim left: the job out without a place,
	// the log counter at 0.
	if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.State, Key: key(jobPK(old.ID), skJob), UpdateExpression: aws.String("REMOVE release_pos"),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.tables.State, Key: key(sampledPK("acme/p/slow"), skSeq)}); err != nil {
		t.Fatal(err)
	}
	next := commit(t, s, grant(t0, b, 2))
	if ok, err := s.RecordResult(ctx, old.ID, job.Result{Attempt: 1, Pass: true, At: t0, Token: old.ResultToken}); !ok || err != nil {
		t.Fatalf("the old job's verdict: %v %v; want it recorded", ok, err)
	}
	for _, j := range next {
		if ok, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: 1, Pass: false, At: t0, Token: j.ResultToken}); !ok || err != nil {
			t.Fatalf("record %s: %v %v", j.Key, ok, err)
		}
	}
	sb, _, err := s.Sampled(ctx, "acme/p/slow")
	if err != nil || sb.Estimate.Results != 2 || sb.Strata[0].Passes != 0 {
		t.Errorf("%+v, %d passes (%v); want the 2 placed results counted, not the old job's pass", sb.Estimate, sb.Strata[0].Passes, err)
	}
	if r, ok, err := s.JobResult(ctx, old.ID); !ok || err != nil || !r.Pass {
		t.Errorf("the old job's result %+v, %v, %v; want its pass kept on the job", r, ok, err)
	}
}
