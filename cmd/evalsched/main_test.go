package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/sim"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

const scenarioFile = "../../scenarios/small-behind-big.json"

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, exitUsage, "usage: evalsched <command>"},
		{"unknown command", []string{"nope"}, exitUsage, `unknown command "nope"`},
		{"help", []string{"help"}, exitOK, "sim"},
		{"no scenario", []string{"sim"}, exitUsage, "--scenario is required"},
		{"bad policy", []string{"sim", "--scenario", scenarioFile, "--policy", "fifo"}, exitUsage, `unknown policy "fifo"`},
		{"bad flag", []string{"sim", "--scenari", scenarioFile}, exitUsage, "flag provided but not defined"},
		{"trace without json", []string{"sim", "--scenario", scenarioFile, "--trace"}, exitUsage, "--trace needs --json"},
		{"stray argument", []string{"sim", "--scenario", scenarioFile, "extra"}, exitUsage, `unexpected argument "extra"`},
		{"long duration", []string{"sim", "--scenario", scenarioFile, "--duration", "99999999"}, exitUsage, "--duration must be within 1..604800"},
		{"missing file", []string{"sim", "--scenario", "nope.json"}, exitFailed, "scenario: open nope.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(c.args...)
			if code != c.code || !strings.Contains(out+errs, c.want) {
				t.Errorf("exit %d, output %q%q; want exit %d and %q", code, out, errs, c.code, c.want)
			}
		})
	}
}

func TestBadScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(path, []byte(`{"name": "x", "seed": 1, "duration_s": 60, "global_max_running": 1,
	  "container_start_s": {"fixed": 1}, "batches": [],
	  "models": [{"name": "m", "provider_concurrency": 1, "call_s": {"medain": 1}, "target_depth": 1, "static_cap": 1}]}`), 0o644)
	code, _, errs := runCLI("sim", "--scenario", path)
	if code != exitFailed || !strings.Contains(errs, `scenario: models[0].call_s: unknown field "medain"`) {
		t.Errorf("exit %d, stderr %q; want 1 naming the field", code, errs)
	}
}

func TestJSON(t *testing.T) {
	code, out, errs := runCLI("sim", "--scenario", scenarioFile, "--duration", "600", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var all []sim.Result
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != len(sim.AllPolicies) {
		t.Fatalf("--policy all: want an array of %d results, got %v (%.200s)", len(sim.AllPolicies), err, out)
	}
	if len(all[2].OracleCaps) != len(all[2].Models) {
		t.Errorf("oracle: caps %v for %d models", all[2].OracleCaps, len(all[2].Models))
	}
	for i, p := range sim.AllPolicies {
		if all[i].Policy != p || all[i].DurationS != 600 || all[i].Totals.Lost != 0 || all[i].Totals.DoubleLaunched != 0 {
			t.Errorf("result %d: policy %s duration %d totals %+v", i, all[i].Policy, all[i].DurationS, all[i].Totals)
		}
	}
	code, out, _ = runCLI("sim", "--scenario", scenarioFile, "--duration", "600", "--json", "--trace", "--policy", "static", "--seed", "5")
	var one sim.Result
	if err := json.Unmarshal([]byte(out), &one); code != exitOK || err != nil {
		t.Fatalf("--policy static: want one object, got exit %d, %v", code, err)
	}
	if one.Seed != 5 || len(one.Models["claude-sonnet-5"].Passes) != 60 {
		t.Errorf("seed %d, %d passes; want seed 5 and 60 passes", one.Seed, len(one.Models["claude-sonnet-5"].Passes))
	}
}

func TestTableAndReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.html")
	code, out, errs := runCLI("sim", "--scenario", scenarioFile, "--duration", "600", "--report", report)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"scenario small-behind-big", "dynamic", "static", "unbounded", "backlog utilization", "acme/delivery/small", "double launched", "report: " + report} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if errs != "" {
		t.Errorf("stderr %q, want nothing (not a terminal)", errs)
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{"<!DOCTYPE html>", "<svg", "<polyline", "claude-sonnet-5", "starts by tier", "First start of each batch"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "<link", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("report contains %q: it must be self-contained", bad)
		}
	}
	if len(html) > 2<<20 {
		t.Errorf("report is %d bytes, want it small", len(html))
	}
}
