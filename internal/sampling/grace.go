package sampling

import "time"

// DefaultResultGrace is how long a job that succeeded (exit 0) may take to
// report its verdict before its place in the release log is passed over
// as unmeasured. The verdict travels the results queue apart from the
// task's end and usually lands within seconds of it, sometimes after it;
// a sandbox that exits 0 without reporting must not hold the batch's
// counted prefix (and, with a window, the batch) for ever. Minutes are far
// beyond a queue's delivery delay and short beside a batch's run.
const DefaultResultGrace = 5 * time.Minute

// Unreported reports whether a job that succeeded at ended without a
// verdict counts as unmeasured at now: once grace has passed since its
// end (a grace ≤ 0 is DefaultResultGrace). A zero now (a look without a
// time, such as a status read) never passes a job over: the place is
// passed at the first look with a time after the grace, and stays passed.
func Unreported(ended, now time.Time, grace time.Duration) bool {
	if grace <= 0 {
		grace = DefaultResultGrace
	}
	return !now.IsZero() && !now.Before(ended.Add(grace))
}
