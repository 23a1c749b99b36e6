package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// The tests below guard the conditions of a sampled batch's writes (the
// result record and the stop's skip), racing the store's own writers as
// exactly_test.go does.

// stopBatch is a sampled batch whose stop rule holds after a few dozen
// results: stratum a always passes, b always fails.
func stopBatch() job.BatchSpec {
	b := job.BatchSpec{Account: "acme", Project: "p", Batch: "s", Model: "gpt", Tier: 1,
		Sampling: &sampling.Params{MOE: 0.2, Confidence: 0.9, MinPerStratum: 5}}
	for i := range 100 {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("a%03d", i), Stratum: "a"}, job.JobSpec{Key: fmt.Sprintf("b%03d", i), Stratum: "b"})
	}
	return b
}

// runUntilStopped claims one job at a time and records its verdict until
// the batch's stop rule holds (the result that makes it hold skips the
// rest); it returns the jobs that ran.
func runUntilStopped(t *testing.T, s *Store, b job.BatchSpec) []scheduler.Job {
	t.Helper()
	ctx := context.Background()
	var ran []scheduler.Job
	for {
		jobs := commit(t, s, grant(t0, b, 1))
		if len(jobs) == 0 {
			t.Fatal("ran out of jobs before the stop rule held")
		}
		j := jobs[0]
		if _, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: j.Attempt, Pass: j.Key[0] == 'a', At: t0, Token: j.ResultToken}); err != nil {
			t.Fatal(err)
		}
		ran = append(ran, j)
		if sb, _, _ := s.Sampled(ctx, b.Account+"/"+b.Project+"/"+b.Batch); sb.Estimate.Stop {
			return ran
		}
	}
}

// beforeSkip returns a hook that runs f once, before the first transaction
// that writes a job SKIPPED: the stop's, after its read of the waiting jobs.
func beforeSkip(f func()) func(string, any) {
	return beforeUpdate(func(u *types.Update) bool {
		for _, v := range u.ExpressionAttributeValues {
			if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == string(job.Skipped) {
				return true
			}
		}
		return false
	}, f)
}

// TestRacingResultDeliveriesCountOnce: two deliveries of one sampled job's
// verdict both read the job with no result; the first records and counts
// it, the second's write — conditioned on no result recorded — is
// refused: the release log counts one result.
func TestRacingResultDeliveriesCountOnce(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := stopBatch()
	submit(t, s, b)
	j := commit(t, s, grant(t0, b, 1))[0]
	r := job.Result{Attempt: 1, Pass: true, At: t0, Token: j.ResultToken}
	c.before = once("UpdateItem", func() {
		if ok, err := other.RecordResult(ctx, j.ID, r); !ok || err != nil {
			t.Errorf("the first delivery: recorded %v, %v", ok, err)
		}
	})
	ok, err := s.RecordResult(ctx, j.ID, r)
	c.before = nil
	if ok || err != nil {
		t.Errorf("the second delivery: recorded %v, %v; want refused", ok, err)
	}
	sb, _, err := s.Sampled(ctx, "acme/p/s")
	if err != nil {
		t.Fatal(err)
	}
	if sb.Estimate.Results != 1 {
		t.Errorf("%d results counted, want 1", sb.Estimate.Results)
	}
}

// TestStopLeavesAJobClaimedMeanwhile: between the stop's read of the
// waiting jobs and its skip, another pass claims one of them. The skip's
// condition (WAITING, attempt) refuses the transaction; read again, the
// claimed job stays CLAIMED and the rest end SKIPPED.
func TestStopLeavesAJobClaimedMeanwhile(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := stopBatch()
	submit(t, s, b)
	var taken []scheduler.Job
	c.before = beforeSkip(func() {
		c, err := other.Commit(ctx, grant(t0, b, 1), nil)
		if taken = c.Claimed; err != nil || len(taken) != 1 {
			t.Errorf("the other pass claimed %d, %v; want 1", len(taken), err)
		}
	})
	ran := runUntilStopped(t, s, b)
	c.before = nil
	if len(taken) != 1 {
		t.Fatal("the stop skipped nothing")
	}
	if j, _, _ := s.Job(ctx, taken[0].ID); j.State != job.Claimed {
		t.Errorf("the job claimed meanwhile is %s, want CLAIMED", j.State)
	}
	rows, err := s.Batches(ctx, scheduler.Scope{Account: "acme", Project: "p", Batch: "s"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Batches: %v %v", rows, err)
	}
	if want := len(b.Jobs) - len(ran) - 1; rows[0].Waiting != 0 || rows[0].Skipped != want {
		t.Errorf("counts %+v, want 0 waiting and %d skipped", rows[0], want)
	}
	check(t, s)
}

// TestStopKeepsAQueueANewMessageCameTo: after the stop skipped every
// waiting job, and before it takes the queue out of the active index, a
// new message of the batch (one without parts may add jobs) registers a
// job. The removal's condition (nothing waiting) refuses it: the queue
// stays in the snapshot with its one waiting job, which a pass can still
// see. (A retry at that moment no longer waits: the stop's mark skips it,
// TestRetryRacingTheStopIsSkipped.)
func TestStopKeepsAQueueANewMessageCameTo(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := stopBatch()
	submit(t, s, b)
	late := b
	late.Jobs = []job.JobSpec{{Key: "late", Stratum: "a"}}
	var o sync.Once
	c.before = func(op string, in any) {
		u, ok := in.(*dynamodb.UpdateItemInput)
		if op != "UpdateItem" || !ok || u.UpdateExpression == nil || *u.UpdateExpression != "REMOVE #a" {
			return
		}
		o.Do(func() {
			if n, err := other.Submit(ctx, late, t0); n != 1 || err != nil {
				t.Errorf("the new message: %d created, %v", n, err)
			}
		})
	}
	runUntilStopped(t, s, b)
	c.before = nil
	var found bool
	for _, q := range snapshot(t, s).Queues {
		if q.Batch == "s" {
			found = true
			if q.Waiting != 1 {
				t.Errorf("the queue shows %d waiting, want the new job", q.Waiting)
			}
		}
	}
	if !found {
		t.Error("the queue left the snapshot with a new job waiting in it")
	}
	if j, _, _ := s.Job(ctx, job.JobID("acme", "p", "s", "late")); j.State != job.Waiting {
		t.Errorf("the new job is %s, want WAITING", j.State)
	}
	check(t, s)
}

// skippedAfterStop checks that a job returned to waiting after its batch
// stopped ended SKIPPED instead, with the stop's reason, at the attempt
// that ran, and that nothing of its batch waits.
func skippedAfterStop(t *testing.T, s *Store, b job.BatchSpec, ids ...string) {
	t.Helper()
	ctx := context.Background()
	sb, _, err := s.Sampled(ctx, b.Account+"/"+b.Project+"/"+b.Batch)
	if err != nil || !sb.Stopped || !strings.HasPrefix(sb.Reason, "sampling stopped: ") {
		t.Fatalf("Sampled: stopped %v %q, %v; want the stop marked with its reason", sb.Stopped, sb.Reason, err)
	}
	for _, id := range ids {
		j, _, _ := s.Job(ctx, id)
		if j.State != job.Skipped || j.Reason != sb.Reason || j.Attempt != 1 || j.EndedAt.IsZero() {
			t.Errorf("job %s is %s %q attempt %d ended %v; want SKIPPED with the stop's reason %q at attempt 1",
				j.Key, j.State, j.Reason, j.Attempt, j.EndedAt, sb.Reason)
		}
	}
	for _, q := range snapshot(t, s).Queues {
		if q.Batch == b.Batch {
			t.Errorf("the stopped batch's queue waits: %+v", q)
		}
	}
	rows, err := s.Batches(ctx, scheduler.Scope{Account: b.Account, Project: b.Project, Batch: b.Batch})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Batches: %v %v", rows, err)
	}
	if got := counts(t, s)[job.Skipped]; rows[0].Waiting != 0 || rows[0].Skipped != got {
		t.Errorf("counts %+v, want 0 waiting and the %d SKIPPED", rows[0], got)
	}
	check(t, s)
}

// twoOutAtStop submits a sampled batch, claims 120 of its jobs and
// records their verdicts in release order until the batch stops; the last
// two claimed (the last places in the release log, so they cannot hold
// the stop) are out: one LAUNCHED, one CLAIMED.
func twoOutAtStop(t *testing.T) (*Store, job.BatchSpec, []scheduler.Job) {
	s, _ := newStore(t)
	b := stopBatch()
	submit(t, s, b)
	claimed := commit(t, s, grant(t0, b, 120))
	out := claimed[len(claimed)-2:]
	launchAll(t, s, out[:1])
	recordUntilStopped(t, s, claimed[:len(claimed)-2])
	return s, b, out
}

// recordUntilStopped records the verdicts of stopBatch's claimed jobs, in
// release order, until the batch stops.
func recordUntilStopped(t *testing.T, s *Store, claimed []scheduler.Job) {
	t.Helper()
	ctx := context.Background()
	for _, j := range claimed {
		if _, err := s.RecordResult(ctx, j.ID, job.Result{Attempt: j.Attempt, Pass: j.Key[0] == 'a', At: t0, Token: j.ResultToken}); err != nil {
			t.Fatal(err)
		}
		if sb, _, _ := s.Sampled(ctx, "acme/p/s"); sb.Stopped {
			return
		}
	}
	t.Fatal("ran out of claimed jobs before the stop rule held")
}

// TestRetryAfterStopIsSkipped: two jobs are out when their sampled batch
// stops; then one's task is lost (an infrastructure exit) and the other's
// launch comes back for a retry. Neither waits again: both end SKIPPED
// with the stop's reason, as memstore ends them
// (TestSampledRetryAfterStopIsSkipped there), counters consistent.
func TestRetryAfterStopIsSkipped(t *testing.T) {
	ctx := context.Background()
	s, b, out := twoOutAtStop(t)
	if err := s.TaskStopped(ctx, out[0].ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: out[1].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"}}); err != nil {
		t.Fatal(err)
	}
	skippedAfterStop(t, s, b, out[0].ID, out[1].ID)
}

// TestRetryRacingTheStopIsSkipped: a running job's task is lost; after the
// retry read the job, and before its transaction, another writer records
// the results that stop the batch (the stop reads the job still RUNNING,
// so it does not skip it). The retry's check of the stop mark refuses the
// transaction; read again, the job ends SKIPPED, not waiting in a stopped
// batch.
func TestRetryRacingTheStopIsSkipped(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := stopBatch()
	submit(t, s, b)
	claimed := commit(t, s, grant(t0, b, 120))
	first := claimed[len(claimed)-1] // the last place in the release log: it cannot hold the stop
	launchAll(t, s, []scheduler.Job{first})
	var o sync.Once
	c.before = func(op string, in any) {
		tx, ok := in.(*dynamodb.TransactWriteItemsInput)
		if op != "TransactWriteItems" || !ok || !slices.ContainsFunc(tx.TransactItems, func(it types.TransactWriteItem) bool { return it.ConditionCheck != nil }) {
			return
		}
		o.Do(func() { recordUntilStopped(t, other, claimed[:len(claimed)-1]) })
	}
	if err := s.TaskStopped(ctx, first.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	c.before = nil
	skippedAfterStop(t, s, b, first.ID)
}

// TestStopSkipOfARetriedJobEndsItsPlace: the last job claimed waits again
// (its provider failed it) with its place in the release log when the
// batch stops; the stop skips it and marks its place none in the same
// transaction, so the log has no place left open.
func TestStopSkipOfARetriedJobEndsItsPlace(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := stopBatch()
	submit(t, s, b)
	claimed := commit(t, s, grant(t0, b, 120))
	last := claimed[len(claimed)-1]
	if err := s.TaskStopped(ctx, last.ID, 1, job.Exit{Code: 75, ProviderError: true}, t0); err != nil {
		t.Fatal(err)
	}
	recordUntilStopped(t, s, claimed[:len(claimed)-1])
	it, _, err := s.readJob(ctx, last.ID)
	if err != nil || it.State != job.Skipped || it.ReleasePos == nil {
		t.Fatalf("the retried job: %s place %v (%v); want SKIPPED with its place", it.State, it.ReleasePos, err)
	}
	log, err := s.readLog(ctx, "acme/p/s", *it.ReleasePos)
	if err != nil || len(log) != 1 || log[0].Outcome != outcomeNone {
		t.Errorf("its log entry %+v (%v); want outcome none", log, err)
	}
}
