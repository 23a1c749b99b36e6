package sim

import (
	"testing"

	"github.com/evalsched/evalsched/internal/sim/scenario"
)

func TestShippedSampledScenario(t *testing.T) {
	sc, err := scenario.LoadSampled("../../scenarios/sampled-strata.json")
	if err != nil {
		t.Fatal(err)
	}
	r := runSampled(sc, sc.Seed)
	t.Logf("%+v", r)
	if r.Ran >= r.Jobs || r.ContainerH >= r.FullContainerH {
		t.Errorf("sampling ran %d of %d jobs, %.0f of %.0f container-hours: saved nothing", r.Ran, r.Jobs, r.ContainerH, r.FullContainerH)
	}
	if r.HalfWidth > sc.Sampling.MOE {
		t.Errorf("stopped at half-width %v, more than moe %v", r.HalfWidth, sc.Sampling.MOE)
	}
	if again := runSampled(sc, sc.Seed); again != r {
		t.Errorf("same seed, other numbers:\n%+v\n%+v", r, again)
	}
}
