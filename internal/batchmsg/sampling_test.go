package batchmsg

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/sampling"
)

func sampled(samplingJSON, jobsJSON string) []byte {
	return []byte(`{"version":1,"account":"acme","project":"p","batch":"b","model":"m",` +
		`"sampling":` + samplingJSON + `,"jobs":` + jobsJSON + `}`)
}

func TestParseSampling(t *testing.T) {
	jobs := `[{"key":"q1","stratum":"math/hard"},{"key":"q2","stratum":"math/easy","model":"m"}]`
	for _, tc := range []struct {
		name string
		data []byte
		want *sampling.Params
		errs []string
	}{
		{"full", sampled(`{"moe":0.015,"confidence":0.99,"min_per_stratum":50}`, jobs),
			&sampling.Params{MOE: 0.015, Confidence: 0.99, MinPerStratum: 50}, nil},
		{"default min", sampled(`{"confidence":0.95,"moe":2e-2}`, jobs),
			&sampling.Params{MOE: 0.02, Confidence: 0.95, MinPerStratum: sampling.DefaultMinPerStratum}, nil},
		{"null is absent", sampled(`null`, `[{"key":"q1"}]`), nil, nil},
		{"window", sampled(`{"moe":0.015,"confidence":0.99,"window":500}`, jobs),
			&sampling.Params{MOE: 0.015, Confidence: 0.99, MinPerStratum: sampling.DefaultMinPerStratum, Window: 500}, nil},
		{"ranges", sampled(`{"moe":0,"confidence":1,"min_per_stratum":0,"window":-1}`, jobs), nil, []string{
			"sampling.moe: 0 is outside 0.001..0.5",
			"sampling.confidence: 1 is outside 0.5..0.999",
			"sampling.min_per_stratum: 0 is outside 1..10000",
			"sampling.window: -1 is outside 0..1000000",
		}},
		{"types and fields", sampled(`{"moe":"1%","confidence":0.9,"min_per_stratum":1.5,"alpha":0.01}`, jobs), nil, []string{
			"sampling.moe: must be a number, not a string",
			"sampling.min_per_stratum: 1.5 is not an integer",
			`sampling: unknown field "alpha"`,
		}},
		{"not an object", sampled(`0.015`, jobs), nil, []string{"sampling: must be an object, not a number"}},
		{"stratum required", sampled(`{"moe":0.1,"confidence":0.9}`, `[{"key":"q1"}]`), nil,
			[]string{"jobs[0].stratum: required in a sampled batch"}},
		{"one model", sampled(`{"moe":0.1,"confidence":0.9}`, `[{"key":"q1","stratum":"s","model":"other"}]`), nil,
			[]string{"jobs[0].model: a sampled batch runs one model: must be absent or the message's model"}},
		{"stratum bad name", sampled(`{"moe":0.1,"confidence":0.9}`, `[{"key":"q1","stratum":"a b"}]`), nil,
			[]string{`jobs[0].stratum: "a b" has characters outside A-Z a-z 0-9 . _ : / -`}},
		{"stratum without sampling", []byte(`{"version":1,"account":"a","project":"p","batch":"b","model":"m","jobs":[{"key":"q","stratum":"s"}]}`), nil,
			[]string{"jobs[0].stratum: only in a sampled batch (the message has no sampling)"}},
		{"model required", []byte(`{"version":1,"account":"a","project":"p","batch":"b","sampling":{"moe":0.1,"confidence":0.9},"jobs":[{"key":"q","stratum":"s","model":"m"}]}`), nil,
			[]string{"model: required in a sampled batch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.data, cfg3)
			var got []string
			for _, e := range Errors(err) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.errs, "\n"))
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(m.Sampling, tc.want) {
				t.Errorf("Sampling = %+v, want %+v", m.Sampling, tc.want)
			}
			// The message writes back to itself, and the store gets it.
			back, _ := json.Marshal(m)
			if m2, err := Parse(back, cfg3); err != nil || !reflect.DeepEqual(m2, m) {
				t.Errorf("round trip of %s: %+v, %v", back, m2, err)
			}
			if got := m.Summary(); tc.want != nil && !strings.HasSuffix(got, fmt.Sprintf(", sampled to ±%g at %g%%", tc.want.MOE, tc.want.Confidence*100)) {
				t.Errorf("Summary = %q, says nothing of the sampling", got)
			}
			spec := m.Spec()
			if !reflect.DeepEqual(spec.Sampling, tc.want) {
				t.Errorf("Spec: sampling %+v", spec.Sampling)
			}
			if tc.want == nil {
				return
			}
			// Jobs in keyed order, each with its stratum.
			for i, j := range spec.Jobs {
				if i > 0 && sampling.Rank(m.ID(), spec.Jobs[i-1].Key) > sampling.Rank(m.ID(), j.Key) {
					t.Errorf("Spec: jobs not in Rank order: %v", spec.Jobs)
				}
				if want := map[string]string{"q1": "math/hard", "q2": "math/easy"}[j.Key]; j.Stratum != want {
					t.Errorf("Spec: job %s stratum %q, want %q", j.Key, j.Stratum, want)
				}
			}
		})
	}
}
