package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Errors of Submit. ErrConflict and ErrInvalid are the message's fault (to
// the dead-letter queue with the reason); ErrBusy is transient (let SQS
// redeliver). A conflict is a *job.ConflictError, the same as the
// memory store's, naming each field.
var (
	ErrConflict = job.ErrConflict
	ErrBusy     = errors.New("batch is being submitted by another call")
	ErrInvalid  = errors.New("invalid batch")
)

// Submit adds a batch's jobs as waiting. It is idempotent: a job that exists
// with the same content is skipped. A message that disagrees with its
// stored batch — a job of the same key with another model or env, other
// terms (tier, task definition, timeout, max attempts, parts), another copy
// of a part already stored — is refused whole with a
// *job.ConflictError (wrapping ErrConflict) naming each field, before
// anything is written: the stored jobs and parts stay as they were.
//
//  1. lock      the batch item (one Submit per batch at a time); it holds
//     the batch's terms and part digests (conflict.go)
//  2. classify  the message's jobs: new, already there, or conflicting;
//     the stored jobs are read only when the batch has registered jobs
//  3. write     job items and the queue's order (chunk items) with
//     BatchWriteItem, 25 a call: invisible to the scheduler until
//  4. register  one transaction grows each queue's size and waiting count,
//     counts the batch's jobs and releases the lock
//
// A crash anywhere before 4 leaves only unregistered items, which the
// redelivered message overwrites; after 4 the redelivery finds every job
// registered and writes nothing but the lock.
func (s *Store) Submit(ctx context.Context, b job.BatchSpec, now time.Time) (created int, err error) {
	created, err = s.submit(ctx, b, now)
	if b.Sampling != nil && err == nil {
		if serr := s.registerSampling(ctx, b); serr != nil { // sampled.go
			return created, serr
		}
	}
	if b.Parts > 0 && err == nil {
		// The part arrived. Marked after the jobs are registered: a crash
		// in between leaves it unmarked until the redelivery, never marked
		// with jobs missing.
		if perr := s.markPart(ctx, b); perr != nil {
			return created, errors.Join(err, perr)
		}
	}
	return created, err
}

// markPart records a part of a multi-part batch on its batch item.
func (s *Store) markPart(ctx context.Context, b job.BatchSpec) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.State),
		Key:                       key(batchPK(b.Account, b.Project, b.Batch), skBatch),
		UpdateExpression:          aws.String("ADD parts_seen :p SET parts = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberNS{Value: []string{strconv.Itoa(b.Part)}}, ":n": &types.AttributeValueMemberN{Value: strconv.Itoa(b.Parts)}},
	})
	if err != nil {
		return fmt.Errorf("submit batch %s/%s/%s: record part %d of %d: %w", b.Account, b.Project, b.Batch, b.Part, b.Parts, err)
	}
	return nil
}

// submission is one Submit's work once the lock is held: the message, the
// jobs it adds (first occurrence of each key, not yet registered), grouped
// by model, and their models' queues.
type submission struct {
	b       job.BatchSpec
	owner   string // the lock's
	jobs    []newJob
	byModel map[string][]newJob
	models  []string // sorted
	queues  map[string]queueRef
}

// newJob is a job of the message that Submit adds.
type newJob struct {
	spec job.JobSpec
	id   string
	mdl  string
	i    int // in the message
}

// submit runs Submit's four steps (lock, classify, write, register; see
// Submit) for the message's jobs.
func (s *Store) submit(ctx context.Context, b job.BatchSpec, now time.Time) (created int, err error) {
	if err := validate(b); err != nil {
		return 0, err
	}
	bpk := batchPK(b.Account, b.Project, b.Batch)
	where := fmt.Sprintf("submit batch %s/%s/%s", b.Account, b.Project, b.Batch)

	// 1. Lock.
	owner := token()
	locked, err := s.lock(ctx, bpk, b, owner, now)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}
	released := false
	defer func() {
		if !released {
			s.unlock(context.WithoutCancel(ctx), bpk, owner)
		}
	}()

	// 2. Classify.
	jobs, err := s.classify(ctx, b, locked)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}
	if len(jobs) == 0 {
		return 0, nil
	}

	// 3. Write.
	sub := submission{b: b, owner: owner, jobs: jobs, byModel: map[string][]newJob{}}
	for _, j := range jobs {
		sub.byModel[j.mdl] = append(sub.byModel[j.mdl], j)
	}
	sub.models = slices.Sorted(maps.Keys(sub.byModel))
	if sub.queues, err = s.readQueues(ctx, b, sub.models); err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}
	if err := s.writeJobs(ctx, sub, now); err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}

	// 4. Register.
	if err := s.registerJobs(ctx, sub, bpk); err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}
	released = true
	return len(jobs), nil
}

// classify returns the message's jobs Submit adds: the first occurrence of
// each key, less those registered already (by an earlier delivery or
// another part). A key repeated in the message, a registered job of the
// same key, or terms other than the batch's stored ones (locked, the batch
// item as the lock found it) are conflicts: the message is refused whole
// with a *job.ConflictError naming each.
func (s *Store) classify(ctx context.Context, b job.BatchSpec, locked map[string]types.AttributeValue) ([]newJob, error) {
	var registered int64
	if av, ok := locked["jobs"].(*types.AttributeValueMemberN); ok {
		registered, _ = strconv.ParseInt(av.Value, 10, 64)
	}
	var (
		jobs      []newJob
		conflicts job.Conflicts
		first     = map[string]job.JobSpec{}
	)
	// Without this check TestSubmitRefusesConflicts fails (make mutate:
	// submit-terms).
	if terms, sum, ok := storedTerms(locked, b.Part); ok {
		conflicts.Terms(terms, sum, b)
	}
	for i, js := range b.Jobs {
		mdl := cmp.Or(js.Model, b.Model)
		if prev, dup := first[js.Key]; dup {
			conflicts.Job(b, i, cmp.Or(prev.Model, b.Model), prev.Env, prev.Stratum)
			continue
		}
		first[js.Key] = js
		jobs = append(jobs, newJob{spec: js, id: job.JobID(b.Account, b.Project, b.Batch, js.Key), mdl: mdl, i: i})
	}
	if registered > 0 {
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.id
		}
		old, err := s.readJobs(ctx, ids)
		if err != nil {
			return nil, err
		}
		isReg, err := s.registeredJobs(ctx, old)
		if err != nil {
			return nil, err
		}
		kept := jobs[:0]
		for _, j := range jobs {
			o, exists := old[j.id]
			switch {
			case !exists || !isReg[j.id]:
				kept = append(kept, j) // new, or left unregistered by a crashed Submit
			default:
				conflicts.Job(b, j.i, o.Model, o.Env, o.Stratum) // registered by another part (or this one): counted there
			}
		}
		jobs = kept
	}
	if err := conflicts.Err(b); err != nil {
		return nil, err
	}
	return jobs, nil
}

// writeJobs writes the job items and their queues' order (chunk items) with
// BatchWriteItem, and deletes a crashed Submit's chunks in the way. Nothing
// written is registered: the scheduler does not see it until registerJobs.
// A new queue gets its place in submission order here (sub.queues).
func (s *Store) writeJobs(ctx context.Context, sub submission, now time.Time) error {
	b := sub.b
	var reqs []types.WriteRequest
	put := func(v any) error {
		item, err := attributevalue.MarshalMap(v)
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		return err
	}
	submitAt := stamp(now)
	for _, mdl := range sub.models {
		q := sub.queues[mdl]
		if q.Seq == 0 {
			var err error
			if q.Seq, err = s.nextSeq(ctx); err != nil {
				return err
			}
			sub.queues[mdl] = q
		}
		// Chunks are aligned to chunkSize positions, so a claim knows the
		// key of the chunk of any position: a queue's last, partial chunk
		// is extended (its registered ids as they are; a reader of those
		// sees the same ids before and after).
		c := chunkItem{PK: q.PK, SK: chunkSK(q.Size), Start: q.Size}
		if q.Size%chunkSize != 0 {
			prev, err := s.chunkAt(ctx, q.PK, q.Size-1)
			if err != nil {
				return err
			}
			if prev.Start == q.Size/chunkSize*chunkSize { // else an unaligned chunk of an older release: start afresh
				c = chunkItem{PK: q.PK, SK: prev.SK, Start: prev.Start, IDs: slices.Clone(prev.IDs[:q.Size-prev.Start])}
			}
		}
		chunks := map[string]bool{}
		flush := func() error {
			chunks[c.SK] = true
			return put(c)
		}
		for _, j := range sub.byModel[mdl] {
			pos := c.Start + int64(len(c.IDs))
			if len(c.IDs) > 0 && pos%chunkSize == 0 {
				if err := flush(); err != nil {
					return err
				}
				c = chunkItem{PK: q.PK, SK: chunkSK(pos), Start: pos}
			}
			c.IDs = append(c.IDs, j.id)
			err := put(jobItem{
				PK: jobPK(j.id), SK: skJob, ID: j.id, Account: b.Account, Project: b.Project, Batch: b.Batch,
				Key: j.spec.Key, Model: mdl, Env: j.spec.Env, TaskDefinition: b.TaskDefinition,
				TimeoutSeconds: b.TimeoutSeconds, MaxAttempts: cmp.Or(b.MaxAttempts, 3), Attempt: 1,
				State: job.Waiting, Queue: q.PK, Pos: pos, SubmitAt: submitAt, Stratum: j.spec.Stratum,
			})
			if err != nil {
				return err
			}
		}
		if err := flush(); err != nil {
			return err
		}
		// Chunks at or past the size are a crashed Submit's: never
		// registered, and in the way of lookups once positions get there.
		stale, err := s.staleChunks(ctx, q)
		if err != nil {
			return err
		}
		for _, sk := range stale {
			if !chunks[sk] {
				reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(q.PK, sk)}})
			}
		}
	}
	if err := s.batchWrite(ctx, s.tables.State, reqs); err != nil {
		return fmt.Errorf("write jobs: %w", err)
	}
	return nil
}

// registerJobs makes the written jobs waiting: transactions grow each
// queue's size and waiting count (a new queue enters the catalog, a new
// model gets its items), carry a sampled batch's items, count the batch's
// jobs and release the lock, with the last of them.
func (s *Store) registerJobs(ctx context.Context, sub submission, bpk string) error {
	b, owner := sub.b, sub.owner
	var items []types.TransactWriteItem
	for _, mdl := range sub.models {
		q := sub.queues[mdl]
		n := int64(len(sub.byModel[mdl]))
		u := expression.Set(name("account"), value(b.Account)).Set(name("project"), value(b.Project)).
			Set(name("batch"), value(b.Batch)).Set(name(attrModel), value(mdl)).
			Set(name("tier"), expression.IfNotExists(name("tier"), value(b.Tier))).
			Set(name(attrSeq), expression.IfNotExists(name(attrSeq), value(q.Seq))).
			Set(name("next"), expression.IfNotExists(name("next"), value(0))).
			Set(name(attrActive), value(activeKey(mdl))).
			Add(name("size"), value(n)).Add(name("waiting"), value(n)).Add(name("backs"), value(0))
		if b.Sampling != nil {
			u = u.Set(name(attrSampledQ), value(true))
		}
		// Guard: the positions written are still the queue's next ones: a Submit
		// whose lock expired registers nothing over another's jobs. With the
		// release's lock condition (which covers it when the registration is one
		// transaction) also gone, TestSubmitThatLostItsLockRegistersNothing fails
		// (make mutate: submit-register-lock-lost).
		cond := name(attrPK).AttributeNotExists().Or(name("size").Equal(value(q.Size)))
		it, err := updateItem(s.tables.State, key(q.PK, skQueue), u, cond)
		if err != nil {
			return err
		}
		items = append(items, it)
		if q.new {
			more, err := s.newQueueItems(b, mdl, q)
			if err != nil {
				return err
			}
			items = append(items, more...)
		}
	}
	if b.Sampling != nil {
		// A sampled batch's parameters and the strata of the jobs this
		// registration registers, in its transaction: each job counts
		// once, in the registration that made it waiting (sampled.go).
		strata := map[string]int{}
		for _, j := range sub.jobs {
			strata[j.spec.Stratum]++
		}
		sampled, err := s.sampledItems(b, owner, strata)
		if err != nil {
			return err
		}
		items = append(items, sampled...)
	}
	// The release records the batch's terms (its first message's) and
	// this part's digest, which later messages are checked against.
	rel := expression.Add(name("jobs"), value(len(sub.jobs))).Remove(name("lock_owner")).Remove(name("lock_until")).
		Set(name(attrTerms), expression.IfNotExists(name(attrTerms), value(toTermsItem(b.Terms()))))
	if b.Parts > 0 {
		rel = rel.Add(name(attrPartSums), value(partSumValue(b)))
	}
	// Guard (lock_owner below): the lock is still ours; see the queue's size
	// condition above (make mutate: submit-register-lock-lost).
	release, err := updateItem(s.tables.State, key(bpk, skBatch), rel,
		name("lock_owner").Equal(value(owner)))
	if err != nil {
		return err
	}
	// The lock goes last, with the last queues: a crash between two
	// transactions leaves it held and the redelivery finds the first ones'
	// jobs registered. (A sampled batch runs one model: its queue, its
	// sampling items and the lock are one transaction.)
	for start := 0; start < len(items); start += transactMax - 1 {
		part := items[start:min(start+transactMax-1, len(items))]
		last := start+transactMax-1 >= len(items)
		if last {
			part = append(slices.Clip(part), release)
		}
		if err := s.register(ctx, part); err != nil {
			return fmt.Errorf("register jobs: %w", err)
		}
	}
	return nil
}

// newQueueItems are the registration's items of a queue Submit creates: its
// entry in the catalog Batches lists, and its model's state item (found by
// Snapshot's one Query) and counters, which a model's first queue creates
// (the updates leave an existing model's as they are).
func (s *Store) newQueueItems(b job.BatchSpec, mdl string, q queueRef) ([]types.TransactWriteItem, error) {
	k := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: mdl}
	cat, err := attributevalue.MarshalMap(catalogItem{PK: pkCatalog, SK: catalogSK(k), Queue: q.PK, Account: b.Account, Project: b.Project, Batch: b.Batch, Model: mdl, Seq: q.Seq})
	if err != nil {
		return nil, err
	}
	state, err := updateItem(s.tables.State, key(modelsPK(mdl), mdl), expression.Set(name(attrModel), value(mdl)), expression.ConditionBuilder{})
	if err != nil {
		return nil, err
	}
	cu := expression.Set(name(attrModel), value(mdl)).
		Add(name("ok_total"), value(0)).Add(name("pf_total"), value(0))
	counters, err := updateItem(s.tables.State, key(countersPK(mdl), skCounters), cu, expression.ConditionBuilder{})
	if err != nil {
		return nil, err
	}
	return []types.TransactWriteItem{putItem(s.tables.State, cat), state, counters}, nil
}

// register runs one registration transaction, again after a conflict with a
// concurrent writer (a claim moving the same queue item).
func (s *Store) register(ctx context.Context, items []types.TransactWriteItem) error {
	for try := 1; ; try++ {
		err := s.transact(ctx, items, token())
		reasons := cancelReasons(err)
		if reasons == nil {
			return err
		}
		if slices.Contains(reasons, "ConditionalCheckFailed") {
			// Under the lock only a lost lock explains it: the lock expired
			// and another Submit took the batch.
			return fmt.Errorf("lock lost (%v): %w", reasons, ErrBusy)
		}
		if try >= maxConflicts {
			return err
		}
		if err := sleep(ctx, try); err != nil {
			return err
		}
	}
}

// lock takes the batch's lock, waiting up to LockWait for another Submit;
// it returns the batch item as it was: its count of registered jobs
// ("jobs"), its terms and part digests.
func (s *Store) lock(ctx context.Context, bpk string, b job.BatchSpec, owner string, now time.Time) (map[string]types.AttributeValue, error) {
	u := expression.Set(name("account"), value(b.Account)).Set(name("project"), value(b.Project)).
		Set(name("batch"), value(b.Batch)).Set(name("lock_owner"), value(owner)).
		Set(name("lock_until"), value(now.Add(s.LockTTL).UnixMilli()))
	// Guard: one Submit of a batch at a time, until a crashed one's lock
	// expires. Without it TestSubmitWaitsForTheLockOfACrashedSubmit fails (make
	// mutate: submit-lock).
	cond := name("lock_until").AttributeNotExists().Or(name("lock_until").LessThan(value(now.UnixMilli())))
	e, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for try := 1; ; try++ {
		res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.tables.State), Key: key(bpk, skBatch),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValues: types.ReturnValueAllOld,
		})
		if err == nil {
			return res.Attributes, nil
		}
		if !isConditionFailed(err) {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if time.Since(start) >= s.LockWait {
			return nil, fmt.Errorf("lock held for over %v: %w", s.LockWait, ErrBusy)
		}
		if err := sleep(ctx, min(try, 4)); err != nil { // 25 ms … 200 ms
			return nil, err
		}
	}
}

func (s *Store) unlock(ctx context.Context, bpk, owner string) {
	e, err := expression.NewBuilder().
		WithUpdate(expression.Remove(name("lock_owner")).Remove(name("lock_until"))).
		// Guard: only our own lock is given up, never the one another Submit took
		// after ours expired. Without it TestSubmitGivesUpOnlyItsOwnLock fails (make
		// mutate: submit-unlock).
		WithCondition(name("lock_owner").Equal(value(owner))).Build()
	if err == nil {
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.tables.State), Key: key(bpk, skBatch),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
	}
	if err != nil && !isConditionFailed(err) {
		s.log().Warn("submit: release lock; it expires by itself", "batch", bpk, "err", err)
	}
}

// queueRef is a target queue as Submit found it.
type queueRef struct {
	PK   string
	Size int64
	Seq  int64
	new  bool
}

// readQueues reads the batch's queues for the models (one BatchGetItem).
func (s *Store) readQueues(ctx context.Context, b job.BatchSpec, models []string) (map[string]queueRef, error) {
	out := make(map[string]queueRef, len(models))
	keys := make([]map[string]types.AttributeValue, len(models))
	for i, m := range models {
		pk := queuePK(scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: m})
		out[m] = queueRef{PK: pk, new: true}
		keys[i] = key(pk, skQueue)
	}
	items, err := batchGetItems[queueItem](ctx, s, keys)
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	for _, q := range items {
		out[q.Model] = queueRef{PK: q.PK, Size: q.Size, Seq: q.Seq}
	}
	return out, nil
}

// registeredJobs tells which existing job items are registered: below their
// queue's size and listed at their position by its chunk. Others are a
// crashed Submit's leftovers.
func (s *Store) registeredJobs(ctx context.Context, jobs map[string]jobItem) (map[string]bool, error) {
	byQueue := map[string][]jobItem{}
	for _, j := range jobs {
		byQueue[j.Queue] = append(byQueue[j.Queue], j)
	}
	out := make(map[string]bool, len(jobs))
	for _, pk := range slices.Sorted(maps.Keys(byQueue)) {
		q, ok, err := s.readQueue(ctx, pk)
		if err != nil {
			return nil, fmt.Errorf("read queue: %w", err)
		}
		if !ok {
			continue
		}
		js := byQueue[pk]
		slices.SortFunc(js, func(a, b jobItem) int { return cmp.Compare(a.Pos, b.Pos) })
		for _, j := range js {
			if j.Pos < 0 || j.Pos >= q.Size {
				continue
			}
			c, err := s.chunkAt(ctx, pk, j.Pos)
			if err != nil {
				return nil, err
			}
			out[j.ID] = c.IDs[j.Pos-c.Start] == j.ID
		}
	}
	return out, nil
}

// staleChunks lists the chunk items of a queue at or past its size.
func (s *Store) staleChunks(ctx context.Context, q queueRef) ([]string, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.State),
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: q.PK},
			":lo": &types.AttributeValueMemberS{Value: chunkSK(q.Size)},
			":hi": &types.AttributeValueMemberS{Value: chunkSK(999999999999)},
		},
		ProjectionExpression: aws.String("sk"),
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("read stale chunks: %w", err)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, text(it[attrSK]))
	}
	return out, nil
}

// nextSeq allocates a queue's place in submission order (a counter item
// written once per new queue).
func (s *Store) nextSeq(ctx context.Context) (int64, error) {
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.State),
		Key:                       key(pkSeq, pkSeq),
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": number(1)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("allocate queue seq: %w", err)
	}
	n, err := strconv.ParseInt(text(res.Attributes["n"]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("allocate queue seq: %w", err)
	}
	return n, nil
}

// validate checks what the key layout needs; the intake validates the rest
// of the message format (docs/batch-format.md) before calling Submit.
func validate(b job.BatchSpec) error {
	for _, f := range []struct{ what, v string }{{"account", b.Account}, {"project", b.Project}, {"batch", b.Batch}} {
		if err := checkName(f.what, f.v); err != nil {
			return fmt.Errorf("submit: %w: %w", ErrInvalid, err)
		}
	}
	for _, j := range b.Jobs {
		if j.Key == "" {
			return fmt.Errorf("submit: %w: a job has no key", ErrInvalid)
		}
		if err := checkName("model of job "+strconv.Quote(j.Key), cmp.Or(j.Model, b.Model)); err != nil {
			return fmt.Errorf("submit: %w: %w", ErrInvalid, err)
		}
	}
	return nil
}
