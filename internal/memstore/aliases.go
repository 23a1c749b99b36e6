package memstore

import "github.com/evalsched/evalsched/internal/job"

// The domain model moved to internal/job (issue #15). These aliases keep
// its importers compiling until they switch; new code uses job directly.

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
