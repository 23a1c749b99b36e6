// Package ecslauncher launches claimed jobs as ECS Fargate tasks: the launch
// step of a scheduler pass (package scheduler names the steps).
//
// One RunTask with count 1 per job:
//
//   - startedBy is the job id (ECS task events carry no tags, but they carry
//     startedBy, so the task-events function finds the job from it);
//   - group is "model:<model>", so the console groups tasks by model;
//   - clientToken is derived from job id and attempt: a call retried after a
//     timeout returns the task the first call started instead of a second one,
//     and a ConflictException (the token already used) yields the existing task;
//   - the container override carries the job's env plus EVALSCHED_JOB_ID,
//     EVALSCHED_BATCH, EVALSCHED_MODEL, EVALSCHED_ATTEMPT and
//     EVALSCHED_SUBMITTED_AT (the task events echo it, so the task-events
//     function measures each job's wait without a read), built only from
//     validated names and values: nothing from a message reaches a command line.
//
// A token bucket (golang.org/x/time/rate) keeps launches under ECS's Fargate
// RunTask bucket (default 20/s, burst 100); the launches of one pass run
// concurrently within it. Every failures[] entry is read: capacity and
// throttling return the job to waiting with attempt+1 (scheduler.Retry); a
// configuration error (no such task definition, bad subnet) is logged loudly
// and fails the job, not the pass (scheduler.Failed). A server fault or no
// answer at all, after the SDK's retries with the same token, leaves the
// outcome unknown (scheduler.Unknown): ECS may have started the task, so
// the job stays CLAIMED and the reconciler finds its task by startedBy or
// returns it after its grace — never a second task under a new attempt.
// A shard's pass resizes the bucket to its share (SetRate). With the SPOT_FALLBACK
// strategy a job that finds no Spot capacity is tried once more on on-demand
// Fargate in the same pass.
package ecslauncher
