package scenario

import (
	"strings"
	"testing"
)

func TestParseSampledErrors(t *testing.T) {
	_, err := ParseSampled([]byte(`{"name":"x","seed":-1,"slots":0,"job_s":{"fixed":1},
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
