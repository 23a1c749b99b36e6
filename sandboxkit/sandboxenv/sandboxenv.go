// Package sandboxenv names the environment variables of the sandbox
// protocol: what the launcher (internal/ecslauncher) sets on the sandbox
// container beside the job's own env, what the task-events function and the
// reconciler read back from a task's container overrides, and what a sandbox
// reads with sandboxkit.JobFromEnv.
//
// It is the one definition of those names. It imports nothing, so the
// scheduler's pure packages (batchmsg counts the variables' size) and
// sandboxes in other modules can both import it; sandboxkit re-exports the
// names as EnvJobID, EnvBatch, … for sandbox authors.
package sandboxenv

// The variables.
const (
	JobID       = "EVALSCHED_JOB_ID"
	Batch       = "EVALSCHED_BATCH"        // account/project/batch
	Model       = "EVALSCHED_MODEL"        // the job's model, else its batch message's
	Attempt     = "EVALSCHED_ATTEMPT"      // 1, 2, …: a job runs again after an infrastructure stop
	SubmittedAt = "EVALSCHED_SUBMITTED_AT" // RFC 3339 in UTC; the job entered the queue
	// ResultToken is the attempt's result token: a secret the result
	// message must carry (sandboxkit sends it), so a sandbox speaks for its
	// own job and attempt alone. A harness reads it and keeps it from the
	// code it grades (SECURITY.md).
	ResultToken = "EVALSCHED_RESULT_TOKEN"
	// ResultQueueURL is where sandboxkit's SQSReporter sends the verdict. The
	// task definition sets it, not the launcher.
	ResultQueueURL = "EVALSCHED_RESULT_QUEUE_URL"
)
