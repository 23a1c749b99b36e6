package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Every job transition below is one conditional write (state and attempt as
// read) that carries the counters it moves: a repeated or stale event finds
// the job moved on and changes nothing; a transition that lost a race is
// re-read and judged again.

// maxRereads bounds how often one event re-reads a job that keeps moving
// (or whose transaction met another on the same counters item).
const maxRereads = 8

// RecordLaunches implements scheduler.Store.
//
// Each launched job is recorded by one conditional update, without reading
// it first, several at a time: conditioned on the job still CLAIMED at the
// attempt launched (1 write unit and the inflight index's 1; a transaction
// of them billed 2 a job and bought nothing, as no two jobs' records depend
// on each other). A refused one (a job moved on: a repeated result, a
// reconciler, or a task that reported RUNNING first) or a failed one falls
// back to the single path below, which reads the job and judges it.
// Retries and failures move counters and back items: one transaction each.
func (s *Store) RecordLaunches(ctx context.Context, now time.Time, results []scheduler.LaunchResult) error {
	var launched, single []scheduler.LaunchResult
	for _, r := range results {
		switch r.Status {
		case scheduler.Launched:
			launched = append(launched, r)
		case scheduler.Unknown: // the job stays CLAIMED: the reconciler's
		default:
			single = append(single, r)
		}
	}
	var mu sync.Mutex
	_ = parallel(ctx, len(launched), func(ctx context.Context, i int) error {
		if ok, err := s.setLaunchedBlind(ctx, launched[i], now); !ok || err != nil {
			mu.Lock()
			single = append(single, launched[i])
			mu.Unlock()
		}
		return nil
	})
	if len(single) == 0 {
		return nil
	}

	ids := make([]string, len(single))
	for i, r := range single {
		ids[i] = r.JobID
	}
	jobs, err := s.readJobs(ctx, ids)
	if err != nil {
		return fmt.Errorf("record launches: %w", err)
	}
	var errs []error
	_ = parallel(ctx, len(single), func(ctx context.Context, i int) error {
		r := single[i]
		j, ok := jobs[r.JobID]
		var err error
		if !ok {
			err = job.ErrUnknownJob
		} else {
			err = s.recordLaunch(ctx, j, r, now)
		}
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("record launch of %s: %w", r.JobID, err))
			mu.Unlock()
		}
		return nil
	})
	return errors.Join(errs...)
}

// setLaunchedBlind is CLAIMED → LAUNCHED for a job not read, conditioned on
// its state and the attempt launched; false, nil when refused.
func (s *Store) setLaunchedBlind(ctx context.Context, r scheduler.LaunchResult, now time.Time) (bool, error) {
	u := expression.Set(name("state"), value(job.Launched)).Set(name("launched_at"), value(stamp(now)))
	if r.TaskARN != "" {
		u = u.Set(name("task_arn"), value(r.TaskARN))
	}
	// Guard: LAUNCHED only over CLAIMED at the attempt launched: a repeated
	// or late result never turns back a running job or a retried attempt.
	// Without it TestLateLaunchResultsChangeNothing fails (make mutate:
	// launch-record-batched).
	it, err := updateItem(s.tables.State, key(jobPK(r.JobID), skJob), u,
		name("state").Equal(value(job.Claimed)).And(name("attempt").Equal(value(r.Attempt))))
	if err != nil {
		return false, err
	}
	return s.writeOne(ctx, it.Update)
}

func (s *Store) recordLaunch(ctx context.Context, j jobItem, r scheduler.LaunchResult, now time.Time) error {
	ev := job.Event{Kind: job.LaunchFail, Attempt: r.Attempt, Reason: r.Reason}
	switch r.Status {
	case scheduler.Launched:
		ev.Kind = job.Launch
	case scheduler.Retry:
		ev.Kind = job.LaunchRetry
	}
	for try := 0; ; try++ {
		c, ok := job.Apply(j.current(), ev)
		if !ok && ev.Kind == job.Launch && j.State == job.Running && j.Attempt == r.Attempt && j.TaskARN == "" && r.TaskARN != "" {
			// Its task reported RUNNING before this record: the job keeps
			// its state, and takes the task's ARN, without which nobody
			// could stop the task (cancel --stop-running, the reconciler).
			return s.setTaskARN(ctx, j, r.TaskARN)
		}
		if !ok {
			return nil // a stale or repeated result: the job has moved on
		}
		var applied bool
		var err error
		if c.To == job.Launched {
			// LaunchedAt records the call; the pending key stays the
			// claiming pass's time, which PendingRaise compares with the limit state's Mark().
			applied, err = s.setLaunched(ctx, j, r.TaskARN, now)
		} else {
			applied, err = s.persist(ctx, j, c, nil, now)
		}
		if err != nil || applied {
			return err
		}
		if try >= maxRereads {
			return fmt.Errorf("job keeps changing; gave up after %d reads", try+1)
		}
		if err := jitter(ctx, time.Duration(try+1)*10*time.Millisecond); err != nil {
			return err
		}
		if j, ok, err = s.readJob(ctx, r.JobID); err != nil || !ok {
			return cmp.Or(err, job.ErrUnknownJob)
		}
	}
}

// setTaskARN records the ARN of the task of a job that is RUNNING at the
// attempt read and has none; anything else changes nothing.
func (s *Store) setTaskARN(ctx context.Context, j jobItem, arn string) error {
	// Guard: only the running attempt read, and only an ARN not yet
	// recorded: a late record of an attempt since retried, or ended, writes
	// nothing. Without it TestALaunchRecordAfterItsStartKeepsTheARN fails
	// (make mutate: launch-record-arn).
	cond := name("state").Equal(value(job.Running)).And(name("attempt").Equal(value(j.Attempt))).And(name("task_arn").AttributeNotExists())
	it, err := updateItem(s.tables.State, key(j.PK, skJob), expression.Set(name("task_arn"), value(arn)), cond)
	if err != nil {
		return err
	}
	_, err = s.writeOne(ctx, it.Update)
	return err
}

// setLaunched is CLAIMED → LAUNCHED: no counter moves, so a single
// conditional update does.
func (s *Store) setLaunched(ctx context.Context, j jobItem, arn string, now time.Time) (bool, error) {
	u := expression.Set(name("state"), value(job.Launched)).Set(name("launched_at"), value(stamp(now)))
	if arn != "" {
		u = u.Set(name("task_arn"), value(arn))
	}
	// Guard: the job read CLAIMED is still CLAIMED at that attempt: a task
	// that started between the read and this write stays RUNNING. Without it
	// TestLateLaunchResultsChangeNothing fails (make mutate: launch-record-single).
	cond := name("state").Equal(value(job.Claimed)).And(name("attempt").Equal(value(j.Attempt)))
	e, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return false, err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.State), Key: key(j.PK, skJob),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if isConditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// TaskStarted marks a job's task running. A repeated or stale event (another
// attempt, a job already past RUNNING) changes nothing.
func (s *Store) TaskStarted(ctx context.Context, jobID string, attempt int, now time.Time) error {
	for try := 0; ; try++ {
		j, ok, err := s.readJob(ctx, jobID)
		if err != nil {
			return fmt.Errorf("task started for %s: %w", jobID, err)
		}
		if !ok {
			return fmt.Errorf("task started for %s: %w", jobID, job.ErrUnknownJob)
		}
		c, ok := job.Apply(j.current(), job.Event{Kind: job.Start, Attempt: attempt})
		if !ok {
			return nil
		}
		applied, err := s.persist(ctx, j, c, nil, now)
		if err != nil {
			return fmt.Errorf("task started for %s: %w", jobID, err)
		}
		if applied {
			return nil
		}
		if try >= maxRereads {
			return fmt.Errorf("task started for %s: job keeps changing; gave up after %d reads", jobID, try+1)
		}
		if err := jitter(ctx, time.Duration(try+1)*10*time.Millisecond); err != nil {
			return err
		}
	}
}

// TaskStopped ends a job's attempt as job.Apply judges it: exit 0
// succeeds, an infrastructure stop retries while attempts remain, a yield
// waits again with one more max attempt (written with its state and
// attempt: the attempt is not spent), a provider failure (exit 75) retries
// while attempts remain (counted in the queue's provider_retries), any
// other exit fails. Outcomes feed the model's breaker. Repeated or stale
// events change nothing.
func (s *Store) TaskStopped(ctx context.Context, jobID string, attempt int, exit job.Exit, now time.Time) error {
	for try := 0; ; try++ {
		j, ok, err := s.readJob(ctx, jobID)
		if err != nil {
			return fmt.Errorf("task stopped for %s: %w", jobID, err)
		}
		if !ok {
			return fmt.Errorf("task stopped for %s: %w", jobID, job.ErrUnknownJob)
		}
		c, ok := job.Apply(j.current(), job.Event{Kind: job.Stop, Attempt: attempt, Exit: exit})
		if !ok {
			return nil
		}
		applied, err := s.persist(ctx, j, c, &exit, now)
		if err != nil {
			return fmt.Errorf("task stopped for %s: %w", jobID, err)
		}
		if applied {
			return nil
		}
		if try >= maxRereads {
			return fmt.Errorf("task stopped for %s: job keeps changing; gave up after %d reads", jobID, try+1)
		}
		if err := jitter(ctx, time.Duration(try+1)*10*time.Millisecond); err != nil {
			return err
		}
	}
}

// current is what job.Apply reads of a job.
func (j jobItem) current() job.Current {
	return job.Current{State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts}
}

// persist writes a job.Apply change (apply). A retry refused because the
// job's sampled batch stopped meanwhile ends SKIPPED instead, with the
// stop's reason and at the attempt that ran, as the jobs waiting at the
// stop did (memstore does the same).
func (s *Store) persist(ctx context.Context, j jobItem, c job.Change, exit *job.Exit, now time.Time) (bool, error) {
	applied, err := s.apply(ctx, j, c, exit, now)
	if c.To != job.Waiting || !errors.Is(err, errStopped) {
		return applied, err
	}
	stop, err := s.stopReason(ctx, j.batchID())
	if err != nil {
		return false, err
	}
	return s.apply(ctx, j, job.SkipRetry(j.current(), c, stop), exit, now)
}

// outcomeAttr is the queue item's count of the jobs that ended so.
var outcomeAttr = map[job.State]string{job.Succeeded: "succeeded", job.Failed: "failed", job.Cancelled: "cancelled", job.Skipped: "skipped"}

// apply writes a job.Apply change of a job out of CLAIMED, LAUNCHED or
// RUNNING in one transaction with the counts it moves: the model's
// outcomes, the queue's counts by state;
// a retry (or a yield, which also raises the job's max_attempts) also
// re-queues the job (queue counters and a back item). exit is
// written when the change records it. It reports false, writing nothing,
// when the job was not as read.
func (s *Store) apply(ctx context.Context, j jobItem, c job.Change, exit *job.Exit, now time.Time) (bool, error) {
	var items []types.TransactWriteItem
	add := func(it types.TransactWriteItem, err error) error {
		items = append(items, it)
		return err
	}

	// 1. The job itself, conditioned on the state and attempt read.
	u := expression.Set(name("state"), value(c.To))
	switch {
	case c.To == job.Running:
		u = u.Set(name("started_at"), value(stamp(now)))
	case c.To == job.Waiting:
		u = u.Set(name("attempt"), value(c.Attempt)).Remove(name(attrInflight)).
			Remove(name("task_arn")).Remove(name("claimed_at")).Remove(name("launched_at")).Remove(name("started_at"))
		if c.MaxAttempts != 0 { // a yield: the attempt it took is not spent
			u = u.Set(name("max_attempts"), value(c.MaxAttempts))
		}
	case c.To.Ended(): // SUCCEEDED, FAILED, CANCELLED, SKIPPED (a retry after its batch's stop)
		u = s.expiry(u.Set(name("ended_at"), value(stamp(now))).Remove(name(attrInflight)), now)
	}
	if c.Reason != "" {
		u = u.Set(name("reason"), value(c.Reason))
	}
	if c.Exit && exit != nil {
		u = u.Set(name("exit_code"), value(exit.Code)).
			Set(name("provider_error"), value(exit.ProviderError)).
			Set(name("infrastructure"), value(exit.Infrastructure))
		if exit.Reason != "" {
			u = u.Set(name("exit_reason"), value(exit.Reason))
		}
	}
	// Guard: the transition applies to the job as read, once: of two
	// deliveries of an event, the second finds it moved on, and the counters
	// move once. Without it TestRacingStopEventsEndAJobOnce fails (make mutate:
	// event-job).
	cond := name("state").Equal(value(j.State)).And(name("attempt").Equal(value(j.Attempt)))
	if err := add(updateItem(s.tables.State, key(j.PK, skJob), u, cond)); err != nil {
		return false, err
	}

	// 2. The outcome, for the model's breaker. The slot the job held or
	// takes is not counted here: Snapshot counts a model's starting and
	// running jobs from the inflight index, which this write moves.
	var cu expression.UpdateBuilder
	if c.OK != 0 {
		cu = cu.Add(name("ok_total"), value(int64(c.OK)))
	}
	if c.ProviderFailed != 0 {
		cu = cu.Add(name("pf_total"), value(int64(c.ProviderFailed)))
	}
	if c.OK != 0 || c.ProviderFailed != 0 {
		if err := add(updateItem(s.tables.State, key(countersPK(j.Model), skCounters), cu, expression.ConditionBuilder{})); err != nil {
			return false, err
		}
	}

	// 3. The queue's counts of its jobs by state (Batches reads them): the
	// outcomes; back to waiting, before newer jobs of its queue. Its
	// running jobs are counted from the inflight index when asked, so a
	// start writes the job alone.
	var qu expression.UpdateBuilder
	switch c.To {
	case job.Succeeded, job.Failed, job.Cancelled, job.Skipped:
		qu = qu.Add(name(outcomeAttr[c.To]), value(1))
	case job.Waiting:
		qu = qu.Add(name("waiting"), value(c.Waiting)).Set(name(attrActive), value(activeKey(j.Model)))
		if c.ProviderRetry { // make mutate: provider-retry-counted
			qu = qu.Add(name("provider_retries"), value(1))
		}
		if j.Stratum == "" { // a sampled batch's job waits in its stratum, not as a back item
			qu = qu.Add(name("backs"), value(c.Backs))
		}
	}
	// Guard: the counts go to the queue's item, never to a new partial one
	// (a queue item deleted by hand). Without it
	// TestEventOfAJobWithoutAQueueCreatesNone fails (make mutate:
	// event-queue-exists).
	if c.To == job.Waiting || c.To.Ended() {
		if err := add(updateItem(s.tables.State, key(j.Queue, skQueue), qu, name(attrPK).AttributeExists())); err != nil {
			return false, err
		}
	}
	stopCheck := -1 // the index of the stop mark's check, if any
	switch {
	case c.To == job.Waiting && j.Stratum != "":
		// A sampled batch's job goes back in its stratum's rank order and
		// is no longer released (release.go) — unless the batch stopped.
		// Guard: a job of a sampled batch waits again only while its batch
		// has no stop mark; the stop writes its mark before it reads the
		// waiting jobs to skip, so a retry either waits before that read
		// (and is skipped) or is refused here (and skipped by retry).
		// Without it TestRetryRacingTheStopIsSkipped fails (make mutate:
		// sampled-retry-stopped).
		notStopped := name(attrStopReason).AttributeNotExists()
		stopCheck = len(items)
		if err := add(conditionCheck(s.tables.State, key(sampledPK(j.batchID()), skParams), notStopped)); err != nil {
			return false, err
		}
		w, err := attributevalue.MarshalMap(waitOf(j, c.Attempt))
		if err != nil {
			return false, err
		}
		items = append(items, putItem(s.tables.State, w))
		if err := add(updateItem(s.tables.State, key(sampledPK(j.batchID()), stratumPrefix+j.Stratum),
			expression.Add(name(attrReleased), value(-1)), expression.ConditionBuilder{})); err != nil {
			return false, err
		}
	case c.To == job.Skipped:
		// A retry after the stop: released no more, as a waiting job.
		if err := add(updateItem(s.tables.State, key(sampledPK(j.batchID()), stratumPrefix+j.Stratum),
			expression.Add(name(attrReleased), value(-1)), expression.ConditionBuilder{})); err != nil {
			return false, err
		}
	case c.To == job.Waiting:
		back, err := attributevalue.MarshalMap(backItem{PK: j.Queue, SK: backSK(j.Pos), ID: j.ID, Pos: j.Pos, Attempt: c.Attempt})
		if err != nil {
			return false, err
		}
		items = append(items, putItem(s.tables.State, back))
	}

	// A released job of a sampled batch that ends without success (failed
	// after its attempts, cancelled, skipped) is done in the release log,
	// unmeasured unless its verdict is in (sequence.go): the prefix passes
	// over it and never counts it as measured. A verdict that comes after
	// still wins until the prefix passes it. A SUCCEEDED job is not marked
	// none: its verdict travels the results queue apart from the task's
	// end and often comes after it, and marking the place first would
	// throw the verdict away (TestLocalRunsASubmittedBatch counted 19 of
	// 150 so). Its end is logged instead: the prefix waits for its verdict
	// for the result grace from then, and passes it over after
	// (sequence.go, logEntry.done), so a sandbox that never reports holds
	// the batch for minutes, not for ever.
	placed := j.Stratum != "" && j.ReleasePos != nil
	unmeasured := (c.To == job.Failed || c.To == job.Cancelled || c.To == job.Skipped) && placed
	switch {
	case unmeasured:
		if err := add(s.logOutcome(j.batchID(), j.Stratum, *j.ReleasePos, outcomeNone)); err != nil {
			return false, err
		}
	case c.To == job.Succeeded && placed:
		if err := add(s.logEnded(j.batchID(), j.Stratum, *j.ReleasePos, now)); err != nil {
			return false, err
		}
	}

	if len(items) == 1 {
		// A start moves the job alone: one conditional write, half the
		// units of a transaction of one.
		return s.writeOne(ctx, items[0].Update)
	}
	err := s.transact(ctx, items, token())
	if reasons := cancelReasons(err); reasons != nil {
		if stopCheck >= 0 && stopCheck < len(reasons) && reasons[stopCheck] == "ConditionalCheckFailed" {
			return false, errStopped
		}
		return false, nil
	}
	if err == nil && unmeasured {
		if err := s.stopIfDone(ctx, j, now); err != nil {
			return true, fmt.Errorf("%s ended: stop rule: %w", j.ID, err)
		}
	}
	return err == nil, err
}

// errStopped is apply's answer to a retry of a job whose sampled batch
// has stopped: nothing was written.
var errStopped = errors.New("the sampled batch has stopped")
