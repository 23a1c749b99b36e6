package faults

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Set
		err  string
	}{
		{"", 0, ""},
		{"none", 0, ""},
		{"all", All, ""},
		{"crash", 1 << Crash, ""},
		{"events, runtask", 1<<Events | 1<<RunTask, ""},
		{"store,store", 1 << Store, ""},
		{"crash,bogus", 0, `unknown fault kind "bogus"`},
		{"crash,", 0, `unknown fault kind ""`},
	} {
		got, err := Parse(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Parse(%q): got error %v, want one containing %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if s := Set(1<<Events | 1<<RunTask).String(); s != "events,runtask" {
		t.Errorf("String() = %q, want events,runtask", s)
	}
}
