// Package intake is the intake function's logic: it turns the batch messages
// submitters put on the intake queue into waiting jobs. It is the first step
// of the pipeline:
//
//	submitter ──SQS──▶ Handler.Handle, per record, one at a time:
//	                     1. parse    batchmsg.Parse with the deployment's Config
//	                     2. submit   Store.Submit(spec): jobs WAITING, idempotent
//	                     3. answer   done, dead-lettered, or a batch item failure
//
// # What happens to a record
//
//	valid, stored                  done (jobs created; a redelivery creates none)
//	invalid (a *batchmsg.Error)    to the dead-letter queue, body unchanged, with
//	                               evalsched-reason and evalsched-source-message-id
//	                               beside the submitter's own attributes (up to
//	                               SQS's ten); logged, IntakeRejected; then done
//	conflicts with its batch       to the dead-letter queue the same way, the
//	  (a *job.ConflictError)       reason naming each field that differs (a job's
//	                               env or model, tier, task_definition, …, part,
//	                               parts); nothing of it stored, the stored jobs
//	                               unchanged; logged, IntakeConflicts; then done
//	dead-letter send failed        batch item failure: SQS delivers it again
//	store failed (throttled, …)    batch item failure: SQS delivers just it again
//
// Nothing is lost and nothing is silent: a record is reported done only once
// its jobs are stored or it sits in the dead-letter queue with its reason.
// The handler never fails the whole invocation; the valid messages of a
// delivery are stored whatever happens to the others. On a FIFO queue a
// failed record also fails the later records of its message group, so their
// order holds.
//
// # Cost
//
// Records are handled one at a time, so memory is bounded by one message
// (≤ 1 MiB, ≤ 10,000 jobs), not by the delivery. The store writes jobs 25 to
// a BatchWriteItem call. One EMF document per invocation counts messages,
// jobs, rejections, conflicts, retries and parts (see Counts).
//
// # Parts
//
// A batch too large for one message comes as parts (part, parts): each part
// is stored as it arrives, so its jobs can run before the rest are sent, and
// the store records the part on the batch (after its jobs are registered, so
// a recorded part never has jobs missing). The batch is complete when every
// part is recorded: `evalsched status` shows "parts 3/4" until then. The
// "message stored" log line names the batch and the part too.
package intake
