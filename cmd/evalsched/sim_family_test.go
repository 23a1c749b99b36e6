package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/sim"
)

// TestSimFamilyLane: --lane runs one lane of the family and --family-out
// writes its scenario file, which --scenario replays to the same numbers.
func TestSimFamilyLane(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("sim", "--family", "4", "--seed", "1", "--lane", "3", "--family-out", dir, "--json", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var fam struct {
		Summary sim.FamilySummary `json:"summary"`
		Lanes   []sim.LaneResult  `json:"lanes"`
	}
	if err := json.Unmarshal([]byte(out), &fam); err != nil || len(fam.Lanes) != 1 || fam.Lanes[0].Lane != 3 || fam.Summary.Lanes != 1 {
		t.Fatalf("want one lane, lane 3: %v %.300s", err, out)
	}
	code, out, errs = runCLI("sim", "--scenario", filepath.Join(dir, "lane-3.json"), "--policy", "dynamic", "--json")
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, errs)
	}
	var r sim.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Totals.Succeeded != fam.Lanes[0].Succeeded {
		t.Errorf("replayed lane 3 finished %d jobs, the family run %d", r.Totals.Succeeded, fam.Lanes[0].Succeeded)
	}
}

func TestSimFamilyUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lane", "1", "--seed", "1"}, "--family must be at least 1"},
		{[]string{"--family", "4", "--seed", "1", "--lane", "4"}, "--lane must be within 0..3"},
		{[]string{"--family", "4"}, "--family needs --seed"},
		{[]string{"--family", "4", "--seed", "1", "--scenario", scenarioFile}, "exclude each other"},
		{[]string{"--family", "4", "--seed", "1", "--workers", "3"}, "--workers must be 1 or 2"},
	} {
		code, _, errs := runCLI(append([]string{"sim"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want usage error %q", c.args, code, errs, c.want)
		}
	}
}
