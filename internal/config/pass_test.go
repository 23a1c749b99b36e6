package config_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/sim/scenario"
)

func defaults(t *testing.T) config.Config {
	t.Helper()
	c, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Unset variables give the scheduler's own defaults, and the simulator's
// scenario defaults are the same settings.
func TestPassDefaultsAreTheSchedulers(t *testing.T) {
	c := defaults(t)
	if got, want := c.Pass(0), scheduler.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("Pass of the defaults: got %+v, want scheduler.DefaultConfig %+v", got, want)
	}
	if err := c.Pass(0).Validate(); err != nil {
		t.Error(err)
	}
	m := c.DefaultModel()
	for _, d := range []struct {
		name      string
		sim, conf float64
	}{
		{"tiers", scenario.DefaultTiers, float64(c.Tiers)},
		{"tier weight", scenario.DefaultTierWeight, c.TierWeight},
		{"default tier", scenario.DefaultDefaultTier, float64(c.DefaultTier)},
		{"launch rate", scenario.DefaultLaunchRatePerS, c.LaunchRate},
		{"launch burst", scenario.DefaultLaunchBurst, float64(c.LaunchBurst)},
		{"pass interval", scenario.DefaultPassIntervalS, c.PassInterval.Seconds()},
		{"min limit", scenario.DefaultMinLimit, float64(m.MinLimit)},
		{"max limit", scenario.DefaultMaxLimit, float64(m.MaxLimit)},
		{"initial limit", scenario.DefaultInitialLimit, float64(m.InitialLimit)},
	} {
		if d.sim != d.conf {
			t.Errorf("%s: the simulator's default %g, the deployment's %g", d.name, d.sim, d.conf)
		}
	}
}

// Every setting the pass depends on reaches it, as it should.
func TestPassMapsEverySetting(t *testing.T) {
	base := defaults(t)
	cases := []struct {
		name  string
		set   func(*config.Config)
		shard int
		want  func(*scheduler.Config)
	}{
		{"tiers", func(c *config.Config) { c.Tiers = 5 }, 0, func(s *scheduler.Config) { s.Tiers = 5 }},
		{"tier weight", func(c *config.Config) { c.TierWeight = 0.5 }, 0, func(s *scheduler.Config) { s.TierWeight = 0.5 }},
		{"default tier", func(c *config.Config) { c.DefaultTier = 1 }, 0, func(s *scheduler.Config) { s.DefaultTier = 1 }},
		{"global cap", func(c *config.Config) { c.GlobalMaxRunning = 100 }, 0, func(s *scheduler.Config) { s.GlobalMaxRunning = 100 }},
		{"launch rate", func(c *config.Config) { c.LaunchRate = 2 }, 0, func(s *scheduler.Config) { s.MaxLaunchesPerPass = 20 }},
		{"launch rate below one a pass", func(c *config.Config) { c.LaunchRate = 0.01 }, 0, func(s *scheduler.Config) { s.MaxLaunchesPerPass = 1 }},
		{"pass interval", func(c *config.Config) { c.PassInterval = 30 * time.Second }, 0, func(s *scheduler.Config) { s.MaxLaunchesPerPass = 600 }},
		{"shards", func(c *config.Config) { c.Shards = 4 }, 1, func(s *scheduler.Config) { s.GlobalMaxRunning, s.MaxLaunchesPerPass = 1500, 50 }},
		{"gateway error metric", func(c *config.Config) { c.ErrorMetricName, c.CallsMetricName = "Errors", "Calls" }, 0,
			func(s *scheduler.Config) { s.Breaker.GatewayThreshold = breaker.DefaultGatewayThreshold }},
	}
	reached := map[string]bool{}
	for _, tc := range cases {
		c := base
		tc.set(&c)
		want := base.Pass(0)
		tc.want(&want)
		got := c.Pass(tc.shard)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
		}
		def := reflect.ValueOf(base.Pass(0))
		for i := range def.NumField() {
			if !reflect.DeepEqual(def.Field(i).Interface(), reflect.ValueOf(got).Field(i).Interface()) {
				reached[def.Type().Field(i).Name] = true
			}
		}
	}
	// Every field of the pass's configuration but the limits' tuning (not
	// a deployment setting) comes from a setting.
	for _, f := range reflect.VisibleFields(reflect.TypeFor[scheduler.Config]()) {
		if !reached[f.Name] && f.Name != "Limits" {
			t.Errorf("scheduler.Config.%s: no setting reaches it", f.Name)
		}
	}
}

// Exactly these settings change the pass or the account's caps; changing
// any other leaves both as they are (CallsMetricName is set with
// ErrorMetricName, which alone tells the pass the gateway reports errors). A new setting the pass should read
// fails here until it is mapped (or named as not the pass's).
func TestPassReadsOnlyItsSettings(t *testing.T) {
	base := defaults(t)
	want := []string{"DefaultTier", "ErrorMetricName", "GlobalMaxRunning", "LaunchBurst", "LaunchRate", "PassInterval", "Shards", "TierWeight", "Tiers"}
	var got []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[config.Config]()) {
		c := base
		v := reflect.ValueOf(&c).Elem().FieldByIndex(f.Index)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int, reflect.Int64:
			if v.Type() == reflect.TypeFor[time.Duration]() {
				v.SetInt(v.Int() + int64(time.Second))
			} else {
				v.SetInt(v.Int() + 1)
			}
		case reflect.Float64:
			v.SetFloat(v.Float() / 2)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		default:
			t.Fatalf("config.Config.%s: kind %s: teach this test to change it", f.Name, v.Kind())
		}
		if !reflect.DeepEqual(c.Pass(0), base.Pass(0)) || c.Caps() != base.Caps() {
			got = append(got, f.Name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("settings that change the pass: got %v, want %v", got, want)
	}
}
