package batchmsg

import (
	"cmp"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks Parse's invariants on any input: it never panics; every
// rejection consists of *Error values naming a field and a rule (the intake
// dead-letters on them); JSON that encoding/json calls invalid is rejected,
// and only such JSON is rejected as invalid JSON; an accepted message keeps
// every limit, reads as encoding/json reads it, and written back as JSON
// parses to the same Message.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"good", "bad"} {
		for _, data := range readDir(f, dir) {
			if len(data) <= 16<<10 { // big seeds slow every run down
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, cfg3)
		valid := json.Valid(data)
		if err != nil {
			errs := Errors(err)
			if len(errs) == 0 || len(errs) > maxErrors {
				t.Fatalf("Parse: %d *Error in %v", len(errs), err)
			}
			var lines []string
			for _, e := range errs {
				if e.Field == "" || e.Rule == "" {
					t.Fatalf("Parse: error without field or rule: %#v", e)
				}
				if valid && strings.HasPrefix(e.Rule, "invalid JSON") {
					t.Fatalf("Parse: %v, but encoding/json finds the JSON valid", e)
				}
				lines = append(lines, e.Error())
			}
			if err.Error() != strings.Join(lines, "\n") {
				t.Fatalf("Parse returned something besides *Error: %q", err)
			}
			return
		}
		if !valid {
			t.Fatalf("Parse accepted JSON that encoding/json finds invalid: %q", data)
		}
		if m.Version != Version || len(m.Jobs) < 1 || len(m.Jobs) > MaxJobs {
			t.Fatalf("accepted version %d with %d jobs", m.Version, len(m.Jobs))
		}
		for _, j := range m.Jobs {
			if n := OverrideSize(m, j); n > MaxOverrideChars || n != marshaledSize(t, m, j) {
				t.Fatalf("job %q: OverrideSize %d, JSON %d", j.Key, n, marshaledSize(t, m, j))
			}
		}
		if s := m.Summary(); strings.ContainsAny(s, "\n\r") {
			t.Fatalf("Summary has a line break: %q", s)
		}

		var std Message
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		std.TaskDefinition = cmp.Or(std.TaskDefinition, cfg3.DefaultTaskDefinition)
		std.MaxAttempts = cmp.Or(std.MaxAttempts, cfg3.DefaultMaxAttempts)
		for i := range std.Jobs {
			if len(std.Jobs[i].Env) == 0 {
				std.Jobs[i].Env = nil
			}
		}
		if !reflect.DeepEqual(m, std) {
			t.Fatalf("Parse and encoding/json read different messages:\n%+v\n%+v", m, std)
		}

		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Parse(again, cfg3)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", again, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, m2)
		}
	})
}
