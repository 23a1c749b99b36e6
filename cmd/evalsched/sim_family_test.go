package main

import (
	"encoding/json"
	"os"
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
	if l := fam.Lanes[0]; l.AnyCapWork < l.OracleWork || l.OracleBlock > l.OracleBar && l.AnyCapWork != l.OracleWork || l.ThroughputAny <= 0 {
		t.Errorf("lane 3: oracle %.1f work blocked %.3f (bar %.3f), the most of any cap %.1f (thr %.3f): want the oracle within its bar and at most the any-cap's work", l.OracleWork, l.OracleBlock, l.OracleBar, l.AnyCapWork, l.ThroughputAny)
	}
	if r.Totals.Succeeded != fam.Lanes[0].Succeeded {
		t.Errorf("replayed lane 3 finished %d jobs, the family run %d", r.Totals.Succeeded, fam.Lanes[0].Succeeded)
	}
	// --configured-concurrency writes the operator's setting into the lane's
	// file, and the lane runs differently with it.
	code, out, errs = runCLI("sim", "--family", "4", "--seed", "1", "--lane", "3", "--configured-concurrency", "--family-out", dir, "--json", "--quiet")
	if code != exitOK && code != exitFailed {
		t.Fatalf("configured: exit %d: %s", code, errs)
	}
	var conf struct {
		Lanes []sim.LaneResult `json:"lanes"`
	}
	if err := json.Unmarshal([]byte(out), &conf); err != nil || len(conf.Lanes) != 1 {
		t.Fatalf("configured: %v %.300s", err, out)
	}
	if conf.Lanes[0].Blocked >= fam.Lanes[0].Blocked {
		t.Errorf("configured lane 3 blocked %.3f, as drawn %.3f: want less", conf.Lanes[0].Blocked, fam.Lanes[0].Blocked)
	}
	data, err := os.ReadFile(filepath.Join(dir, "lane-3.json"))
	if err != nil || !strings.Contains(string(data), `"configured_concurrency": `) {
		t.Errorf("configured lane's file: %v, want configured_concurrency in it", err)
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
		{[]string{"--configured-concurrency", "--seed", "1"}, "--family must be at least 1"},
		{[]string{"--twin", "--seed", "1"}, "--twin needs --family"},
		{[]string{"--twin", "--scenario", scenarioFile}, "--twin needs --family"},
		{[]string{"--oracle-start", "--seed", "1"}, "--family must be at least 1"},
		{[]string{"--family", "4", "--seed", "1", "--twin", "--oracle-start"}, "--oracle-start and --twin exclude each other"},
	} {
		code, _, errs := runCLI(append([]string{"sim"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want usage error %q", c.args, code, errs, c.want)
		}
	}
}

// TestSimFamilyTwin: --twin prints a lane's twin bound, as JSON with
// --json, a table and the summary without.
func TestSimFamilyTwin(t *testing.T) {
	code, out, errs := runCLI("sim", "--family", "200", "--seed", "1", "--lane", "173", "--configured-concurrency", "--twin", "--json", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rs []sim.TwinResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 || rs[0].Lane != 173 || len(rs[0].Drops) != 1 || len(rs[0].Rows) != 10 {
		t.Fatalf("want lane 173's bound, one drop, 10 rows: %v %.300s", err, out)
	}
	code, out, errs = runCLI("sim", "--family", "200", "--seed", "1", "--lane", "173", "--configured-concurrency", "--twin", "--quiet")
	if code != exitOK || !strings.Contains(out, "lane 173: model-0 drops at") || !strings.Contains(out, "twin bound: 1 lane(s), 1 with a drop;") {
		t.Errorf("exit %d, output:\n%s%s", code, out, errs)
	}
}

// TestSimFamilyOracleStart: --oracle-start says, in the text and in the
// JSON, that the verdict is the ramp bound's.
func TestSimFamilyOracleStart(t *testing.T) {
	code, out, errs := runCLI("sim", "--family", "200", "--seed", "1", "--lane", "173", "--configured-concurrency", "--oracle-start", "--quiet")
	if code != exitOK || !strings.Contains(out, "family seed 1: dynamic started at each model's oracle cap (--oracle-start)") {
		t.Errorf("exit %d, output:\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI("sim", "--family", "200", "--seed", "1", "--lane", "173", "--configured-concurrency", "--oracle-start", "--json", "--quiet")
	var got struct {
		OracleStart bool             `json:"oracle_start"`
		Lanes       []sim.LaneResult `json:"lanes"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || !got.OracleStart || len(got.Lanes) != 1 || got.Lanes[0].Lane != 173 {
		t.Errorf("exit %d, %v: want oracle_start and lane 173: %.300s%s", code, err, out, errs)
	}
	_, out, _ = runCLI("sim", "--family", "200", "--seed", "1", "--lane", "173", "--configured-concurrency", "--json", "--quiet")
	if strings.Contains(out, "oracle_start") {
		t.Errorf("a plain family run says oracle_start: %.300s", out)
	}
}
