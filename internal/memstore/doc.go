// Package memstore is the job store in memory, where the pass tests, the
// simulator and the local mode keep their jobs.
//
// It is a scheduler.Store with the semantics the DynamoDB store has: a
// waiting job is claimed by exactly one pass, claimed jobs leave the waiting
// counts at once, and the running and starting counters move in the same step
// as the job state they count. A claim (Commit), launch result, task event,
// cancel or skip moves a job as job.Apply (internal/job, the lifecycle the
// DynamoDB store follows too) says, and the store persists that change. The
// domain types (State, BatchSpec, JobSpec, Exit, Terms, Result, the conflict
// rule and the store errors) live in internal/job, so no Lambda binary
// links this package (functions/links_test.go).
//
// It also takes the writes the other functions make in production: Submit (the
// intake function), TaskStarted and TaskStopped (the task-events function),
// PutModel and PutPin (an operator's console edits). Check recounts every
// counter, so tests and the simulator can assert the invariants after every
// step.
//
// Shard(owns) is the store as one scheduler shard sees it (Snapshot and
// InFlight of the models it owns, every write unscoped): several shards'
// passes run over one Store as the scheduler invocations of a sharded
// deployment run over one set of tables.
package memstore
