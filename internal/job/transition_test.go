package job_test

import (
	"testing"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/job/jobtest"
)

// TestTranscripts replays every testdata transcript: each event's change
// is the one written, the totals lines hold, and after every event the
// totals count the job exactly where its state says it is.
func TestTranscripts(t *testing.T) {
	files, err := jobtest.Files("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		scripts, err := jobtest.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if len(scripts) == 0 {
			t.Errorf("%s: no job", file)
		}
		for _, s := range scripts {
			t.Run(s.Name, func(t *testing.T) {
				j := jobtest.New(s)
				for _, st := range s.Steps {
					if st.Totals != "" {
						if got := jobtest.FormatTotals(j.Totals); got != st.Totals {
							t.Errorf("line %d: totals %s, want %s", st.Line, got, st.Totals)
						}
						continue
					}
					c, ok := j.Apply(st.Event)
					if got := jobtest.Format(c, ok); got != st.Want {
						t.Errorf("line %d: %s attempt=%d\n got: %s\nwant: %s", st.Line, st.Event.Kind, st.Event.Attempt, got, st.Want)
					}
					if err := j.Check(); err != nil {
						t.Errorf("line %d: %v", st.Line, err)
					}
				}
			})
		}
	}
}

// TestEveryKindFromEveryState: no event moves an ended job, an unknown
// kind moves nothing, and every accepted event leaves the attempt alone
// except a retry's +1.
func TestEveryKindFromEveryState(t *testing.T) {
	kinds := []job.Kind{job.Claim, job.Launch, job.LaunchRetry, job.LaunchFail, job.Start, job.Stop, job.Cancel, job.Skip, "bogus"}
	states := []job.State{job.Waiting, job.Claimed, job.Launched, job.Running, job.Succeeded, job.Failed, job.Cancelled, job.Skipped}
	exits := []job.Exit{{}, {Code: 1}, {Code: 75, ProviderError: true}, {Infrastructure: true}, {Cancelled: true}, {Yielded: true}}
	for _, st := range states {
		for _, k := range kinds {
			for _, ex := range exits {
				cur := job.Current{State: st, Attempt: 2, MaxAttempts: 3}
				c, ok := job.Apply(cur, job.Event{Kind: k, Attempt: 2, Exit: ex})
				switch {
				case !ok:
				case st.Ended() || k == "bogus":
					t.Errorf("%s from %s: moved to %s", k, st, c.To)
				case c.Attempt != 2 && !(c.To == job.Waiting && c.Attempt == 3):
					t.Errorf("%s from %s: attempt %d", k, st, c.Attempt)
				}
				if _, ok := job.Apply(cur, job.Event{Kind: k, Attempt: 1, Exit: ex}); ok {
					t.Errorf("%s of attempt 1 moved a job at attempt 2 (%s)", k, st)
				}
			}
		}
	}
}

// TestYield: a yielded stop from any state that holds a slot sends the job
// back to waiting at its next attempt with one more max attempt, even at
// its last attempt, where an infrastructure stop fails it; the breaker
// counts nothing and no exit is recorded; another attempt's yield is stale.
func TestYield(t *testing.T) {
	yield := job.Exit{Yielded: true, Code: 143, Reason: "UserInitiated: yielded"}
	for _, st := range []job.State{job.Claimed, job.Launched, job.Running} {
		for _, attempt := range []int{1, 3} { // below and at the limit
			cur := job.Current{State: st, Attempt: attempt, MaxAttempts: 3}
			c, ok := job.Apply(cur, job.Event{Kind: job.Stop, Attempt: attempt, Exit: yield})
			if !ok {
				t.Fatalf("yield from %s attempt %d: stale", st, attempt)
			}
			if c.To != job.Waiting || c.Attempt != attempt+1 || c.MaxAttempts != 4 || c.Reason != yield.Reason || c.Exit {
				t.Errorf("yield from %s attempt %d: %s, want WAITING attempt=%d max=4 reason=%q", st, attempt, jobtest.Format(c, ok), attempt+1, yield.Reason)
			}
			if c.OK != 0 || c.ProviderFailed != 0 || c.Waiting != 1 || c.Backs != 1 || c.Starting+c.Running != -1 {
				t.Errorf("yield from %s attempt %d: deltas %+v", st, attempt, c.Deltas)
			}
			// The contrast: a task that failed to start at the same attempt
			// spends it, and fails the job at the limit.
			c, _ = job.Apply(cur, job.Event{Kind: job.Stop, Attempt: attempt, Exit: job.Exit{Infrastructure: true, Reason: "TaskFailedToStart"}})
			if want := map[bool]job.State{true: job.Failed, false: job.Waiting}[attempt == 3]; c.To != want || c.MaxAttempts != 0 {
				t.Errorf("infrastructure stop from %s attempt %d: %s, want %s and max attempts unchanged", st, attempt, jobtest.Format(c, true), want)
			}
			if _, ok := job.Apply(cur, job.Event{Kind: job.Stop, Attempt: attempt - 1, Exit: yield}); ok {
				t.Errorf("a yield of attempt %d moved a job at attempt %d", attempt-1, attempt)
			}
		}
	}
	// Attempt numbers stop at MaxAttemptNumber (the results contract's
	// bound): near it a yield raises max attempts only up to it, and at it
	// the yield is an infrastructure stop, which the limit fails.
	near := job.Current{State: job.Launched, Attempt: job.MaxAttemptNumber - 1, MaxAttempts: job.MaxAttemptNumber}
	if c, _ := job.Apply(near, job.Event{Kind: job.Stop, Attempt: near.Attempt, Exit: yield}); c.To != job.Waiting || c.Attempt != job.MaxAttemptNumber || c.MaxAttempts != job.MaxAttemptNumber {
		t.Errorf("yield at attempt %d of %d: %s, want WAITING at the last attempt, max unchanged", near.Attempt, near.MaxAttempts, jobtest.Format(c, true))
	}
	last := job.Current{State: job.Launched, Attempt: job.MaxAttemptNumber, MaxAttempts: job.MaxAttemptNumber}
	if c, _ := job.Apply(last, job.Event{Kind: job.Stop, Attempt: last.Attempt, Exit: yield}); c.To != job.Failed {
		t.Errorf("yield at the last attempt number: %s, want FAILED (no attempt left to relaunch under)", jobtest.Format(c, true))
	}
	for _, st := range []job.State{job.Waiting, job.Succeeded, job.Failed, job.Cancelled, job.Skipped} {
		if c, ok := job.Apply(job.Current{State: st, Attempt: 2, MaxAttempts: 3}, job.Event{Kind: job.Stop, Attempt: 2, Exit: yield}); ok {
			t.Errorf("a yield moved a %s job: %s", st, jobtest.Format(c, ok))
		}
	}
}

// TestSkipRetry: a retry and a yield of a job whose sampled batch stopped
// end it SKIPPED at the attempt that ran, leaving its slot as the retry
// would, waiting in no queue and given no extra attempt.
func TestSkipRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		cur  job.Current
		ev   job.Event
	}{
		{"provider retry", job.Current{State: job.Running, Attempt: 1, MaxAttempts: 3}, job.Event{Kind: job.Stop, Attempt: 1, Exit: job.Exit{Code: 75, ProviderError: true}}},
		{"yield", job.Current{State: job.Claimed, Attempt: 2, MaxAttempts: 3}, job.Event{Kind: job.Stop, Attempt: 2, Exit: job.Exit{Yielded: true}}},
		{"launch retry", job.Current{State: job.Claimed, Attempt: 1, MaxAttempts: 2}, job.Event{Kind: job.LaunchRetry, Attempt: 1, Reason: "capacity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := job.Apply(tc.cur, tc.ev)
			if !ok || c.To != job.Waiting {
				t.Fatalf("Apply: %+v %v, want a change back to waiting", c, ok)
			}
			got := job.SkipRetry(tc.cur, c, "sampling stopped")
			want := c
			want.To, want.Attempt, want.Reason = job.Skipped, tc.cur.Attempt, "sampling stopped"
			want.Waiting, want.Backs, want.MaxAttempts = 0, 0, 0
			if got != want {
				t.Errorf("SkipRetry:\n got %+v\nwant %+v", got, want)
			}
			if got.Starting+got.Running != -1 {
				t.Errorf("SkipRetry leaves the slot %+v: want one slot freed", got.Deltas)
			}
		})
	}
}
