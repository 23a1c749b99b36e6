package scenario

import (
	"encoding/json"
)

// The scenario file's shape for writing: field order as in
// scenarios/README.md, every defaulted field written out, so a written
// scenario reads back to the same Scenario whatever the defaults become.
type scenarioOut struct {
	Name             string     `json:"name"`
	Seed             int64      `json:"seed"`
	DurationS        int        `json:"duration_s"`
	PassIntervalS    int        `json:"pass_interval_s"`
	GlobalMaxRunning int        `json:"global_max_running"`
	LaunchRatePerS   float64    `json:"launch_rate_per_s"`
	LaunchBurst      int        `json:"launch_burst"`
	ContainerStartS  distOut    `json:"container_start_s"`
	MetricDelayS     float64    `json:"metric_delay_s"`
	DepthPeriodS     int        `json:"depth_period_s"`
	MetricNoise      float64    `json:"metric_noise"`
	MetricMissing    float64    `json:"metric_missing"`
	StartFailureRate float64    `json:"start_failure_rate"`
	Tiers            int        `json:"tiers"`
	TierWeight       float64    `json:"tier_weight"`
	DefaultTier      int        `json:"default_tier"`
	Models           []modelOut `json:"models"`
	Pins             []pinOut   `json:"pins,omitempty"`
	Batches          []batchOut `json:"batches"`
}

type modelOut struct {
	Name                string      `json:"name"`
	ProviderConcurrency int         `json:"provider_concurrency"`
	CallS               distOut     `json:"call_s"`
	TargetDepth         float64     `json:"target_depth"`
	MinLimit            int         `json:"min_limit"`
	MaxLimit            int         `json:"max_limit"`
	InitialLimit        int         `json:"initial_limit"`
	StaticCap           int         `json:"static_cap"`
	ConfiguredConc      int         `json:"configured_concurrency,omitempty"`
	SlowUnderLoad       float64     `json:"slow_under_load"`
	RejectOver          float64     `json:"reject_over"`
	Changes             []changeOut `json:"changes,omitempty"`
}

type changeOut struct {
	AtS                 float64  `json:"at_s"`
	ProviderConcurrency *int     `json:"provider_concurrency,omitempty"`
	ErrorRate           *float64 `json:"error_rate,omitempty"`
	ErrorCallS          *float64 `json:"error_call_s,omitempty"`
}

type pinOut struct {
	AtS   float64 `json:"at_s"`
	Scope string  `json:"scope"`
	Tier  int     `json:"tier"`
}

type batchOut struct {
	AtS     float64 `json:"at_s"`
	Account string  `json:"account"`
	Project string  `json:"project"`
	Batch   string  `json:"batch"`
	Model   string  `json:"model"`
	Jobs    int     `json:"jobs"`
	Tier    *int    `json:"tier,omitempty"`
	Calls   distOut `json:"calls"`
	ThinkS  distOut `json:"think_s"`
}

type distOut struct{ d Dist }

func (o distOut) MarshalJSON() ([]byte, error) {
	switch o.d.Kind {
	case Fixed:
		return json.Marshal(map[string]float64{"fixed": o.d.Fixed})
	case Lognormal:
		return json.Marshal(map[string]float64{"median": o.d.Median, "p90": o.d.P90})
	case Uniform:
		return json.Marshal(map[string]float64{"min": o.d.Min, "max": o.d.Max})
	}
	return []byte("null"), nil
}

// MarshalJSON writes the scenario in the file format (scenarios/README.md);
// Parse reads it back to an equal Scenario.
func (sc *Scenario) MarshalJSON() ([]byte, error) {
	out := scenarioOut{
		Name: sc.Name, Seed: sc.Seed, DurationS: sc.DurationS, PassIntervalS: sc.PassIntervalS,
		GlobalMaxRunning: sc.GlobalMaxRunning, LaunchRatePerS: sc.LaunchRatePerS, LaunchBurst: sc.LaunchBurst,
		ContainerStartS: distOut{sc.ContainerStartS}, MetricDelayS: sc.MetricDelayS,
		DepthPeriodS: sc.DepthPeriodS, MetricNoise: sc.MetricNoise, MetricMissing: sc.MetricMissing,
		StartFailureRate: sc.StartFailureRate,
		Tiers:            sc.Tiers, TierWeight: sc.TierWeight, DefaultTier: sc.DefaultTier,
		Batches: []batchOut{},
	}
	for _, m := range sc.Models {
		mo := modelOut{
			Name: m.Name, ProviderConcurrency: m.ProviderConcurrency, CallS: distOut{m.CallS},
			TargetDepth: m.TargetDepth, MinLimit: m.MinLimit, MaxLimit: m.MaxLimit,
			InitialLimit: m.InitialLimit, StaticCap: m.StaticCap, ConfiguredConc: m.ConfiguredConcurrency,
			SlowUnderLoad: m.SlowUnderLoad, RejectOver: m.RejectOver,
		}
		for _, c := range m.Changes {
			mo.Changes = append(mo.Changes, changeOut{AtS: c.AtS, ProviderConcurrency: c.ProviderConcurrency, ErrorRate: c.ErrorRate, ErrorCallS: c.ErrorCallS})
		}
		out.Models = append(out.Models, mo)
	}
	for _, p := range sc.Pins {
		out.Pins = append(out.Pins, pinOut{AtS: p.AtS, Scope: p.Scope, Tier: p.Tier})
	}
	for _, b := range sc.Batches {
		bo := batchOut{AtS: b.AtS, Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model,
			Jobs: b.Jobs, Calls: distOut{b.Calls}, ThinkS: distOut{b.ThinkS}}
		if b.Tier >= 0 {
			t := b.Tier
			bo.Tier = &t
		}
		out.Batches = append(out.Batches, bo)
	}
	return json.MarshalIndent(out, "", "  ")
}
