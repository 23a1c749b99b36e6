package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestHelpExitsZeroEverywhere: -h prints the command's usage and exits 0
// on every subcommand (flag.ErrHelp: help asked for is not an error);
// status says what it shows, resume describes resume.
func TestHelpExitsZeroEverywhere(t *testing.T) {
	for _, c := range commands {
		_, stderr, code := cli(t, c.name, "-h")
		if code != exitOK || !strings.Contains(stderr, "usage: evalsched "+c.name) {
			t.Errorf("%s -h: exit %d, %q", c.name, code, stderr)
		}
	}
	if _, stderr, _ := cli(t, "status", "-h"); !strings.Contains(stderr, "Per model:") {
		t.Errorf("status -h has no description:\n%s", stderr)
	}
	if _, stderr, _ := cli(t, "resume", "-h"); strings.Contains(stderr, "allow-empty") || strings.Contains(stderr, "Stops admitting") {
		t.Errorf("resume -h describes pause:\n%s", stderr)
	}
}

// TestPinSaysWhenAndNumbers: pin prints the time a pin lapses, not the
// duration given; --json gives the tier as a number; both kinds of bad
// --expires (a duration, a time) are usage errors with one exit code.
func TestPinSaysWhenAndNumbers(t *testing.T) {
	withTables(t)
	out, stderr, code := cli(t, "pin", "project#acme/search", "0", "--expires", "90m")
	if code != exitOK || !regexp.MustCompile(`until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ;`).MatchString(out) || strings.Contains(out, "90m") {
		t.Errorf("pin --expires 90m: exit %d, %q %q; want the time it lapses", code, out, stderr)
	}
	out, _, _ = cli(t, "pin", "project#acme/search", "0", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if tier, ok := res["tier"].(float64); !ok || tier != 0 {
		t.Errorf("pin --json: tier %#v, want the number 0", res["tier"])
	}
	for _, bad := range []string{"-5m", "2000-01-01T00:00:00Z"} {
		if _, stderr, code := cli(t, "pin", "project#acme/search", "1", "--expires", bad); code != exitUsage || !strings.Contains(stderr, "not in the future") {
			t.Errorf("--expires %s: exit %d, %q; want %d and the rule", bad, code, stderr, exitUsage)
		}
	}
}
