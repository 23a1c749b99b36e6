package job

import (
	"cmp"
	"fmt"
)

// Kind is what happened to a job.
type Kind string

// The event kinds, in the order of a job's life.
const (
	Claim       Kind = "claim"        // a pass claims the waiting job
	Launch      Kind = "launch"       // RunTask started its task
	LaunchRetry Kind = "launch-retry" // RunTask failed for now (capacity, throttling): another attempt may run
	LaunchFail  Kind = "launch-fail"  // RunTask refused it for good (configuration)
	Start       Kind = "start"        // its task's container runs (a RUNNING event)
	Stop        Kind = "stop"         // its task stopped (a STOPPED event, or the reconciler)
	Cancel      Kind = "cancel"       // an operator cancels the waiting job
	Skip        Kind = "skip"         // its sampled batch stopped before it ran
)

// Event is one thing that happened to a job's attempt.
type Event struct {
	Kind    Kind
	Attempt int    // the attempt it happened to (claim, cancel, skip: the attempt read)
	Exit    Exit   // Stop: how the task stopped
	Reason  string // LaunchRetry, LaunchFail: why; Skip: the batch's estimate
}

// Current is what Apply reads of the job.
type Current struct {
	State       State
	Attempt     int
	MaxAttempts int
}

// Deltas are the counters a move shifts, each -1, 0 or +1.
type Deltas struct {
	Waiting  int // the queue's waiting jobs
	Backs    int // the queue's retried jobs waiting ahead of its cursor (back items)
	Starting int // the model's claimed or launched jobs
	Running  int // the running tasks of the model, its project and the queue
	// OK and ProviderFailed are the model's outcomes for its breaker: a
	// job that ended on its own (either way) is OK; one that failed on
	// provider errors is not. Cancels, retries, yields and launch
	// failures count neither: the provider did nothing.
	OK, ProviderFailed int
}

// Change is what an event does to a job.
type Change struct {
	To      State
	Attempt int // the job's attempt after: one more when it goes back to waiting
	// Reason is why the job ended or went back to waiting; only those
	// moves set it.
	Reason string
	// Exit: the event's Exit is the job's record of how it ended.
	Exit bool
	// MaxAttempts is the job's max attempts after the change; 0 leaves
	// them as they are. Only a yield sets it (one more than before, at
	// most MaxAttemptNumber: the attempt it took is not spent), and the
	// store writes it with the state and attempt.
	MaxAttempts int
	// ProviderRetry: the provider failed the attempt (exit 75) and the
	// job waits again; the store counts it in its queue's provider
	// retries (status shows them apart from the job's own failures).
	ProviderRetry bool
	Deltas
}

// Apply judges an event against the job as read. ok is false when the
// event changes nothing: it is stale (another attempt's), repeated, or
// comes after the job moved past the state it applies to; the store then
// writes nothing. Otherwise the store persists the Change: state, attempt,
// reason (and exit, and max attempts) together with the deltas, in one
// step.
func Apply(cur Current, ev Event) (c Change, ok bool) {
	c = Change{To: cur.State, Attempt: cur.Attempt}
	switch ev.Kind {
	case Claim:
		if ev.Attempt != cur.Attempt || cur.State != Waiting {
			return Change{}, false
		}
		c.To, c.Waiting, c.Starting, c.Backs = Claimed, -1, +1, fromBack(cur)
	case Cancel, Skip:
		// Only a waiting job is cancelled or skipped; one claimed meanwhile
		// runs to its end.
		if ev.Attempt != cur.Attempt || cur.State != Waiting {
			return Change{}, false
		}
		c.To, c.Waiting, c.Backs = Cancelled, -1, fromBack(cur)
		c.Reason = OperatorCancelReason
		if ev.Kind == Skip {
			c.To, c.Reason = Skipped, ev.Reason
		}
	case Launch, LaunchRetry, LaunchFail:
		// A repeated or late launch result never turns back a running job
		// or a retried attempt.
		if ev.Attempt != cur.Attempt || cur.State != Claimed {
			return Change{}, false
		}
		switch ev.Kind {
		case Launch:
			c.To = Launched
		case LaunchRetry:
			return retry(cur, ev.Reason), true
		default:
			c = leave(cur, Failed)
			c.Reason = ev.Reason
		}
	case Start:
		// A repeated RUNNING, or one of an earlier attempt, counts no
		// second running task (make mutate: lifecycle-started-duplicate).
		if ev.Attempt != cur.Attempt || (cur.State != Claimed && cur.State != Launched) {
			return Change{}, false
		}
		c = leave(cur, Running)
		c.Running++
	case Stop:
		// A repeated STOPPED of an ended job, or a late one of an attempt
		// since retried, neither ends the job again nor counts a second
		// outcome (make mutate: memstore-stopped-duplicate,
		// memstore-stopped-stale-attempt).
		if ev.Attempt != cur.Attempt || !cur.State.HoldsSlot() {
			return Change{}, false
		}
		return stop(cur, ev.Exit), true
	default:
		return Change{}, false
	}
	return c, true
}

// SkipRetry is what a change back to waiting (a retry, a yield) becomes
// when the job's sampled batch has stopped: the job ends SKIPPED with the
// stop's reason, at the attempt that ran, as the jobs waiting at the stop
// did. It waits in no queue, and a yield's extra attempt is not given.
// Both stores learn of the stop only when they write (the DynamoDB store
// from its refused write), so it is judged after Apply.
func SkipRetry(cur Current, c Change, reason string) Change {
	c.To, c.Attempt, c.Reason, c.Waiting, c.Backs, c.MaxAttempts = Skipped, cur.Attempt, reason, 0, 0, 0
	return c
}

// stop ends an attempt by how its task stopped: an operator's stop cancels
// (no outcome), a yield sends the job back to waiting without spending
// the attempt, an infrastructure stop retries, a provider failure retries
// too (the breaker counts it), exit 0 succeeds, any other exit fails on
// the job's own account.
func stop(cur Current, exit Exit) Change {
	var c Change
	switch {
	case exit.Yielded:
		// Whatever the exit (the container may just have started): the
		// scheduler took the slot back, so the job waits again and keeps
		// every attempt it had (make mutate: lifecycle-yield-spends).
		if cur.Attempt >= MaxAttemptNumber {
			// No attempt number is left to launch it again under: the
			// stop is an infrastructure one, which the limit fails.
			return retry(cur, exit.Reason)
		}
		return requeue(cur, exit.Reason, min(cur.MaxAttempts+1, MaxAttemptNumber))
	case exit.Cancelled:
		c = leave(cur, Cancelled)
		c.Reason = cmp.Or(exit.Reason, OperatorCancelReason)
	case exit.Infrastructure:
		return retry(cur, exit.Reason)
	case exit.ProviderError:
		// The provider failed (exit 75): the job did nothing wrong, and its
		// item has no verdict (a sampled batch must not count it as
		// measured). It waits again at its next attempt while it has one,
		// ahead of newer jobs; the breaker counts the failure, and an open
		// breaker admits none of the model's jobs, so the retry waits for
		// the provider (make mutate: lifecycle-provider-retry).
		c = retry(cur, cmp.Or(exit.Reason, fmt.Sprintf("exit code %d", exit.Code)))
		c.ProviderFailed = 1
		c.ProviderRetry = c.To == Waiting
		c.Exit = c.To == Failed // the last attempt: the job ends with its exit
		return c
	case exit.Code == 0:
		c = leave(cur, Succeeded)
		c.OK = 1
	default:
		c = leave(cur, Failed)
		c.Reason = cmp.Or(exit.Reason, fmt.Sprintf("exit code %d", exit.Code))
		c.OK = 1 // the provider answered; the job failed on its own
	}
	c.Exit = true
	return c
}

// retry returns a job that did not get to run to waiting at its next
// attempt, ahead of its queue's newer jobs, or fails it when its attempts
// are spent.
func retry(cur Current, reason string) Change {
	// make mutate: lifecycle-attempt-limit.
	if cur.Attempt >= cur.MaxAttempts {
		c := leave(cur, Failed)
		c.Reason = fmt.Sprintf("%s (attempt %d of %d)", reason, cur.Attempt, cur.MaxAttempts)
		return c
	}
	return requeue(cur, reason, 0)
}

// requeue returns a job to waiting at its next attempt, ahead of its
// queue's newer jobs (a back item), with max attempts maxAttempts (0:
// unchanged).
func requeue(cur Current, reason string, maxAttempts int) Change {
	c := leave(cur, Waiting)
	c.Attempt++
	c.Reason = reason
	c.MaxAttempts = maxAttempts
	c.Waiting, c.Backs = 1, 1
	return c
}

// leave moves a job out of the slot it holds to state to.
func leave(cur Current, to State) Change {
	c := Change{To: to, Attempt: cur.Attempt}
	switch {
	case cur.State.Starting():
		c.Starting = -1
	case cur.State == Running:
		c.Running = -1
	}
	return c
}

// fromBack is the back item a waiting job leaves with: a retried job (past
// its first attempt) waits in one, ahead of its queue's cursor.
func fromBack(cur Current) int {
	if cur.Attempt > 1 {
		return -1
	}
	return 0
}
