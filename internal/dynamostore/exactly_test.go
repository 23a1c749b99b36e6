package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// The tests below each guard one condition of the store's writes: without
// it the test fails (make mutate removes each and runs them). They race
// the store's own writers deterministically: a counter's before hook lets
// another writer act between a read and the write that depends on it.

// once returns a hook that runs f the first time op is called.
func once(op string, f func()) func(string, any) {
	var o sync.Once
	return func(got string, _ any) {
		if got == op {
			o.Do(f)
		}
	}
}

// beforeClaimOf returns a hook that runs f once, before the first
// transaction that writes an item of partition pk: the claim (or event)
// of that job, not the model states' transaction before it.
func beforeClaimOf(pk string, f func()) func(string, any) {
	return beforeUpdate(func(u *types.Update) bool { return text(u.Key[attrPK]) == pk }, f)
}

// beforeUpdate returns a hook that runs f once, before the first
// transaction holding an update that match accepts.
func beforeUpdate(match func(*types.Update) bool, f func()) func(string, any) {
	var o sync.Once
	return func(op string, in any) {
		tx, ok := in.(*dynamodb.TransactWriteItemsInput)
		if op != "TransactWriteItems" || !ok {
			return
		}
		for _, it := range tx.TransactItems {
			if it.Update != nil && match(it.Update) {
				o.Do(f)
				return
			}
		}
	}
}

// otherWriter is a second Store on the same tables, as another pass or
// function invocation would be, with no hook of its own.
func otherWriter(s *Store) *Store { return New(client, s.tables, defaults()) }

// settle commits a plan that claims nothing, so every model has a stored
// state: a later plan that leaves the states as they are writes none, and
// two passes from one Snapshot both get past the version check to their
// claims (as passes whose limits hold do).
func settle(t testing.TB, s *Store) {
	t.Helper()
	snap := snapshot(t, s)
	commitRead(t, s, planFromSnapshot(t0, snap, 0), snap.Versions)
}

// TestBatchedClaimsFromOneSnapshot: two passes read the same Snapshot and
// commit plans that leave the model states alone (so the version check
// lets both through): both reach the batched claim with the same cursors,
// and the first writes its claims just after the second read the jobs
// (all WAITING). The second's transaction is refused (the cursors moved,
// the jobs are no longer WAITING) and it claims the next jobs the slow
// way: no job is claimed twice, each pass gets its grants, oldest first.
func TestBatchedClaimsFromOneSnapshot(t *testing.T) {
	b, c := newStore(t)
	a := otherWriter(b)
	var batches []job.BatchSpec
	for i := range 6 {
		batches = append(batches, batch("lab", "p", fmt.Sprintf("b%d", i), fmt.Sprintf("m%d", i%3), -1, 5))
		submit(t, b, batches[i])
	}
	settle(t, b)
	snapA, snapB := snapshot(t, a), snapshot(t, b)
	planA, planB := planFromSnapshot(t0, snapA, 2), planFromSnapshot(t0, snapB, 2)
	var gotA []scheduler.Job
	first := job.JobID("lab", "p", "b0", batches[0].Jobs[0].Key)
	c.before = beforeClaimOf(jobPK(first), func() {
		committed, err := a.Commit(context.Background(), planA, snapA.Versions)
		if err != nil || len(committed.Stale) > 0 {
			t.Error(err, committed.Stale) // not Fatal: the hook runs on the store's goroutine
		}
		gotA = committed.Claimed
	})
	gotB := commitRead(t, b, planB, snapB.Versions)
	c.before = nil

	if len(gotA) != 12 || len(gotB) != 12 {
		t.Fatalf("claimed %d and %d, want 12 each (2 of each of 6 queues)", len(gotA), len(gotB))
	}
	seen := map[string]int{}
	for _, j := range slices.Concat(gotA, gotB) {
		if seen[j.ID]++; seen[j.ID] > 1 {
			t.Errorf("job %s claimed twice", j.ID)
		}
	}
	for _, j := range gotA {
		if j.Key[len(j.Key)-1] > '1' {
			t.Errorf("first pass claimed %s, want each queue's two oldest", j.Key)
		}
	}
	for _, j := range gotB {
		if k := j.Key[len(j.Key)-1]; k < '2' || k > '3' {
			t.Errorf("second pass claimed %s, want each queue's next two", j.Key)
		}
	}
	check(t, a)
}

// TestBatchedClaimFromAStaleSnapshotKeepsTheCursor: a pass's Snapshot saw
// a queue of 3; the batch then grew to 5 and another pass claimed all 5.
// The stale pass finds its 3 positions claimed and must not write its
// cursor (3) over the other's (5): jobs past the cursor would be claimed.
func TestBatchedClaimFromAStaleSnapshotKeepsTheCursor(t *testing.T) {
	ctx := context.Background()
	stale, _ := newStore(t)
	fresh := otherWriter(stale)
	b := batch("lab", "p", "b", "m", -1, 5)
	first := b
	first.Jobs = b.Jobs[:3]
	submit(t, stale, first)
	settle(t, stale)
	staleSnap := snapshot(t, stale)
	plan := planFromSnapshot(t0, staleSnap, 3)
	if n, err := fresh.Submit(ctx, b, t0); n != 2 || err != nil {
		t.Fatalf("the batch's second message: %d created, %v; want 2", n, err)
	}
	freshSnap := snapshot(t, fresh)
	if got := commitRead(t, fresh, planFromSnapshot(t0, freshSnap, 5), freshSnap.Versions); len(got) != 5 {
		t.Fatalf("fresh pass claimed %d, want 5", len(got))
	}
	if got := commitRead(t, stale, plan, staleSnap.Versions); len(got) != 0 {
		t.Errorf("stale pass claimed %v, want nothing (all 5 are claimed)", keys(got))
	}
	if q := dump(t, stale).queues[batchQueue(b)]; q.Next != 5 {
		t.Errorf("cursor at %d, want 5", q.Next)
	}
	check(t, stale)
}

// batchQueue is the key of a one-model batch's queue item.
func batchQueue(b job.BatchSpec) string {
	return queuePK(scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model})
}

// cancelByHand takes job id out of WAITING the way a writer that does not
// move the queue's cursor would (an operator's console edit, a tool of
// another release): the job and the queue's counts, nothing else.
func cancelByHand(t testing.TB, s *Store, b job.BatchSpec, i int) {
	t.Helper()
	id := job.JobID(b.Account, b.Project, b.Batch, b.Jobs[i].Key)
	qpk := batchQueue(b)
	_, err := client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(s.tables.State), Key: key(jobPK(id), skJob),
			UpdateExpression:          aws.String("SET #s = :c"),
			ExpressionAttributeNames:  map[string]string{"#s": "state"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: string(job.Cancelled)}}}},
		{Update: &types.Update{TableName: aws.String(s.tables.State), Key: key(qpk, skQueue),
			UpdateExpression:          aws.String("ADD waiting :m, cancelled :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":m": number(-1), ":p": number(1)}}},
	}})
	if err != nil {
		t.Error(err) // not Fatal: called from a hook, on the store's goroutine
	}
}

// TestClaimSkipsAJobThatLeftWaitingAfterItWasRead: between a claim's read
// of the jobs and its transaction, job 0 is cancelled by a writer that
// leaves the cursor alone. The job's own condition (WAITING, attempt) is
// all that stops the claim: on the batched path (a Snapshot's plan) and
// on the slow path (a plan without one), job 0 stays CANCELLED and the
// claim takes jobs 1 and 2.
func TestClaimSkipsAJobThatLeftWaitingAfterItWasRead(t *testing.T) {
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			s, c := newStore(t)
			b := batch("lab", "p", "b", "m", -1, 5)
			submit(t, s, b)
			plan, read := grant(t0, b, 2), scheduler.Versions(nil)
			if batched {
				snap := snapshot(t, s)
				plan, read = planFromSnapshot(t0, snap, 2), snap.Versions
			}
			id := job.JobID(b.Account, b.Project, b.Batch, b.Jobs[0].Key)
			c.before = beforeClaimOf(jobPK(id), func() { cancelByHand(t, s, b, 0) })
			got := commitRead(t, s, plan, read)
			c.before = nil
			if want := []string{b.Jobs[1].Key, b.Jobs[2].Key}; !slices.Equal(keys(got), want) {
				t.Errorf("claimed %v, want %v", keys(got), want)
			}
			if j := jobAt(t, s, b, 0); j.State != job.Cancelled {
				t.Errorf("job 0 is %s, want CANCELLED as the other writer left it", j.State)
			}
			check(t, s)
		})
	}
}

// TestSlowClaimDoesNotWriteAStaleCursor: a slow-path claim of one job
// reads the queue (cursor 0), then, before it reads the job at 0, another
// pass claims all five and job 1's launch fails (back to waiting, attempt
// 2, a back item). The claim finds job 0 claimed; its write of the cursor
// (to 1), conditioned on the cursor it read, is refused, and it claims job
// 1 from the back item, with the cursor left at 5.
func TestSlowClaimDoesNotWriteAStaleCursor(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := batch("lab", "p", "b", "m", -1, 5)
	submit(t, s, b)
	c.before = once("BatchGetItem", func() {
		committed, err := other.Commit(ctx, grant(t0, b, 5), nil)
		all := committed.Claimed
		if err == nil && len(all) == 5 {
			err = other.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: all[1].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"}})
		}
		if err != nil || len(all) != 5 {
			t.Errorf("the other pass: %d claimed, %v; want 5", len(all), err)
		}
	})
	got := commit(t, s, grant(t0, b, 1))
	c.before = nil
	if len(got) != 1 || got[0].Key != b.Jobs[1].Key || got[0].Attempt != 2 {
		t.Errorf("claimed %+v, want job 1's attempt 2 alone", got)
	}
	check(t, s)
}

// TestRacingStopEventsEndAJobOnce: two deliveries of one STOPPED event
// read the job RUNNING; the first ends it, the second's transaction —
// conditioned on the state and attempt it read — is refused, and re-read,
// the job has moved on: it is counted once (running, outcomes).
func TestRacingStopEventsEndAJobOnce(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := batch("lab", "p", "b", "m", -1, 1)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 1))
	launchAll(t, s, jobs)
	if err := s.TaskStarted(ctx, jobs[0].ID, 1, t0); err != nil {
		t.Fatal(err)
	}
	c.before = once("TransactWriteItems", func() {
		if err := other.TaskStopped(ctx, jobs[0].ID, 1, job.Exit{Code: 0}, t0.Add(time.Minute)); err != nil {
			t.Error(err)
		}
	})
	if err := s.TaskStopped(ctx, jobs[0].ID, 1, job.Exit{Code: 0}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	c.before = nil
	if m := modelOf(t, snapshot(t, s), "m"); m.Running != 0 || m.Outcomes.OK != 1 {
		t.Errorf("model running %d, ok outcomes %d; want 0 and 1", m.Running, m.Outcomes.OK)
	}
	check(t, s)
}

// TestLateLaunchResultsChangeNothing: a launch result that arrives after
// the job moved on — repeated after its task started, or for an attempt
// since retried — leaves the job as it is, on the batched path
// (setLaunchedAll's condition) and on the single path, where the job
// starts between the read and the write (setLaunched's condition).
func TestLateLaunchResultsChangeNothing(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := batch("lab", "p", "b", "m", -1, 3)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 3))
	launched := func(j scheduler.Job) scheduler.LaunchResult {
		return scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: "arn:task/" + j.ID}
	}
	// Job 0 runs; job 1's attempt 1 is retried and waits as attempt 2.
	launchAll(t, s, jobs[:1])
	if err := s.TaskStarted(ctx, jobs[0].ID, 1, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{{JobID: jobs[1].ID, Attempt: 1, Status: scheduler.Retry, Reason: "capacity"}}); err != nil {
		t.Fatal(err)
	}
	// Late: job 0's result again, job 1's attempt 1 launched after all.
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{launched(jobs[0]), launched(jobs[1])}); err != nil {
		t.Fatal(err)
	}
	if j := jobAt(t, s, b, 0); j.State != job.Running {
		t.Errorf("job 0 is %s after a repeated launch result, want RUNNING", j.State)
	}
	if j := jobAt(t, s, b, 1); j.State != job.Waiting || j.Attempt != 2 {
		t.Errorf("job 1 is %s attempt %d after attempt 1's late result, want WAITING attempt 2", j.State, j.Attempt)
	}
	check(t, s)

	// Job 2's record fails (a lost connection) and goes the single way;
	// its task starts between that path's read and its write.
	var o sync.Once
	writes := 0
	c.before = func(op string, in any) {
		u, ok := in.(*dynamodb.UpdateItemInput)
		if !ok || text(u.Key[attrPK]) != jobPK(jobs[2].ID) {
			return
		}
		c.mu.Lock()
		writes++
		if writes == 1 { // the record without a read: it fails before it lands
			c.failAt, c.failAfter, c.failOnce = c.calls+1, false, true
		}
		c.mu.Unlock()
		if writes == 2 { // the single path's, after its read
			o.Do(func() {
				if err := other.TaskStarted(ctx, jobs[2].ID, 1, t0); err != nil {
					t.Error(err)
				}
			})
		}
	}
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{launched(jobs[0]), launched(jobs[2])}); err != nil {
		t.Fatal(err)
	}
	c.before = nil
	if j := jobAt(t, s, b, 2); j.State != job.Running {
		t.Errorf("job 2 is %s, want RUNNING: its task started before the launch was recorded", j.State)
	}
	check(t, s)
}

// TestBatchedClaimTakesARetriedJobFirst: after a Snapshot, a running job's
// task is interrupted and the job waits again as attempt 2, before the
// queue's cursor. The batched claim, conditioned on the queue having no
// retried job, is refused, and the claim one queue at a time takes the
// retried job first (oldest first), not the job at the cursor.
func TestBatchedClaimTakesARetriedJobFirst(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "p", "b", "m", -1, 5)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 2))
	launchAll(t, s, jobs)
	settle(t, s)
	snap := snapshot(t, s)
	plan := planFromSnapshot(t0, snap, 1)
	if err := s.TaskStopped(ctx, jobs[0].ID, 1, job.Exit{Infrastructure: true, Reason: "SpotInterruption"}, t0); err != nil {
		t.Fatal(err)
	}
	got := commitRead(t, s, plan, snap.Versions)
	if len(got) != 1 || got[0].ID != jobs[0].ID || got[0].Attempt != 2 {
		t.Errorf("claimed %+v, want job 0's attempt 2 (retried jobs first)", got)
	}
	check(t, s)
}

// TestClaimKeepsAQueueThatGrewActive: a claim that takes every job its
// read saw removes the queue from the active index only if no job was
// registered since (a later message of the batch): conditioned on the
// waiting count read, the batched claim (from a Snapshot) and the claim
// one queue at a time (the message registered between its read and its
// write) are refused, and the queue, with 2 jobs still waiting, stays
// where Snapshot finds it.
func TestClaimKeepsAQueueThatGrewActive(t *testing.T) {
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			ctx := context.Background()
			s, c := newStore(t)
			other := otherWriter(s)
			b := batch("lab", "p", "b", "m", -1, 5)
			first := b
			first.Jobs = b.Jobs[:3]
			submit(t, s, first)
			grow := func() {
				if n, err := other.Submit(ctx, b, t0); n != 2 || err != nil {
					t.Errorf("the batch's second message: %d created, %v; want 2", n, err)
				}
			}
			plan, read := grant(t0, b, 3), scheduler.Versions(nil)
			if batched {
				settle(t, s)
				snap := snapshot(t, s)
				plan, read = planFromSnapshot(t0, snap, 3), snap.Versions
				grow()
			} else {
				c.before = beforeClaimOf(jobPK(job.JobID("lab", "p", "b", b.Jobs[0].Key)), grow)
			}
			got := commitRead(t, s, plan, read)
			c.before = nil
			if len(got) != 3 {
				t.Errorf("claimed %d, want 3", len(got))
			}
			snap := snapshot(t, s)
			if len(snap.Queues) != 1 || snap.Queues[0].Waiting != 2 {
				t.Errorf("active queues %+v, want the batch's with 2 waiting", snap.Queues)
			}
			check(t, s)
		})
	}
}

// TestSubmitThatLostItsLockRegistersNothing: a Submit stalls after writing
// its jobs, past its lock's time; another delivery of the batch takes the
// lock and registers its message. The stalled Submit's registration,
// conditioned on the queue's size it read and on still owning the lock,
// is refused (ErrBusy, for SQS to deliver it again) instead of writing
// its jobs over positions the other registered; delivered again, it
// registers after them.
func TestSubmitThatLostItsLockRegistersNothing(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := batch("lab", "p", "b", "m", -1, 4)
	mine, theirs := b, b
	mine.Jobs, theirs.Jobs = b.Jobs[:2], b.Jobs[2:]
	c.before = once("TransactWriteItems", func() {
		if n, err := other.Submit(ctx, theirs, t0.Add(s.LockTTL+time.Minute)); n != 2 || err != nil {
			t.Errorf("the other delivery: %d created, %v; want 2", n, err)
		}
	})
	_, err := s.Submit(ctx, mine, t0)
	c.before = nil
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("the stalled Submit: %v, want ErrBusy (its lock was lost)", err)
	}
	if n, err := s.Submit(ctx, mine, t0.Add(2*s.LockTTL)); n != 2 || err != nil {
		t.Fatalf("delivered again: %d created, %v; want 2", n, err)
	}
	if snap := snapshot(t, s); len(snap.Queues) != 1 || snap.Queues[0].Waiting != 4 {
		t.Errorf("queues %+v, want one with 4 waiting", snap.Queues)
	}
	check(t, s)
}

// TestSubmitGivesUpOnlyItsOwnLock: a Submit that finds its lock taken by
// another (it stalled past its time) fails with ErrBusy and leaves the
// other's lock in place: releasing it would let a third Submit run beside
// the other.
func TestSubmitGivesUpOnlyItsOwnLock(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	b := batch("lab", "p", "b", "m", -1, 2)
	bpk := batchPK(b.Account, b.Project, b.Batch)
	c.before = once("TransactWriteItems", func() {
		// Another Submit holds the lock now.
		_, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.tables.State), Key: key(bpk, skBatch),
			UpdateExpression:          aws.String("SET lock_owner = :o, lock_until = :u"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: "other"}, ":u": number(t0.Add(time.Hour).UnixMilli())},
		})
		if err != nil {
			t.Error(err)
		}
	})
	_, err := s.Submit(ctx, b, t0)
	c.before = nil
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("got %v, want ErrBusy (the lock was taken)", err)
	}
	res, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.State), Key: key(bpk, skBatch), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if owner := text(res.Item["lock_owner"]); owner != "other" {
		t.Errorf("lock owner %q after the failed Submit, want the other's lock kept", owner)
	}
}

// TestEventOfAJobWithoutAQueueCreatesNone: a job whose queue item is gone
// (deleted by hand): its STOPPED event fails rather than write its counts
// into a new, partial queue item that Snapshot and Batches would read.
func TestEventOfAJobWithoutAQueueCreatesNone(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "p", "b", "m", -1, 1)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 1))
	qpk := batchQueue(b)
	if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.tables.State), Key: key(qpk, skQueue)}); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, jobs[0].ID, 1, job.Exit{Code: 0}, t0); err == nil {
		t.Error("the event of a job without a queue item gave no error")
	}
	if q, ok := dump(t, s).queues[qpk]; ok {
		t.Errorf("a queue item was created: %+v", q)
	}
}

// TestStaleBackItemIsTakenOnce: a back item whose job is not waiting (left
// by a crash of an older release) is deleted by the claim that meets it,
// without a claim. Two claims read it (nothing else waits, so neither
// moves the cursor); the first deletes it; the second's delete,
// conditioned on the item still there, is refused and it reads again —
// the queue's count of back items is taken down once.
func TestStaleBackItemIsTakenOnce(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := batch("lab", "p", "b", "m", -1, 1)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 1))
	qpk := batchQueue(b)
	stale, err := attributevalue.MarshalMap(backItem{PK: qpk, SK: backSK(0), ID: jobs[0].ID, Pos: 0, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.tables.State), Item: stale}},
		{Update: &types.Update{TableName: aws.String(s.tables.State), Key: key(qpk, skQueue),
			UpdateExpression: aws.String("ADD backs :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": number(1)}}},
	}}); err != nil {
		t.Fatal(err)
	}
	c.before = beforeClaimOf(qpk, func() {
		if _, err := other.Commit(ctx, grant(t0, b, 1), nil); err != nil {
			t.Error(err)
		}
	})
	got := commit(t, s, grant(t0, b, 1))
	c.before = nil
	if len(got) != 0 {
		t.Errorf("claimed %d, want none (the only job is claimed)", len(got))
	}
	check(t, s)
}

// TestALaunchRecordAfterItsStartKeepsTheARN: a task that reports RUNNING
// before its launch is recorded leaves the job RUNNING without a task ARN;
// the record then gives it the ARN (else cancel --stop-running and the
// reconciler could never stop that task) and nothing else. A record that
// comes after the attempt was retried, between the record's read and its
// write, writes nothing.
func TestALaunchRecordAfterItsStartKeepsTheARN(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := batch("lab", "p", "b", "m", -1, 2)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 2))
	for _, j := range jobs {
		if err := s.TaskStarted(ctx, j.ID, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	arn := func(j scheduler.Job) scheduler.LaunchResult {
		return scheduler.LaunchResult{JobID: j.ID, Attempt: 1, Status: scheduler.Launched, TaskARN: "arn:task/" + j.ID}
	}
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{arn(jobs[0])}); err != nil {
		t.Fatal(err)
	}
	if j := jobAt(t, s, b, 0); j.State != job.Running || j.TaskARN != "arn:task/"+jobs[0].ID {
		t.Errorf("job 0: %s with ARN %q, want RUNNING with its task's", j.State, j.TaskARN)
	}
	// Job 1's task is interrupted (attempt 2 waits) between the record's
	// read of the job and its write.
	var o sync.Once
	c.before = func(op string, in any) {
		u, ok := in.(*dynamodb.UpdateItemInput)
		if ok && text(u.Key[attrPK]) == jobPK(jobs[1].ID) && !slices.Contains(slices.Collect(maps.Values(u.ExpressionAttributeNames)), "launched_at") {
			o.Do(func() {
				if err := other.TaskStopped(ctx, jobs[1].ID, 1, job.Exit{Infrastructure: true, Reason: "SpotInterruption"}, t0); err != nil {
					t.Error(err)
				}
			})
		}
	}
	if err := s.RecordLaunches(ctx, t0, []scheduler.LaunchResult{arn(jobs[1])}); err != nil {
		t.Fatal(err)
	}
	c.before = nil
	if j := jobAt(t, s, b, 1); j.State != job.Waiting || j.Attempt != 2 || j.TaskARN != "" {
		t.Errorf("job 1: %s attempt %d with ARN %q, want WAITING attempt 2 without an ARN", j.State, j.Attempt, j.TaskARN)
	}
	check(t, s)
}
