package limits

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCases runs the controller's cases in testdata/*.txt: a model, a
// state, and a series of passes, each with the decision it must take.
// Each case guards one behaviour, named by its comment, that a simulated
// lane once showed was needed; the case fails if the behaviour changes.
//
// The format, one directive a line ('#' starts a comment):
//
//	case NAME              starts a case (the comments above it say why)
//	config Field=V ...     Config fields over DefaultConfig
//	model Field=V ...      Model fields
//	state Field=V ...      State fields the case starts from
//	recent Field=V ...     appends a Sample to State.Recent
//	pass Field=V ...       an Input; Next runs, and its State carries on
//	refill At=T Load=N     the breaker holds the limit (State.Refill)
//	expect ACTION LIMIT [yield=N] [pace=N] [reason~TEXT]
//	                       the last pass's decision (LIMIT: the new limit)
//
// Times are offsets from the case's clock origin (-20s, 0s, 1m30s);
// durations are Go durations; a field left out is zero.
func TestCases(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in testdata (%v)", err)
	}
	for _, file := range files {
		for _, c := range readCases(t, file) {
			t.Run(filepath.Base(file)+"/"+c.name, c.run)
		}
	}
}

type dcase struct {
	name  string
	lines []cline
}

type cline struct {
	at   string // file:line, for the failure
	verb string
	args []string
}

func readCases(t *testing.T, file string) []dcase {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []dcase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		at := fmt.Sprintf("%s:%d", file, n)
		if fields[0] == "case" {
			if len(fields) != 2 {
				t.Fatalf("%s: case wants one name", at)
			}
			cases = append(cases, dcase{name: fields[1]})
			continue
		}
		if len(cases) == 0 {
			t.Fatalf("%s: %q before the first case", at, fields[0])
		}
		c := &cases[len(cases)-1]
		c.lines = append(c.lines, cline{at: at, verb: fields[0], args: fields[1:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func (c dcase) run(t *testing.T) {
	cfg := DefaultConfig()
	var (
		m      Model
		st     State
		last   Decision
		passed bool
	)
	for _, l := range c.lines {
		var err error
		switch l.verb {
		case "config":
			err = setFields(reflect.ValueOf(&cfg).Elem(), l.args)
		case "model":
			err = setFields(reflect.ValueOf(&m).Elem(), l.args)
		case "state":
			err = setFields(reflect.ValueOf(&st).Elem(), l.args)
		case "recent":
			var s Sample
			err = setFields(reflect.ValueOf(&s).Elem(), l.args)
			st.Recent = append(st.Recent, s)
		case "pass":
			var i Input
			if err = setFields(reflect.ValueOf(&i).Elem(), l.args); err == nil {
				last, passed = Next(cfg, m, st, i), true
				st = last.State
			}
		case "refill":
			var r struct {
				At   time.Time
				Load int
			}
			if err = setFields(reflect.ValueOf(&r).Elem(), l.args); err == nil {
				st = st.Refill(cfg, r.At, r.Load)
				last, passed = Decision{State: st, Action: "refill"}, true
			}
		case "expect":
			if !passed {
				t.Fatalf("%s: expect before any pass", l.at)
			}
			if msg := check(last, l.args); msg != "" {
				t.Errorf("%s: %s; got %s to %d yield %d pace %d (%s)", l.at, msg, last.Action, last.State.Limit, last.Yield, last.Pace, last.Reason)
			}
		default:
			err = fmt.Errorf("unknown directive %q", l.verb)
		}
		if err != nil {
			t.Fatalf("%s: %v", l.at, err)
		}
	}
}

// check compares a decision with an expect line's ACTION LIMIT [k=v...].
func check(d Decision, args []string) string {
	if len(args) < 2 {
		return "expect wants ACTION LIMIT"
	}
	want, err := strconv.Atoi(args[1])
	if err != nil {
		return fmt.Sprintf("limit %q: %v", args[1], err)
	}
	if string(d.Action) != args[0] || d.State.Limit != want {
		return fmt.Sprintf("want %s to %d", args[0], want)
	}
	for _, kv := range args[2:] {
		if k, v, ok := strings.Cut(kv, "~"); ok && k == "reason" {
			if !strings.Contains(d.Reason, strings.ReplaceAll(v, "_", " ")) {
				return fmt.Sprintf("want a reason naming %q", v)
			}
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Sprintf("%s: %v", kv, err)
		}
		switch k {
		case "yield":
			if d.Yield != n {
				return fmt.Sprintf("want yield %d", n)
			}
		case "pace":
			if d.Pace != n {
				return fmt.Sprintf("want pace %d", n)
			}
		default:
			return fmt.Sprintf("unknown expectation %q", kv)
		}
	}
	return ""
}

// setFields sets a struct's fields from Field=V pairs.
func setFields(v reflect.Value, args []string) error {
	for _, kv := range args {
		k, s, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q is not Field=V", kv)
		}
		f := v.FieldByName(k)
		if !f.IsValid() || !f.CanSet() {
			return fmt.Errorf("%s has no field %s", v.Type(), k)
		}
		var err error
		switch f.Interface().(type) {
		case time.Time:
			var off time.Duration
			if off, err = time.ParseDuration(s); err == nil {
				f.Set(reflect.ValueOf(t0.Add(off)))
			}
		case time.Duration:
			var dur time.Duration
			if dur, err = time.ParseDuration(s); err == nil {
				f.SetInt(int64(dur))
			}
		case int:
			var n int
			if n, err = strconv.Atoi(s); err == nil {
				f.SetInt(int64(n))
			}
		case float64:
			var x float64
			if x, err = strconv.ParseFloat(s, 64); err == nil {
				f.SetFloat(x)
			}
		case bool:
			var b bool
			if b, err = strconv.ParseBool(s); err == nil {
				f.SetBool(b)
			}
		default:
			err = fmt.Errorf("type %s not supported", f.Type())
		}
		if err != nil {
			return fmt.Errorf("%s: %v", kv, err)
		}
	}
	return nil
}
