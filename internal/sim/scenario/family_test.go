package scenario

import (
	"math"
	"reflect"
	"testing"
)

// TestFamilyLanesDeterministic: lane k of a seed is the same whatever else
// is drawn, and its scenario file reads back to the same lane.
func TestFamilyLanesDeterministic(t *testing.T) {
	a := family(1, 8)
	b := family(1, 3)
	for k := range b {
		if !reflect.DeepEqual(a[k], b[k]) {
			t.Fatalf("lane %d differs between a family of 8 and one of 3", k)
		}
		if !reflect.DeepEqual(FamilyLane(1, k), a[k]) {
			t.Fatalf("lane %d differs between FamilyLane and family", k)
		}
	}
	if reflect.DeepEqual(FamilyLane(1, 0), FamilyLane(2, 0)) {
		t.Fatal("lane 0 of seeds 1 and 2 are equal")
	}
	for k, sc := range a {
		data, err := sc.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(data)
		if err != nil {
			t.Fatalf("lane %d's file does not parse: %v\n%s", k, err, data)
		}
		if !reflect.DeepEqual(back, sc) {
			t.Fatalf("lane %d's file reads back different:\n got %+v\nwant %+v", k, back, sc)
		}
	}
	// A lane whose operator configured the concurrency carries it in its
	// file, and only policy dynamic's store reads it.
	sc := FamilyLane(1, 3)
	ConfigureConcurrency(sc)
	data, err := sc.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil || !reflect.DeepEqual(back, sc) || back.Models[0].ConfiguredConcurrency != sc.Models[0].ProviderConcurrency {
		t.Fatalf("configured lane reads back %+v, %v; want %+v", back, err, sc)
	}
}

// TestFamilyDistributions: every drawn quantity is within the range
// scenarios/README.md publishes, and each kind of lane occurs.
func TestFamilyDistributions(t *testing.T) {
	const n = 400
	var multi, drops, rises, bursts, small int
	for k, sc := range family(20261201, n) {
		in := func(what string, v, lo, hi float64) {
			t.Helper()
			if v < lo || v > hi || math.IsNaN(v) {
				t.Errorf("lane %d: %s = %g, want within %g..%g", k, what, v, lo, hi)
			}
		}
		in("models", float64(len(sc.Models)), 1, 3)
		if len(sc.Models) > 1 {
			multi++
		}
		in("metric_delay_s", sc.MetricDelayS, famDelayMin, famDelayMax)
		in("container_start_s.min", sc.ContainerStartS.Min, famStartMin, famStartMax)
		in("container_start_s.max", sc.ContainerStartS.Max, sc.ContainerStartS.Min, famStartMax)
		in("duration_s", float64(sc.DurationS), famMinDurationS, famMaxDurationS)
		for _, m := range sc.Models {
			conc := float64(m.ProviderConcurrency)
			in("provider_concurrency", conc, famConcMin, famConcMax)
			in("target_depth", m.TargetDepth, math.Max(famTargetFloor, math.Floor(famTargetMin*conc)), math.Max(famTargetFloor, math.Ceil(famTargetMax*conc)))
			in("call_s median", m.CallS.Median, famCallMin-0.05, famCallMax+0.05)
			in("call_s p90", m.CallS.P90, m.CallS.Median, 40.05)
			for _, b := range ErrorBursts(sc) {
				in("burst length", b.ToS-b.FromS, famBurstSMin, famBurstSMax)
				in("burst start", b.FromS/float64(sc.DurationS), 0.25, 0.5)
			}
			for _, c := range m.Changes {
				switch {
				case c.ErrorRate != nil && *c.ErrorRate > 0:
					bursts++
					in("error_rate", *c.ErrorRate, famBurstMin, famBurstMax)
				case c.ProviderConcurrency != nil && *c.ProviderConcurrency < m.ProviderConcurrency:
					drops++
					in("drop share", float64(*c.ProviderConcurrency)/conc, famDropMin-0.01, famDropMax+0.01)
				case c.ProviderConcurrency != nil && *c.ProviderConcurrency > m.ProviderConcurrency:
					rises++
					in("rise factor", float64(*c.ProviderConcurrency)/conc, famRiseMin-0.01, famRiseMax+0.01)
				}
			}
		}
		for _, b := range sc.Batches {
			in("calls median", b.Calls.Median, famCallsMin, famCallsMax)
			in("think_s median", b.ThinkS.Median, famThinkMin-0.05, famThinkMax+0.05)
		}
		small += len(SmallBatches(sc))
		if len(sc.Batches) < len(sc.Models) {
			t.Errorf("lane %d: %d batches for %d models", k, len(sc.Batches), len(sc.Models))
		}
	}
	for what, got := range map[string]int{"multi-model lanes": multi, "drops": drops, "rises": rises, "bursts": bursts, "small batches": small} {
		if got < n/20 {
			t.Errorf("%s: %d in %d lanes, want at least %d", what, got, n, n/20)
		}
	}
}
