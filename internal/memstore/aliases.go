package memstore

import "github.com/evalsched/evalsched/internal/job"

// Deprecated: only internal/dynamostore still uses these; delete when it moves to internal/job
//
// The domain model moved to internal/job (issue #15); every other package
// names it there. This file is the whole of memstore's aliases, so deleting
// it is the whole of that cleanup.

// State is job.State.
//
// Deprecated: use job.State.
type State = job.State

// The job states.
const (
	// Deprecated: use job.Waiting.
	Waiting = job.Waiting
	// Deprecated: use job.Claimed.
	Claimed = job.Claimed
	// Deprecated: use job.Launched.
	Launched = job.Launched
	// Deprecated: use job.Running.
	Running = job.Running
	// Deprecated: use job.Succeeded.
	Succeeded = job.Succeeded
	// Deprecated: use job.Failed.
	Failed = job.Failed
	// Deprecated: use job.Cancelled.
	Cancelled = job.Cancelled
	// Deprecated: use job.Skipped.
	Skipped = job.Skipped
)

// BatchSpec is job.BatchSpec.
//
// Deprecated: use job.BatchSpec.
type BatchSpec = job.BatchSpec

// JobSpec is job.JobSpec.
//
// Deprecated: use job.JobSpec.
type JobSpec = job.JobSpec

// Exit is job.Exit.
//
// Deprecated: use job.Exit.
type Exit = job.Exit

// Terms is job.Terms.
//
// Deprecated: use job.Terms.
type Terms = job.Terms
