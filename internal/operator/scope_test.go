package operator

import (
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestParseScope(t *testing.T) {
	for _, c := range []struct {
		arg   string
		scope scheduler.Scope
		pin   string
	}{
		{"acme", scheduler.Scope{Account: "acme"}, "account#acme"},
		{"acme/search", scheduler.Scope{Account: "acme", Project: "search"}, "project#acme/search"},
		{"acme/search/b/17", scheduler.Scope{Account: "acme", Project: "search", Batch: "b/17"}, "batch#acme/search/b/17"},
	} {
		scope, pin, err := ParseScope(c.arg)
		if err != nil || scope != c.scope || pin != c.pin {
			t.Errorf("ParseScope(%q) = %+v, %q, %v; want %+v, %q", c.arg, scope, pin, err, c.scope, c.pin)
		}
	}
	for arg, want := range map[string]string{
		"project#acme/search": "pin item's form",
		"acme//b":             "empty name",
		"/search":             "empty name",
	} {
		if _, _, err := ParseScope(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseScope(%q) = %v, want an error saying %q", arg, err, want)
		}
	}
}
