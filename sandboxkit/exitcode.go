package sandboxkit

import (
	"errors"
	"fmt"
)

// The exit-code convention the task-events function reads (internal/taskevent):
// the container's exit code is the job's result.
const (
	// ExitSucceeded: the job ran to its end. Whether the model passed the
	// eval is the reported result's business, not the exit code's.
	ExitSucceeded = 0
	// ExitJobFailed: the job failed on its own (a bug, a bad request, a
	// harness error). evalsched does not retry it.
	ExitJobFailed = 1
	// ExitProviderFailed (EX_TEMPFAIL): the model's provider failed — 429 or
	// 5xx after the kit's own retries, or the kit's breaker stayed open. The
	// scheduler's per-model breaker counts these and stops admitting the model
	// while its provider fails fast. The default of the stack's
	// EVALSCHED_PROVIDER_ERROR_EXIT_CODES.
	ExitProviderFailed = 75
)

// ErrBreakerOpen is returned when the call-level breaker refuses a call and
// the retry budget does not cover the wait.
var ErrBreakerOpen = errors.New("sandboxkit: breaker open: the gateway answers 429/5xx to too many calls")

// ProviderError is a failure of the model's provider as seen through the
// gateway: what the job cannot fix by itself, and what the scheduler's breaker
// should count.
type ProviderError struct {
	Status   int // the last HTTP status; 0 for a network error or an open breaker
	Attempts int // calls made, retries included
	Err      error
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider failed: HTTP %d after %d attempts: %v", e.Status, e.Attempts, e.Err)
	}
	return fmt.Sprintf("provider failed after %d attempts: %v", e.Attempts, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// ExitCode maps a job's error to the convention: nil is ExitSucceeded, a
// ProviderError (or an open breaker) ExitProviderFailed, anything else
// ExitJobFailed.
func ExitCode(err error) int {
	var pe *ProviderError
	switch {
	case err == nil:
		return ExitSucceeded
	case errors.As(err, &pe), errors.Is(err, ErrBreakerOpen):
		return ExitProviderFailed
	default:
		return ExitJobFailed
	}
}
