package scenario

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// minimal is the smallest valid scenario; tests change one thing at a time.
const minimal = `{
  "name": "min", "seed": 1, "duration_s": 60, "global_max_running": 10,
  "container_start_s": {"fixed": 5},
  "models": [{"name": "m", "provider_concurrency": 2, "call_s": {"fixed": 1}, "target_depth": 1, "static_cap": 3}],
  "batches": [{"at_s": 0, "account": "a", "project": "p", "batch": "b", "model": "m", "jobs": 2,
               "calls": {"fixed": 1}, "think_s": {"fixed": 0}}]
}`

// edit returns minimal with one change applied to its decoded form.
func edit(t *testing.T, f func(map[string]any)) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(minimal), &v); err != nil {
		t.Fatal(err)
	}
	f(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func model0(v map[string]any) map[string]any { return v["models"].([]any)[0].(map[string]any) }
func batch0(v map[string]any) map[string]any { return v["batches"].([]any)[0].(map[string]any) }

func TestParseDefaults(t *testing.T) {
	sc, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"pass_interval_s", sc.PassIntervalS, 10},
		{"launch_rate_per_s", sc.LaunchRatePerS, 20.0},
		{"launch_burst", sc.LaunchBurst, 100},
		{"tiers", sc.Tiers, 3},
		{"tier_weight", sc.TierWeight, 0.8},
		{"default_tier", sc.DefaultTier, 2},
		{"metric_delay_s", sc.MetricDelayS, 20.0},
		{"min_limit", sc.Models[0].MinLimit, 1},
		{"max_limit", sc.Models[0].MaxLimit, 10000},
		{"initial_limit", sc.Models[0].InitialLimit, 10},
		{"configured_concurrency (none)", sc.Models[0].ConfiguredConcurrency, 0},
		{"batch tier (none)", sc.Batches[0].Tier, -1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

func TestParseDefaultTierClamped(t *testing.T) {
	sc, err := Parse(edit(t, func(v map[string]any) { v["tiers"] = 2 }))
	if err != nil {
		t.Fatal(err)
	}
	if sc.DefaultTier != 1 {
		t.Errorf("default_tier with 2 tiers = %d, want 1 (clamped to tiers-1)", sc.DefaultTier)
	}
}

func TestParseUnknownFields(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"top", func(v map[string]any) { v["sed"] = 1 }, `scenario: unknown field "sed"`},
		{"container start", func(v map[string]any) {
			v["container_start_s"] = map[string]any{"medain": 3, "p90": 5}
		}, `scenario: container_start_s: unknown field "medain"`},
		{"model", func(v map[string]any) { model0(v)["concurrency"] = 3 }, `scenario: models[0]: unknown field "concurrency"`},
		{"model dist", func(v map[string]any) {
			model0(v)["call_s"] = map[string]any{"medain": 3, "p90": 5}
		}, `scenario: models[0].call_s: unknown field "medain"`},
		{"change", func(v map[string]any) {
			model0(v)["changes"] = []any{map[string]any{"at_s": 5, "error_rte": 0.5}}
		}, `scenario: models[0].changes[0]: unknown field "error_rte"`},
		{"pin", func(v map[string]any) {
			v["pins"] = []any{map[string]any{"at_s": 5, "scope": "account#a", "tier": 0, "expires": 3}}
		}, `scenario: pins[0]: unknown field "expires"`},
		{"batch", func(v map[string]any) { batch0(v)["priority"] = 1 }, `scenario: batches[0]: unknown field "priority"`},
		{"batch dist", func(v map[string]any) {
			batch0(v)["think_s"] = map[string]any{"fixed": 1, "unit": "s"}
		}, `scenario: batches[0].think_s: unknown field "unit"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(edit(t, c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseBadValues(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"missing name", func(v map[string]any) { delete(v, "name") }, "scenario: name: required"},
		{"missing seed", func(v map[string]any) { delete(v, "seed") }, "scenario: seed: required"},
		{"negative seed", func(v map[string]any) { v["seed"] = -1 }, "scenario: seed: must not be negative"},
		{"zero duration", func(v map[string]any) { v["duration_s"] = 0 }, "scenario: duration_s: must be within 1..604800, got 0"},
		{"fractional duration", func(v map[string]any) { v["duration_s"] = 1.5 }, "scenario: duration_s: want an integer, got number 1.5"},
		{"string cap", func(v map[string]any) { v["global_max_running"] = "10" }, "scenario: global_max_running: want an integer, got string"},
		{"missing cap", func(v map[string]any) { delete(v, "global_max_running") }, "scenario: global_max_running: required"},
		{"zero rate", func(v map[string]any) { v["launch_rate_per_s"] = 0 }, "scenario: launch_rate_per_s: must be above 0"},
		{"tier weight", func(v map[string]any) { v["tier_weight"] = 1.5 }, "scenario: tier_weight: must be above 0 and at most 1, got 1.5"},
		{"default tier", func(v map[string]any) { v["default_tier"] = 3 }, "scenario: default_tier: must be within 0..2, got 3"},
		{"negative delay", func(v map[string]any) { v["metric_delay_s"] = -1 }, "scenario: metric_delay_s: must be within 0..3600, got -1"},
		{"no models", func(v map[string]any) { v["models"] = []any{} }, "scenario: models: required: at least one model"},
		{"models not array", func(v map[string]any) { v["models"] = 3 }, "scenario: models: want an array, got number"},
		{"concurrency", func(v map[string]any) { model0(v)["provider_concurrency"] = 0 }, "scenario: models[0].provider_concurrency: must be within 1..1000000, got 0"},
		{"duplicate model", func(v map[string]any) {
			v["models"] = append(v["models"].([]any), model0(v))
		}, `scenario: models[1].name: "m" is already the name of models[0]`},
		{"min above max", func(v map[string]any) { model0(v)["min_limit"] = 5; model0(v)["max_limit"] = 4 }, "scenario: models[0].max_limit: must be at least min_limit 5, got 4"},
		{"initial outside", func(v map[string]any) { model0(v)["initial_limit"] = 20000 }, "scenario: models[0].initial_limit: must be within min_limit..max_limit (1..10000), got 20000"},
		{"configured concurrency negative", func(v map[string]any) { model0(v)["configured_concurrency"] = -5 }, "scenario: models[0].configured_concurrency: must be within 0..1000000, got -5"},
		{"missing target", func(v map[string]any) { delete(model0(v), "target_depth") }, "scenario: models[0].target_depth: required"},
		{"missing static cap", func(v map[string]any) { delete(model0(v), "static_cap") }, "scenario: models[0].static_cap: required"},
		{"two dist forms", func(v map[string]any) {
			model0(v)["call_s"] = map[string]any{"fixed": 1, "min": 0, "max": 2}
		}, `scenario: models[0].call_s: give exactly one of {"fixed": x}, {"median": m, "p90": p} or {"min": a, "max": b}`},
		{"empty dist", func(v map[string]any) { model0(v)["call_s"] = map[string]any{} }, "scenario: models[0].call_s: give exactly one of"},
		{"half lognormal", func(v map[string]any) { model0(v)["call_s"] = map[string]any{"median": 1} }, "scenario: models[0].call_s: a lognormal needs both median and p90"},
		{"p90 below median", func(v map[string]any) {
			model0(v)["call_s"] = map[string]any{"median": 5, "p90": 4}
		}, "scenario: models[0].call_s.p90: must be at least the median 5, got 4"},
		{"max below min", func(v map[string]any) { batch0(v)["calls"] = map[string]any{"min": 5, "max": 4} }, "scenario: batches[0].calls.max: must be at least min 5, got 4"},
		{"negative fixed", func(v map[string]any) { batch0(v)["think_s"] = map[string]any{"fixed": -1} }, "scenario: batches[0].think_s.fixed: must be within 0..1e+08, got -1"},
		{"missing dist", func(v map[string]any) { delete(v, "container_start_s") }, "scenario: container_start_s: required"},
		{"error rate", func(v map[string]any) {
			model0(v)["changes"] = []any{map[string]any{"at_s": 5, "error_rate": 1.5, "error_call_s": 1}}
		}, "scenario: models[0].changes[0].error_rate: must be within 0..1, got 1.5"},
		{"error without call time", func(v map[string]any) {
			model0(v)["changes"] = []any{map[string]any{"at_s": 5, "error_rate": 0.5}}
		}, "scenario: models[0].changes[0].error_call_s: required when error_rate > 0"},
		{"empty change", func(v map[string]any) {
			model0(v)["changes"] = []any{map[string]any{"at_s": 5}}
		}, "scenario: models[0].changes[0]: changes nothing"},
		{"change time", func(v map[string]any) {
			model0(v)["changes"] = []any{map[string]any{"provider_concurrency": 5}}
		}, "scenario: models[0].changes[0].at_s: required"},
		{"pin scope", func(v map[string]any) {
			v["pins"] = []any{map[string]any{"at_s": 5, "scope": "project#a", "tier": 0}}
		}, `scenario: pins[0].scope: must be account#A, project#A/P or batch#A/P/B, got "project#a"`},
		{"pin tier", func(v map[string]any) {
			v["pins"] = []any{map[string]any{"at_s": 5, "scope": "account#a", "tier": 3}}
		}, "scenario: pins[0].tier: must be within 0..2, got 3"},
		{"batch model", func(v map[string]any) { batch0(v)["model"] = "x" }, `scenario: batches[0].model: "x" is not the name of a model`},
		{"batch jobs", func(v map[string]any) { batch0(v)["jobs"] = 0 }, "scenario: batches[0].jobs: must be within 1..2000000, got 0"},
		{"batch tier", func(v map[string]any) { batch0(v)["tier"] = 5 }, "scenario: batches[0].tier: must be within 0..2, got 5"},
		{"batch at", func(v map[string]any) { batch0(v)["at_s"] = -5 }, "scenario: batches[0].at_s: must be within 0..604800, got -5"},
		{"batch slash", func(v map[string]any) { batch0(v)["project"] = "x/y" }, `scenario: batches[0].project: must not contain "/"`},
		{"duplicate batch", func(v map[string]any) {
			v["batches"] = append(v["batches"].([]any), batch0(v))
		}, `scenario: batches[1]: "a/p/b" is already the key of batches[0]`},
		{"missing batches", func(v map[string]any) { delete(v, "batches") }, "scenario: batches: required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(edit(t, c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseSyntax(t *testing.T) {
	_, err := Parse([]byte("{\n  \"name\": \"x\",\n  \"seed\": 1,,\n}"))
	if err == nil || !strings.Contains(err.Error(), "scenario: invalid JSON at line 3") {
		t.Errorf("error = %v, want the line of the syntax error", err)
	}
	_, err = Parse([]byte(minimal + `{}`))
	if err == nil || !strings.Contains(err.Error(), "unexpected data after the object") {
		t.Errorf("error = %v, want trailing data rejected", err)
	}
	_, err = Parse(nil)
	if err == nil || !strings.Contains(err.Error(), "scenario: empty or truncated JSON") {
		t.Errorf("error = %v, want empty input rejected", err)
	}
}

func TestParseAllErrors(t *testing.T) {
	_, err := Parse(edit(t, func(v map[string]any) {
		v["duration_s"] = 0
		batch0(v)["jobs"] = 0
	}))
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("error = %v, want both problems, one per line", err)
	}
}

func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob("../../../scenarios/*.json")
	// sampled-*.json are sim-sampled's format (TestShippedSampledScenario).
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "sampled-") })
	if err != nil || len(files) != 3 {
		t.Fatalf("shipped scenarios: %v %v, want 3", files, err)
	}
	for _, f := range files {
		sc, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".json"); sc.Name != want {
			t.Errorf("%s: name %q, want %q", f, sc.Name, want)
		}
	}
}
