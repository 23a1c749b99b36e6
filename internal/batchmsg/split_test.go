package batchmsg

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// splitFields is a batch's fields as submit writes them.
func splitFields(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"version": 1, "account": "acme", "project": "search", "batch": "b17", "model": "gpt-5.5", "timeout_seconds": 600})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jobLines writes n jobs, each with an env value of about size bytes.
func jobLines(t *testing.T, rng *rand.Rand, n, size int) ([][]byte, []Job) {
	t.Helper()
	raws := make([][]byte, n)
	jobs := make([]Job, n)
	for i := range n {
		j := Job{Key: fmt.Sprintf("job-%05d", i)}
		if size > 0 {
			j.Env = map[string]string{"PROMPT": strings.Repeat("x", 1+rng.IntN(size))}
		}
		raw, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		raws[i], jobs[i] = raw, j
	}
	return raws, jobs
}

// Split → Parse gives the batch back: every part is a message Parse
// accepts, numbered 1..parts (none when there is one), under the contract's
// limits, and the parts' jobs in order are the jobs split.
func TestSplitRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 5))
	for _, tc := range []struct {
		name      string
		n, size   int
		wantParts int // 0: more than one
	}{
		{"one part", 3, 100, 1},
		{"by bytes", 1000, 7000, 0},         // ~3.5 MB of jobs (an env is at most 8,192 characters)
		{"by job count", MaxJobs + 1, 0, 2}, // tiny jobs: MaxJobs a part
		{"exactly MaxJobs", MaxJobs, 0, 1},  // and not one more part
		{"mixed", 2 * MaxJobs, 120, 0},      // both limits in play
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := splitFields(t)
			raws, want := jobLines(t, rng, tc.n, tc.size)
			parts, err := Split(fields, raws)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantParts > 0 && len(parts) != tc.wantParts || tc.wantParts == 0 && len(parts) < 2 {
				t.Fatalf("got %d parts, want %d (0: several)", len(parts), tc.wantParts)
			}
			var got []Job
			next := 0
			for k, p := range parts {
				if len(p.Body) > MaxMessageBytes || p.To-p.From > MaxJobs || p.From != next || p.To <= p.From {
					t.Fatalf("part %d: %d bytes, jobs [%d:%d) after %d", k+1, len(p.Body), p.From, p.To, next)
				}
				next = p.To
				m, err := Parse(p.Body, DefaultConfig())
				if err != nil {
					t.Fatalf("part %d: Parse: %v", k+1, err)
				}
				if wantPart, wantParts := k+1, len(parts); len(parts) == 1 {
					if m.Part != 0 || m.Parts != 0 {
						t.Errorf("a batch of one message: got part %d of %d, want no part fields", m.Part, m.Parts)
					}
				} else if m.Part != wantPart || m.Parts != wantParts {
					t.Errorf("got part %d of %d, want %d of %d", m.Part, m.Parts, wantPart, wantParts)
				}
				if m.ID() != "acme/search/b17" || m.Model != "gpt-5.5" || m.TimeoutSeconds != 600 {
					t.Errorf("part %d: the batch's fields came back as %s %q %d", k+1, m.ID(), m.Model, m.TimeoutSeconds)
				}
				got = append(got, m.Jobs...)
			}
			if next != len(raws) || !reflect.DeepEqual(got, want) {
				t.Errorf("the parts' %d jobs are not the %d split, in order", len(got), len(want))
			}
			// Fewest parts: no two neighbours would fit in one message.
			for k := 1; k < len(parts); k++ {
				a, b := parts[k-1], parts[k]
				if a.To-a.From < MaxJobs && len(a.Body)+len(raws[b.From])+1 <= MaxMessageBytes {
					t.Errorf("part %d ends before job %d, which fits in it", k, b.From)
				}
			}
		})
	}
}

// Sizes Split refuses, by name and number; what Parse refuses it leaves to
// Parse.
func TestSplitRefuses(t *testing.T) {
	fields := splitFields(t)
	huge := []byte(`{"key":"k","env":{"A":"` + strings.Repeat("x", MaxJobBytes(fields)) + `"}}`)
	if _, err := Split(fields, [][]byte{[]byte(`{"key":"a"}`), huge}); err == nil || !strings.Contains(err.Error(), "job 1 of") {
		t.Errorf("a job too large: got %v, want it named", err)
	}
	fits := []byte(`{"key":"k","env":{"A":"` + strings.Repeat("x", MaxJobBytes(fields)-len(`{"key":"k","env":{"A":""}}`)) + `"}}`)
	if len(fits) != MaxJobBytes(fields) {
		t.Fatalf("test job of %d bytes, want %d", len(fits), MaxJobBytes(fields))
	}
	if parts, err := Split(fields, [][]byte{fits}); err != nil || len(parts) != 1 {
		t.Errorf("a job of MaxJobBytes: got %d parts, %v; want it to fit", len(parts), err)
	}
	// MaxParts, on a small scale: 3 jobs a part, at most 2 parts.
	raws, _ := jobLines(t, rand.New(rand.NewPCG(1, 1)), 7, 0)
	_, err := split(fields, raws, MaxMessageBytes, 3, 2)
	var pe *PartsError
	if !errors.As(err, &pe) || pe.Parts != 3 || pe.Max != 2 {
		t.Errorf("too many parts: got %v, want a PartsError of 3 parts over 2", err)
	}
	for _, bad := range []string{"", "{}", "[1]", `{"a":1`} {
		if _, err := Split([]byte(bad), raws); err == nil {
			t.Errorf("fields %q: got no error", bad)
		}
	}
	if parts, err := Split(fields, nil); err != nil || len(parts) != 0 {
		t.Errorf("no jobs: got %v, %v; want no parts", parts, err)
	}
}
