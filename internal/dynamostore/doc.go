// Package dynamostore is the scheduler's Store on DynamoDB, with the
// semantics of memstore: a waiting job is claimed by exactly one pass, oldest
// first within its queue (a sampled batch's by stratum); a retried job goes
// back in its place; counters move in the same transaction as the state they
// count, and a model's slots are counted from the inflight index its jobs
// enter and leave; outcomes are acknowledged once. Every change of a job's state —
// a claim, cancel or skip (take.go's judged) as much as a launch result or
// a task event (events.go) — is judged by job.Apply on the job as read; the
// write's condition on that read makes the judgement hold when it lands.
//
// # In the pass
//
// Of the pass's steps (internal/scheduler/doc.go), the store serves:
//
//	snapshot  Snapshot (snapshot.go): models, pins, pauses, outcome counters,
//	          the jobs in flight and the active queues, in O(models + active
//	          queues + jobs in flight) reads
//	claim     Commit (commit.go): the models' states, conditioned on the
//	          Versions the Snapshot read (Committed.Stale otherwise), then the
//	          grants — batched across the queues the Snapshot read
//	          (batchclaim.go), else one queue at a time (claim.go), a sampled
//	          batch's by stratum (release.go)
//	record    RecordLaunches (events.go)
//
// and, beside the pass, the writes of the other functions — Submit
// (submit.go, the intake), TaskStarted and TaskStopped (events.go, task
// events), RecordResult (results.go, results) — an operator's Cancel
// (cancel.go), console edits (console.go), a sampled batch's registration,
// stop and estimate (sampled.go), and the reads of the CLI and the
// reconciler (batches.go, job.go, inflight.go).
//
// # Files
//
// One operation a file, over shared primitives: take.go (taking jobs out of
// a queue's front and writing a claim transaction, shared by the claims and
// Cancel), reads.go (reading queues, their order and jobs), ddb.go (the
// requests: batching, paging, retries, parallelism), expr.go (expression
// builders), store.go (keys and item types), tables.go (the tables'
// definitions).
//
// # Tables
//
// DESIGN.md beside this file is the one description of the tables, their
// items, each operation's requests and why each write is conditioned.
// Every condition expression here carries a "Guard" comment naming its
// invariant, the test that fails without it and its mutation in
// internal/mutate.
package dynamostore
