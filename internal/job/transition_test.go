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
	exits := []job.Exit{{}, {Code: 1}, {Code: 75, ProviderError: true}, {Infrastructure: true}, {Cancelled: true}}
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
