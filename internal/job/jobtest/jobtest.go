// Package jobtest reads the lifecycle transcripts (internal/job/testdata)
// and keeps the job and counters they describe, so that job's own tests and
// the stores' tests replay the same event sequences.
//
// A transcript is lines of text; a line starting with # is a comment. "job max=N" begins a
// job, WAITING at attempt 1 in its queue (its totals: waiting=1). Then
// each event line is
//
//	KIND attempt=N [code=N] [provider] [infra] [cancelled] [yielded] [reason="…"] => WANT
//
// with KIND one of job's Kinds and WANT either "stale" (the event changes
// nothing) or the change:
//
//	STATE attempt=N [max=N] [reason="…"] [exit] [waiting=±1] [backs=±1] [starting=±1] [running=±1] [ok=+1] [pf=+1]
//
// (max: the job's max attempts after, when the change sets them; only the
// counters that move, in that order). A "totals" line asserts
// the sums of every change so far:
//
//	totals waiting=N backs=N starting=N running=N ok=N pf=N
package jobtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/evalsched/evalsched/internal/job"
)

// Step is one event line, or a totals line (Totals set, Event zero).
type Step struct {
	Line   int
	Event  job.Event
	Want   string // canonical: "stale" or Format's text
	Totals string // canonical: FormatTotals' text
}

// Script is one job's transcript.
type Script struct {
	Name        string // file:line of its "job" line
	MaxAttempts int
	Steps       []Step
}

// Files lists the transcripts in dir.
func Files(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no transcripts in %s", dir)
	}
	return files, err
}

// ParseFile reads a transcript file's scripts.
func ParseFile(path string) ([]Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Script
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", filepath.Base(path), n)
		if err := parseLine(&out, line, where, n); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return out, sc.Err()
}

func parseLine(out *[]Script, line, where string, n int) error {
	left, want, arrow := strings.Cut(line, "=>")
	f, err := fields(left)
	if err != nil {
		return err
	}
	switch {
	case f[0] == "job":
		s := Script{Name: where, MaxAttempts: job.DefaultMaxAttempts}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			if k != "max" {
				return fmt.Errorf("job: unknown argument %q (want max=N)", kv)
			}
			if s.MaxAttempts, err = strconv.Atoi(v); err != nil || s.MaxAttempts < 1 {
				return fmt.Errorf("job max: %q is not a positive integer", v)
			}
		}
		*out = append(*out, s)
		return nil
	case len(*out) == 0:
		return fmt.Errorf("%q before the first job line", f[0])
	}
	s := &(*out)[len(*out)-1]
	if f[0] == "totals" {
		if arrow {
			return fmt.Errorf("totals: no => expected")
		}
		s.Steps = append(s.Steps, Step{Line: n, Totals: strings.Join(f[1:], " ")})
		return nil
	}
	if !arrow {
		return fmt.Errorf("%s: missing => and the expected change", f[0])
	}
	ev := job.Event{Kind: job.Kind(f[0])}
	seen := false
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "attempt":
			ev.Attempt, err = strconv.Atoi(v)
			seen = true
		case "code":
			ev.Exit.Code, err = strconv.Atoi(v)
		case "provider":
			ev.Exit.ProviderError = true
		case "infra":
			ev.Exit.Infrastructure = true
		case "cancelled":
			ev.Exit.Cancelled = true
		case "yielded":
			ev.Exit.Yielded = true
		case "reason":
			var r string
			r, err = strconv.Unquote(v)
			if ev.Kind == job.Stop {
				ev.Exit.Reason = r
			} else {
				ev.Reason = r
			}
		default:
			return fmt.Errorf("%s: unknown argument %q", f[0], kv)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", f[0], k, err)
		}
	}
	if !seen {
		return fmt.Errorf("%s: attempt=N is required", f[0])
	}
	w, err := fields(want)
	if err != nil {
		return err
	}
	s.Steps = append(s.Steps, Step{Line: n, Event: ev, Want: strings.Join(w, " ")})
	return nil
}

// fields splits a line at blanks, keeping a quoted string (Go syntax) whole.
func fields(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		i := strings.IndexAny(s, " \t\"")
		switch {
		case i < 0:
			out, s = append(out, s), ""
		case s[i] != '"':
			out, s = append(out, s[:i]), s[i:]
		default:
			q, err := strconv.QuotedPrefix(s[i:])
			if err != nil {
				return nil, fmt.Errorf("bad quoted string in %q: %w", s, err)
			}
			out, s = append(out, s[:i+len(q)]), s[i+len(q):]
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty line")
	}
	return out, nil
}

// Format is a change as a transcript writes it; "stale" when !ok.
func Format(c job.Change, ok bool) string {
	if !ok {
		return "stale"
	}
	f := []string{string(c.To), fmt.Sprintf("attempt=%d", c.Attempt)}
	if c.MaxAttempts != 0 {
		f = append(f, fmt.Sprintf("max=%d", c.MaxAttempts))
	}
	if c.Reason != "" {
		f = append(f, "reason="+strconv.Quote(c.Reason))
	}
	if c.Exit {
		f = append(f, "exit")
	}
	if c.ProviderRetry {
		f = append(f, "provider-retry")
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"waiting", c.Waiting}, {"backs", c.Backs}, {"starting", c.Starting}, {"running", c.Running}, {"ok", c.OK}, {"pf", c.ProviderFailed}} {
		if d.v != 0 {
			f = append(f, fmt.Sprintf("%s=%+d", d.name, d.v))
		}
	}
	return strings.Join(f, " ")
}

// FormatTotals is the sums as a totals line writes them.
func FormatTotals(d job.Deltas) string {
	return fmt.Sprintf("waiting=%d backs=%d starting=%d running=%d ok=%d pf=%d",
		d.Waiting, d.Backs, d.Starting, d.Running, d.OK, d.ProviderFailed)
}

// Job is a script's job as its changes so far left it.
type Job struct {
	job.Current
	Reason string
	Totals job.Deltas // the sums of the changes, from waiting=1
}

// New is a script's job before its first event.
func New(s Script) *Job {
	return &Job{Current: job.Current{State: job.Waiting, Attempt: 1, MaxAttempts: s.MaxAttempts}, Totals: job.Deltas{Waiting: 1}}
}

// Apply applies an event as a store would and returns what it did.
func (j *Job) Apply(ev job.Event) (job.Change, bool) {
	c, ok := job.Apply(j.Current, ev)
	if !ok {
		return c, false
	}
	j.State, j.Attempt = c.To, c.Attempt
	if c.MaxAttempts != 0 {
		j.MaxAttempts = c.MaxAttempts
	}
	if c.To == job.Waiting || c.To.Ended() {
		j.Reason = c.Reason
	}
	t := &j.Totals
	t.Waiting += c.Waiting
	t.Backs += c.Backs
	t.Starting += c.Starting
	t.Running += c.Running
	t.OK += c.OK
	t.ProviderFailed += c.ProviderFailed
	return c, true
}

// Check reports a total that does not match the job's state: one job is
// counted waiting, starting or running exactly when it is so, and in a
// back item exactly when it waits after a retry.
func (j *Job) Check() error {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	want := job.Deltas{
		Waiting: b(j.State == job.Waiting), Backs: b(j.State == job.Waiting && j.Attempt > 1),
		Starting: b(j.State.Starting()), Running: b(j.State == job.Running),
		OK: j.Totals.OK, ProviderFailed: j.Totals.ProviderFailed,
	}
	// One outcome per attempt at most (a provider failure retries), and
	// one OK: an OK ends the job.
	if j.Totals != want || j.Totals.OK > 1 || j.Totals.OK+j.Totals.ProviderFailed > j.Attempt {
		return fmt.Errorf("%s attempt %d: totals %s do not count it (want %s, at most one outcome an attempt and one OK)",
			j.State, j.Attempt, FormatTotals(j.Totals), FormatTotals(want))
	}
	return nil
}
