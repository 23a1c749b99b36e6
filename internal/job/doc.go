// Package job is the domain model: a job's states, the batch and job specs
// the intake hands over, how a task stopped (Exit), and the one lifecycle
// every store follows (Apply).
//
// Where it sits in the pass: the intake stores a batch's jobs WAITING
// (BatchSpec); the pass claims them (Claim); the launcher's RunTask results
// record LAUNCHED, a retry or a failure (Launch, LaunchRetry, LaunchFail);
// the task-events function and the reconciler report RUNNING and STOPPED
// (Start, Stop; a Stop with Exit.Yielded is the scheduler's own stop of a
// task still starting: the job waits again, its attempt not spent); an operator cancels waiting jobs (Cancel); a sampled
// batch's stop skips them (Skip). Each of these is an Event; Apply judges it
// against the job's state and attempt and returns the new state, attempt
// and reason and the counters the move shifts. The stores (memstore in
// memory, dynamostore in one conditional transaction) persist that Change
// and nothing else, so the lifecycle is written once.
//
// The rest of what both stores share lives here too, so that the Lambda
// binaries (which link dynamostore) never link the in-memory store: a job's
// id (JobID), the conflict rule a resubmitted batch is judged by
// (Conflicts, refused with a *ConflictError wrapping ErrConflict), a job's
// verdict (Result), what status shows of a sampled batch (SampledBatch),
// and the stores' errors (ErrUnknownJob, ErrWrongToken).
//
// The package is pure: it imports no AWS package and never reads the clock
// (a store stamps its own times). testdata/*.txt are transcripts of event
// sequences (duplicate, out-of-order and stale-attempt events, every retry
// path) with the change each must make; jobtest reads them, so the stores'
// tests replay the same sequences against memstore and DynamoDB Local.
package job
