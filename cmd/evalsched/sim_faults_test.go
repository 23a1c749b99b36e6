package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/sim"
)

func TestSimFaultsFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown kind", []string{"sim", "--scenario", scenarioFile, "--faults", "crash,meteor"}, exitUsage, `--faults: unknown fault kind "meteor"`},
		{"summary with json", []string{"sim", "--scenario", scenarioFile, "--summary", "--json"}, exitUsage, "--summary and --json exclude each other"},
		{"usage lists the kinds", []string{"sim", "--help"}, exitOK, "crash, overlap, events, runtask, store, metrics, intake, provider"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(c.args...)
			if code != c.code || !strings.Contains(out+errs, c.want) {
				t.Errorf("exit %d, output %q%q; want exit %d and %q", code, out, errs, c.code, c.want)
			}
		})
	}
}

// One line per policy; the JSON totals carry the faults and the violations.
func TestSimFaultsOutput(t *testing.T) {
	args := []string{"sim", "--scenario", scenarioFile, "--policy", "dynamic", "--duration", "600", "--faults", "events,metrics", "--quiet"}
	_, out, errs := runCLI(append(args, "--summary")...)
	if !strings.HasPrefix(out, "small-behind-big seed=11 dynamic faults=") || strings.Count(out, "\n") != 1 ||
		!strings.Contains(out, "events=") || !strings.Contains(out, "(crash=0 ") {
		t.Errorf("summary %q (stderr %q); want one line with the faults by kind", out, errs)
	}
	_, out, _ = runCLI(append(args, "--json")...)
	var r sim.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Totals.FaultsInjected == 0 || !strings.Contains(out, `"invariant_violations": `) {
		t.Errorf("totals %+v; want faults_injected > 0 and invariant_violations", r.Totals)
	}
	_, out, _ = runCLI(args...)
	if !strings.Contains(out, "FAULTS INJECTED") || !strings.Contains(out, "invariant violations") {
		t.Errorf("table lacks the faults or the violations:\n%s", out)
	}
}
