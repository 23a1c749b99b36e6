package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimSampledShipped(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"sim-sampled", "--scenario", "../../scenarios/sampled-strata.json", "--seeds", "2"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"seeds 1..2", "jobs (mean)", "container-hours", "held the true pass rate in 2 of 2 seeds"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"sim-sampled", "--scenario", "../../scenarios/sampled-strata.json", "--seeds", "1", "--seed", "5", "--json"}, &out, &errb); code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, errb.String())
	}
	var rep struct {
		FirstSeed int64 `json:"first_seed"`
		Runs      []struct {
			Ran, Jobs int
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.FirstSeed != 5 || len(rep.Runs) != 1 || rep.Runs[0].Ran >= rep.Runs[0].Jobs {
		t.Errorf("--json: %+v, %v\n%s", rep, err, out.String())
	}
}

// TestSimSampledExitsOneBelowConfidence: a batch made to miss (two strata
// of 500, one near 0 %, at ±0.3 with 50 % confidence and one result per
// stratum) whose interval, on seed 210, does not hold the true rate: one
// seed, coverage 0 < 0.5, exit 1 naming both.
func TestSimSampledExitsOneBelowConfidence(t *testing.T) {
	f := filepath.Join(t.TempDir(), "miss.json")
	os.WriteFile(f, []byte(`{"name":"miss","seed":1,"slots":1,"job_s":{"fixed":10},
		"sampling":{"moe":0.3,"confidence":0.5,"min_per_stratum":1},
		"strata":[{"name":"a","jobs":500,"pass_rate":0.02},{"name":"b","jobs":500,"pass_rate":0.5}]}`), 0o600)
	var out, errb bytes.Buffer
	code := run([]string{"sim-sampled", "--scenario", f, "--seeds", "1", "--seed", "210"}, &out, &errb)
	if code != exitFailed || !strings.Contains(errb.String(), "coverage 0.000 is below the stated confidence 0.5") {
		t.Errorf("exit %d, stderr %q; want 1 and the coverage named", code, errb.String())
	}
}

func TestSimSampledUsage(t *testing.T) {
	for _, args := range [][]string{{"sim-sampled"}, {"sim-sampled", "--scenario", "x", "--seeds", "0"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"sim-sampled", "--scenario", "no-such.json"}, &out, &errb); code != exitFailed {
		t.Errorf("missing file: exit %d, want %d", code, exitFailed)
	}
}

// TestSimSampledReplications: --replications runs the harness and prints
// the misses at the stop and at any look with their Monte-Carlo error and
// the fixed random sample beside the jobs run; a scenario whose
// duration tracks its outcome parses its factor and window.
func TestSimSampledReplications(t *testing.T) {
	f := filepath.Join(t.TempDir(), "rare.json")
	os.WriteFile(f, []byte(`{"name":"rare","seed":1,"slots":20,"window":20,"fail_duration_factor":3,
		"job_s":{"median":240,"p90":600},
		"sampling":{"moe":0.05,"confidence":0.9,"min_per_stratum":10},
		"strata":[{"name":"a","jobs":2000,"pass_rate":0.02},{"name":"b","jobs":500,"pass_rate":0.9}]}`), 0o600)
	var out, errb bytes.Buffer
	if code := run([]string{"sim-sampled", "--scenario", f, "--replications", "20"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"20 replications from seed 1", "failures ×3", "window 20", "at the stop 0.00% ± 0.00", "fixed random sample for ±0.05 at any rate: 245"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if code := run([]string{"sim-sampled", "--scenario", f, "--replications", "-1"}, &out, &errb); code != exitUsage {
		t.Errorf("--replications -1: exit %d, want %d", code, exitUsage)
	}
}
