package main

import (
	"bytes"
	"strings"
	"testing"
)

// A load that breaks a rule is a usage error naming the flag, before
// anything is started.
func TestCostRefusesABadLoad(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--active-models", "300"}, "active-models 300 must be in 1..models (241)"},
		{[]string{"--pass-interval", "0s"}, "pass-interval 0s must be at least 1s"},
		{[]string{"--jobs-per-week", "-1"}, "jobs-per-week -1 must be positive"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"cost"}, c.args...), &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut.String(), exitUsage, c.want)
		}
	}
}
