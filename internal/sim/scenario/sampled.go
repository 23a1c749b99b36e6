package scenario

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/evalsched/evalsched/internal/sampling"
)

// Sampled is the input of `evalsched sim-sampled`
// (scenarios/README.md, "Sampled batches"): one sampled batch whose strata
// have latent pass rates, run once per seed beside the same batch in full.
type Sampled struct {
	Name          string
	Seed          int64
	PassIntervalS int
	Slots         int  // jobs the batch holds at once
	JobS          Dist // container time of one job
	// FailFactor multiplies a failing job's time (1: time independent of
	// the outcome): evaluations that fail often run long (timeouts,
	// retries inside the sandbox), and a stop that read results as they
	// arrive would read passes first.
	FailFactor float64
	// Window caps a sampled batch's claims beyond its counted prefix (the
	// jobs in release order whose results are all in); 0: no cap. Only
	// `sim-sampled --replications` reads it.
	Window   int
	Sampling sampling.Params
	Strata   []Stratum
}

// Stratum is one stratum: its jobs and the chance each passes.
type Stratum struct {
	Name     string  `json:"name"`
	Jobs     int     `json:"jobs"`
	PassRate float64 `json:"pass_rate"`
}

type rawSampled struct {
	Name          *string           `json:"name"`
	Seed          *int64            `json:"seed"`
	PassIntervalS *int              `json:"pass_interval_s"`
	Slots         *int              `json:"slots"`
	JobS          json.RawMessage   `json:"job_s"`
	FailFactor    *float64          `json:"fail_duration_factor"`
	Window        *int              `json:"window"`
	Sampling      json.RawMessage   `json:"sampling"`
	Strata        []json.RawMessage `json:"strata"`
}

type rawStratum struct {
	Name     *string  `json:"name"`
	Jobs     *int     `json:"jobs"`
	PassRate *float64 `json:"pass_rate"`
}

type rawParams struct {
	MOE           *float64 `json:"moe"`
	Confidence    *float64 `json:"confidence"`
	MinPerStratum *int     `json:"min_per_stratum"`
}

// maxSampledJobs bounds a sampled scenario's batch (memory and time of
// 200 seeds).
const maxSampledJobs = 200_000

// LoadSampled reads and checks a sampled scenario; errors name the
// field and the rule, one per line.
func LoadSampled(path string) (*Sampled, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return ParseSampled(data)
}

// ParseSampled parses and checks a sampled
func ParseSampled(data []byte) (*Sampled, error) {
	p := &parser{}
	var r rawSampled
	if !p.decode("", data, &r) {
		return nil, p.err()
	}
	sc := &Sampled{}
	sc.Name = p.name("name", r.Name)
	switch {
	case r.Seed == nil:
		p.fail("seed", "required")
	case *r.Seed < 0:
		p.fail("seed", "must not be negative, got %d", *r.Seed)
	default:
		sc.Seed = *r.Seed
	}
	sc.PassIntervalS = p.intIn("pass_interval_s", r.PassIntervalS, DefaultPassIntervalS, 1, 3600)
	sc.Slots = p.intIn("slots", r.Slots, 0, 1, maxSampledJobs)
	sc.JobS = p.dist("job_s", r.JobS, true)
	sc.FailFactor = p.floatIn("fail_duration_factor", r.FailFactor, 1, 0.01, true, 100)
	sc.Window = p.intIn("window", r.Window, 0, 0, maxSampledJobs)
	if isNull(r.Sampling) {
		p.fail("sampling", "required")
	} else {
		var rp rawParams
		if p.decode("sampling", r.Sampling, &rp) {
			sc.Sampling.MOE = p.floatIn("sampling.moe", rp.MOE, 0, sampling.MinMOE, true, sampling.MaxMOE)
			sc.Sampling.Confidence = p.floatIn("sampling.confidence", rp.Confidence, 0, sampling.MinConfidence, true, sampling.MaxConfidence)
			sc.Sampling.MinPerStratum = p.intIn("sampling.min_per_stratum", rp.MinPerStratum, sampling.DefaultMinPerStratum, 1, sampling.MaxMinPerStratum)
			if rp.MOE == nil {
				p.fail("sampling.moe", "required")
			}
			if rp.Confidence == nil {
				p.fail("sampling.confidence", "required")
			}
		}
	}
	if len(r.Strata) == 0 {
		p.fail("strata", "required: at least one stratum")
	}
	names, total := map[string]int{}, 0
	for i, raw := range r.Strata {
		path := fmt.Sprintf("strata[%d]", i)
		var rs rawStratum
		if !p.decode(path, raw, &rs) {
			continue
		}
		st := Stratum{Name: p.name(path+".name", rs.Name)}
		if j, dup := names[st.Name]; dup {
			p.fail(path+".name", "%q is already the name of strata[%d]", st.Name, j)
		}
		names[st.Name] = i
		st.Jobs = p.intIn(path+".jobs", rs.Jobs, 0, 1, maxSampledJobs)
		if rs.PassRate == nil {
			p.fail(path+".pass_rate", "required")
		} else {
			st.PassRate = p.floatIn(path+".pass_rate", rs.PassRate, 0, 0, true, 1)
		}
		total += st.Jobs
		sc.Strata = append(sc.Strata, st)
	}
	if total > maxSampledJobs {
		p.fail("strata", "%d jobs in all is more than the simulator's %d", total, maxSampledJobs)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return sc, nil
}
