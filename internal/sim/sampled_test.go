package sim

import (
	"strings"
	"testing"
)

func TestShippedSampledScenario(t *testing.T) {
	sc, err := LoadSampledScenario("../../scenarios/sampled-strata.json")
	if err != nil {
		t.Fatal(err)
	}
	r := RunSampled(sc, sc.Seed)
	t.Logf("%+v", r)
	if r.Ran >= r.Jobs || r.ContainerH >= r.FullContainerH {
		t.Errorf("sampling ran %d of %d jobs, %.0f of %.0f container-hours: saved nothing", r.Ran, r.Jobs, r.ContainerH, r.FullContainerH)
	}
	if r.HalfWidth > sc.Sampling.MOE {
		t.Errorf("stopped at half-width %v, more than moe %v", r.HalfWidth, sc.Sampling.MOE)
	}
	if again := RunSampled(sc, sc.Seed); again != r {
		t.Errorf("same seed, other numbers:\n%+v\n%+v", r, again)
	}
}

func TestParseSampledScenarioErrors(t *testing.T) {
	_, err := ParseSampledScenario([]byte(`{"name":"x","seed":-1,"slots":0,"job_s":{"fixed":1},
		"sampling":{"moe":0.9,"confidence":0.99,"alpha":1},"strata":[{"name":"a","jobs":1,"pass_rate":1.5},{"name":"a","jobs":1}]}`))
	want := []string{
		"scenario: seed: must not be negative, got -1",
		"scenario: slots: must be within 1..200000, got 0",
		`scenario: sampling: unknown field "alpha"`,
		"scenario: strata[0].pass_rate: must be within 0..1, got 1.5",
		`scenario: strata[1].name: "a" is already the name of strata[0]`,
		"scenario: strata[1].pass_rate: required",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
