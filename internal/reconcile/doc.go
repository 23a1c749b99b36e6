// Package reconcile repairs what lost or late events leave behind. Once a
// minute, in the scheduler invocation's first slot (under the lease), it
// compares the jobs the store believes hold a slot with ECS's view:
//
//   - a job CLAIMED longer than ClaimGrace (a pass died between claim and
//     launch, or between launch and record): if ECS has a task started by the
//     job for its attempt (ListTasks by startedBy, DescribeTasks for the
//     attempt in the container override), the launch is recorded; otherwise
//     the job goes back to waiting with attempt+1. The clientToken makes a
//     RunTask retried after such a crash return the task it started, so a
//     claim is never launched twice for one attempt. A job RUNNING without a
//     task ARN (its RUNNING event came, its launch was never recorded) is
//     looked up the same way and judged with the others below;
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
//
// The decisions are a pure judge (judge.go: Judge, Pick, over plain Task
// values, with table tests); Run reads the store and ECS through the Tasks
// interface and writes what the judge decides. The package imports no AWS
// SDK: ecstasks adapts the ECS API (ListTasks, DescribeTasks, StopTask) to
// Tasks, and the simulator answers Tasks from its own task table.
//
// In a sharded deployment each shard's invocation reconciles the jobs of its
// own models: the store it is given lists only those (dynamostore's ScopeToShard,
// memstore's Shard), so each job is looked at by one reconciler and the ECS
// calls split with the models.
package reconcile
