// Package taskevent decodes ECS Task State Change events, as EventBridge
// delivers them to the task-events function, into what they mean for a job:
// it started running, it ended (succeeded, failed on its own, failed on
// provider errors), or its infrastructure failed and it should run again.
//
// The job is found from the task's startedBy (the job id the launcher set) and
// its attempt from the EVALSCHED_ATTEMPT variable of the container override,
// which the event echoes; events arrive at least once and out of order, and
// detail.version orders the events of one task.
//
// # Exit codes: the convention for sandbox authors
//
//   - 0: the job succeeded.
//   - 75 (EX_TEMPFAIL; configurable): the attempt failed because the model's
//     provider failed (429/5xx after the sandbox's own retries). The job
//     waits again while its attempts last (job.Apply). These feed the
//     model's breaker: many of them in a short window stop admission for the
//     model, its retries included, until the provider recovers.
//   - any other non-zero code: the job failed on its own; it is not retried.
//
// A task stopped before its container ran the job to an end — Spot
// interruption, capacity, image pull, network interface errors, a container
// that never started — is an infrastructure stop: the job goes back to
// waiting while its attempts last.
package taskevent
