// Package reconcile repairs what lost or late events leave behind. Once a
// minute, in the scheduler invocation's first slot (under the lease), it
// compares the jobs the store believes hold a slot with ECS's view:
//
//   - a job CLAIMED longer than ClaimGrace (a pass died between claim and
//     launch, or between launch and record): if ECS has a task started by the
//     job (ListTasks by startedBy), the launch is recorded; otherwise the job
//     goes back to waiting with attempt+1. The clientToken makes a RunTask
//     retried after such a crash return the task it started, so a claim is
//     never launched twice for one attempt;
//   - a job LAUNCHED or RUNNING: DescribeTasks, 100 tasks a call; a task that
//     runs marks the job running, a stopped one ends it exactly as its
//     STOPPED event would have (taskevent.Classify), one ECS no longer knows
//     (MISSING) past MissingGrace returns the job to waiting;
//   - a job running past its timeout_seconds: StopTask, and the job fails
//     with the reason "timeout"; the task's own STOPPED event then finds the
//     job ended and changes nothing.
//
// Every repair goes through the store's conditional transitions, so a repair
// racing the real event is applied once.
package reconcile
