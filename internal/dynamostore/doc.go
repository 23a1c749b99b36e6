// Package dynamostore is the scheduler's Store on DynamoDB, with the
// semantics of memstore: a waiting job is claimed by exactly one pass, oldest
// first within its queue (a sampled batch's by stratum, release.go); a
// retried job goes back in its place; counters move in the same transaction
// as the state they count; outcomes are acknowledged once. It also takes
// the writes of the other functions — Submit (intake), TaskStarted and
// TaskStopped (task events), RecordResult (results) — and the console edits
// PutModel and PutPin. DESIGN.md beside this file has the full table design.
//
// # Tables
//
//	state   pk, sk; GSI "active" (active, seq; ActiveProjection) written by the functions
//	models  model                                           an operator's items
//	pins    scope                                           an operator's items
//
// Items of the state table ("#" cannot occur in names):
//
//	JOB#<id>                    JOB          a job: content, state, attempt, queue, pos
//	QUEUE#<a>#<p>#<b>#<model>   QUEUE        a batch's jobs of one model: size, next
//	                                         (cursor), waiting, backs, active, seq;
//	                                         running and outcomes, for Batches
//	  same pk                   CHUNK#<pos>  the ids of ≤ 500 consecutive positions
//	  same pk                   BACK#<pos>   a retried job waiting below the cursor
//	MODELS                      <model>      the model's ModelState, ver, acked outcomes
//	MODEL#<model>               COUNTERS     running, starting, outcome totals, pending
//	PROJECT#<a>#<p>             COUNTERS     running
//	BATCH#<a>#<p>#<b>           BATCH        registered jobs, Submit's lock
//	BATCHES                     <a>#<p>#<b>#<model>  the queue catalog Batches lists
//	PAUSES                      <scope>      a pause (apart from the pin of the scope)
//	SEQ                         SEQ          the queues' submission order
//	SAMPLED#<a>#<p>#<b>         PARAMS, JOBS#<token>, WAITS#<part>#<digest>, STRATUM#<name>  a sampled batch (sampled.go)
//	WAIT#<a>#<p>#<b>#<stratum>  <rank>#<key>  a sampled batch's waiting job (release.go)
//
// # Access patterns and cost
//
// Snapshot (6 requests up to 100 models and 100 active queues, whatever the
// number of waiting jobs): Scan models, Scan pins, Query MODELS, BatchGetItem
// of the counters, Query of the active index, BatchGetItem of those queues.
//
// Commit: one TransactWriteItems per 100 changed models (conditioned on the
// version Snapshot read: ErrStale otherwise), then per grant one transaction
// per ≤ 90 jobs that moves the queue's cursor (conditioned on its old value),
// the jobs' states (each conditioned on WAITING and its attempt), the back
// items of retried jobs and the model's starting counter and pending entry
// together. Finding the jobs: GetItem queue, Query back items (if any), Query
// the chunk (cached), BatchGetItem the jobs — O(admitted jobs).
//
// RecordLaunches, TaskStarted, TaskStopped: read the job, then one
// conditional write (launched) or one transaction of 2–5 items carrying the
// counters. Repeated, late or stale-attempt events find the job moved on.
//
// Submit: lock the batch; read the message's jobs only when the batch already
// has registered jobs; BatchWriteItem the new jobs and chunk items, 25 a
// call (10,000 jobs: 404 write calls, 24.75 jobs per call); then one
// transaction registers them (queue size and waiting, model items) and
// releases the lock. Unregistered items are invisible, so a crash anywhere
// leaves nothing a redelivery cannot finish, and a redelivery of a finished
// message writes only the lock.
//
// # Hot keys
//
// Jobs are keyed by id, so a burst spreads over every partition; a queue's
// partition takes a chunk item per 500 jobs and a claim per ≤ 90; a model's
// counters item (small, apart from its large state item) takes ~3 writes per
// job.
//
// # Shards
//
// A scheduler shard's Store is scoped by ScopeToShard (shard.go): its
// Snapshot queries only its buckets of the model states and of the active
// index (both partitioned by a model's bucket, always) and returns only the
// models it owns and their queues, its InFlight only their jobs. Nothing is
// written differently for shards, so Submit, the task events and Cancel do
// not know there are any.
//
// # Console items
//
// Model items are decoded strictly; a malformed one is skipped with a warning
// naming the item, the attribute and the rule, and its model's jobs wait. A
// model with jobs but no item takes the defaults given to New, silently. Pins
// keep their raw text for priority.Compile to judge.
package dynamostore
