package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Scenario is one scenario file (format v1, see scenarios/README.md), parsed,
// defaulted and validated.
type Scenario struct {
	Name             string
	Seed             int64
	DurationS        int     // simulated seconds
	PassIntervalS    int     // default 10
	GlobalMaxRunning int     // account-wide cap on tasks holding a slot
	LaunchRatePerS   float64 // Fargate launch token bucket, default 20/s
	LaunchBurst      int     // default 100
	ContainerStartS  Dist    // RunTask → container running
	MetricDelayS     float64 // default 20
	DepthPeriodS     int     // CloudWatch period the pass reads the Maximum over, default 1
	MetricNoise      float64 // relative noise on each datapoint (σ of a normal factor), default 0
	MetricMissing    float64 // probability a period has no datapoint, default 0
	StartFailureRate float64 // probability a task fails to start (TaskFailedToStart), default 0
	Tiers            int     // default 3
	TierWeight       float64 // default 0.8
	DefaultTier      int     // default 2, clamped to Tiers-1
	Models           []Model
	Pins             []Pin
	Batches          []Batch
}

// Model is one model behind the gateway.
type Model struct {
	Name                string
	ProviderConcurrency int
	CallS               Dist
	TargetDepth         float64
	MinLimit            int // default 1
	MaxLimit            int // default 10000
	InitialLimit        int // default 10
	StaticCap           int // the lane cap of policy static
	// ConfiguredConcurrency is the provider concurrency the operator gave
	// evalsched (the model item's provider_concurrency; 0: none): what the
	// gateway was set to send at once, which the provider may since have
	// changed (Changes). Only policy dynamic reads it.
	ConfiguredConcurrency int
	// SlowUnderLoad s stretches a call entering service by 1 + s·min(1,
	// queued/concurrency): a provider slows as its gateway queue grows.
	SlowUnderLoad float64
	// RejectOver r: with more than r·concurrency calls queued, a new call
	// is answered 429 after rejectCallS (0: never).
	RejectOver float64
	Changes    []Change
}

// Change alters a model's provider at AtS; nil fields keep their value.
type Change struct {
	AtS                 float64
	ProviderConcurrency *int
	ErrorRate           *float64
	ErrorCallS          *float64
}

// Pin is a console edit landing at AtS.
type Pin struct {
	AtS   float64
	Scope string // account#A | project#A/P | batch#A/P/B
	Tier  int
}

// Batch is one submission.
type Batch struct {
	AtS                     float64
	Account, Project, Batch string
	Model                   string
	Jobs                    int
	Tier                    int // -1: none given
	Calls                   Dist
	ThinkS                  Dist
}

// Key is the batch's name in the output: account/project/batch.
func (b Batch) Key() string { return b.Account + "/" + b.Project + "/" + b.Batch }

// MaxDurationS is the longest run the simulator takes (one week): depth
// samples are kept per second.
const MaxDurationS = 7 * 24 * 3600

// Limits of the simulator itself, so a typo cannot ask for a terabyte.
const (
	maxJobs  = 2_000_000
	maxTiers = 10
)

// Defaults of the optional fields.
const (
	DefaultPassIntervalS  = 10
	DefaultLaunchRatePerS = 20
	DefaultLaunchBurst    = 100
	DefaultTiers          = 3
	DefaultTierWeight     = 0.8
	DefaultDefaultTier    = 2
	DefaultMinLimit       = 1
	DefaultMaxLimit       = 10000
	DefaultInitialLimit   = 10
	DefaultMetricDelayS   = 20
	// DefaultDepthPeriodS keeps the exact per-second sample the shipped
	// scenarios were measured with. Production reads the Maximum over 10 s
	// (internal/gatewaydepth's default period), and so does the scenario
	// family (ProductionDepthPeriodS); on seed-hot-lanes that reading costs
	// the current controller its 0.95 utilization target on three models
	// (0.946-0.949), so the default moves to 10 with the controller's
	// retuning, not before.
	DefaultDepthPeriodS = 1
	// ProductionDepthPeriodS is internal/gatewaydepth's default period.
	ProductionDepthPeriodS = 10
)

// The raw shapes: pointers tell a missing field from a zero, RawMessage
// defers nested objects so each is decoded strictly with its own path.
type rawScenario struct {
	Name             *string           `json:"name"`
	Seed             *int64            `json:"seed"`
	DurationS        *int              `json:"duration_s"`
	PassIntervalS    *int              `json:"pass_interval_s"`
	GlobalMaxRunning *int              `json:"global_max_running"`
	LaunchRatePerS   *float64          `json:"launch_rate_per_s"`
	LaunchBurst      *int              `json:"launch_burst"`
	ContainerStartS  json.RawMessage   `json:"container_start_s"`
	MetricDelayS     *float64          `json:"metric_delay_s"`
	DepthPeriodS     *int              `json:"depth_period_s"`
	MetricNoise      *float64          `json:"metric_noise"`
	MetricMissing    *float64          `json:"metric_missing"`
	StartFailureRate *float64          `json:"start_failure_rate"`
	Tiers            *int              `json:"tiers"`
	TierWeight       *float64          `json:"tier_weight"`
	DefaultTier      *int              `json:"default_tier"`
	Models           []json.RawMessage `json:"models"`
	Pins             []json.RawMessage `json:"pins"`
	Batches          []json.RawMessage `json:"batches"`
}

type rawModel struct {
	Name                *string           `json:"name"`
	ProviderConcurrency *int              `json:"provider_concurrency"`
	CallS               json.RawMessage   `json:"call_s"`
	TargetDepth         *float64          `json:"target_depth"`
	MinLimit            *int              `json:"min_limit"`
	MaxLimit            *int              `json:"max_limit"`
	InitialLimit        *int              `json:"initial_limit"`
	ConfiguredConc      *int              `json:"configured_concurrency"`
	StaticCap           *int              `json:"static_cap"`
	SlowUnderLoad       *float64          `json:"slow_under_load"`
	RejectOver          *float64          `json:"reject_over"`
	Changes             []json.RawMessage `json:"changes"`
}

type rawChange struct {
	AtS                 *float64 `json:"at_s"`
	ProviderConcurrency *int     `json:"provider_concurrency"`
	ErrorRate           *float64 `json:"error_rate"`
	ErrorCallS          *float64 `json:"error_call_s"`
}

type rawPin struct {
	AtS   *float64 `json:"at_s"`
	Scope *string  `json:"scope"`
	Tier  *int     `json:"tier"`
}

type rawBatch struct {
	AtS     *float64        `json:"at_s"`
	Account *string         `json:"account"`
	Project *string         `json:"project"`
	Batch   *string         `json:"batch"`
	Model   *string         `json:"model"`
	Jobs    *int            `json:"jobs"`
	Tier    *int            `json:"tier"`
	Calls   json.RawMessage `json:"calls"`
	ThinkS  json.RawMessage `json:"think_s"`
}

type rawDist struct {
	Fixed  *float64 `json:"fixed"`
	Median *float64 `json:"median"`
	P90    *float64 `json:"p90"`
	Min    *float64 `json:"min"`
	Max    *float64 `json:"max"`
}

// Load reads and parses a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(data)
}

// Parse parses a scenario, applies the defaults and validates it.
// Errors name the field by its path (models[2].call_s) and the rule broken;
// all broken rules are reported, one per line.
func Parse(data []byte) (*Scenario, error) {
	p := &parser{}
	sc := p.scenario(data)
	if err := p.err(); err != nil {
		return nil, err
	}
	return sc, nil
}

// parser collects the problems of one scenario.
type parser struct{ errs []string }

// maxErrors keeps a badly broken file from printing a wall of errors.
const maxErrors = 20

func (p *parser) fail(path, format string, a ...any) {
	if len(p.errs) >= maxErrors {
		return
	}
	msg := "scenario: "
	if path != "" {
		msg += path + ": "
	}
	p.errs = append(p.errs, msg+fmt.Sprintf(format, a...))
}

func (p *parser) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(p.errs, "\n"))
}

// decode decodes one JSON object strictly: unknown fields, wrong types and
// trailing data are errors naming the path.
func (p *parser) decode(path string, data []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		p.jsonError(path, data, err)
		return false
	}
	if _, err := dec.Token(); err == nil {
		p.fail(path, "unexpected data after the object")
		return false
	}
	return true
}

func (p *parser) jsonError(path string, data []byte, err error) {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	at := func(field string) string {
		if field == "" {
			return path
		}
		if path == "" {
			return field
		}
		return path + "." + field
	}
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		p.fail(at(""), "invalid JSON at line %d, column %d: %s", line, col, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		p.fail(at(typ.Field), "want %s, got %s", kindOf(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF) || strings.Contains(err.Error(), "unexpected EOF"):
		p.fail(at(""), "empty or truncated JSON")
	default:
		msg := strings.TrimPrefix(err.Error(), "json: ")
		p.fail(at(""), "%s", msg)
	}
}

// kindOf words a Go kind for a scenario author.
func kindOf(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "struct", kind == "map":
		return "an object"
	case kind == "slice":
		return "an array"
	}
	return kind
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

func (p *parser) scenario(data []byte) *Scenario {
	var r rawScenario
	if !p.decode("", data, &r) {
		return nil
	}
	sc := &Scenario{}
	sc.Name = p.name("name", r.Name)
	if r.Seed == nil {
		p.fail("seed", "required")
	} else if *r.Seed < 0 {
		p.fail("seed", "must not be negative, got %d", *r.Seed)
	} else {
		sc.Seed = *r.Seed
	}
	sc.DurationS = p.intIn("duration_s", r.DurationS, 0, 1, MaxDurationS)
	sc.PassIntervalS = p.intIn("pass_interval_s", r.PassIntervalS, DefaultPassIntervalS, 1, 3600)
	sc.GlobalMaxRunning = p.intIn("global_max_running", r.GlobalMaxRunning, 0, 1, maxJobs)
	sc.LaunchRatePerS = p.floatIn("launch_rate_per_s", r.LaunchRatePerS, DefaultLaunchRatePerS, 0, false, 1e6)
	sc.LaunchBurst = p.intIn("launch_burst", r.LaunchBurst, DefaultLaunchBurst, 1, 1_000_000)
	sc.ContainerStartS = p.dist("container_start_s", r.ContainerStartS, true)
	sc.MetricDelayS = p.floatIn("metric_delay_s", r.MetricDelayS, DefaultMetricDelayS, 0, true, 3600)
	sc.DepthPeriodS = p.intIn("depth_period_s", r.DepthPeriodS, DefaultDepthPeriodS, 1, 3600)
	sc.MetricNoise = p.floatIn("metric_noise", r.MetricNoise, 0, 0, true, 10)
	sc.MetricMissing = p.floatIn("metric_missing", r.MetricMissing, 0, 0, true, 1)
	sc.StartFailureRate = p.floatIn("start_failure_rate", r.StartFailureRate, 0, 0, true, 1)
	sc.Tiers = p.intIn("tiers", r.Tiers, DefaultTiers, 1, maxTiers)
	sc.TierWeight = p.floatIn("tier_weight", r.TierWeight, DefaultTierWeight, 0, false, 1)
	if r.DefaultTier == nil {
		sc.DefaultTier = min(DefaultDefaultTier, max(sc.Tiers-1, 0))
	} else {
		sc.DefaultTier = p.intIn("default_tier", r.DefaultTier, 0, 0, max(sc.Tiers-1, 0))
	}

	if len(r.Models) == 0 {
		p.fail("models", "required: at least one model")
	}
	names := map[string]int{}
	for i, raw := range r.Models {
		path := fmt.Sprintf("models[%d]", i)
		m, ok := p.model(path, raw)
		if !ok {
			continue
		}
		if j, dup := names[m.Name]; dup && m.Name != "" {
			p.fail(path+".name", "%q is already the name of models[%d]", m.Name, j)
		}
		names[m.Name] = i
		sc.Models = append(sc.Models, m)
	}
	for i, raw := range r.Pins {
		path := fmt.Sprintf("pins[%d]", i)
		if pin, ok := p.pin(path, raw, sc.Tiers); ok {
			sc.Pins = append(sc.Pins, pin)
		}
	}
	if r.Batches == nil {
		p.fail("batches", "required (may be empty: [])")
	}
	keys := map[string]int{}
	total := 0
	for i, raw := range r.Batches {
		path := fmt.Sprintf("batches[%d]", i)
		b, ok := p.batch(path, raw, sc.Tiers)
		if !ok {
			continue
		}
		if _, known := names[b.Model]; !known && b.Model != "" {
			p.fail(path+".model", "%q is not the name of a model", b.Model)
		}
		if j, dup := keys[b.Key()]; dup {
			p.fail(path, "%q is already the key of batches[%d] (account/project/batch must be unique)", b.Key(), j)
		}
		keys[b.Key()] = i
		total += b.Jobs
		sc.Batches = append(sc.Batches, b)
	}
	if total > maxJobs {
		p.fail("batches", "%d jobs in all is more than the simulator's %d", total, maxJobs)
	}
	return sc
}

func (p *parser) model(path string, raw json.RawMessage) (Model, bool) {
	var r rawModel
	if !p.decode(path, raw, &r) {
		return Model{}, false
	}
	m := Model{
		Name:                p.name(path+".name", r.Name),
		ProviderConcurrency: p.intIn(path+".provider_concurrency", r.ProviderConcurrency, 0, 1, 1_000_000),
		CallS:               p.dist(path+".call_s", r.CallS, true),
		MinLimit:            p.intIn(path+".min_limit", r.MinLimit, DefaultMinLimit, 0, maxJobs),
		MaxLimit:            p.intIn(path+".max_limit", r.MaxLimit, DefaultMaxLimit, 1, maxJobs),
		StaticCap:           p.intIn(path+".static_cap", r.StaticCap, 0, 1, maxJobs),
		SlowUnderLoad:       p.floatIn(path+".slow_under_load", r.SlowUnderLoad, 0, 0, true, 100),
		RejectOver:          p.floatIn(path+".reject_over", r.RejectOver, 0, 0, true, 1e6),
	}
	if r.TargetDepth == nil {
		p.fail(path+".target_depth", "required")
	} else {
		m.TargetDepth = p.floatIn(path+".target_depth", r.TargetDepth, 0, 0, false, 1e9)
	}
	if m.MaxLimit < m.MinLimit {
		p.fail(path+".max_limit", "must be at least min_limit %d, got %d", m.MinLimit, m.MaxLimit)
	}
	m.InitialLimit = p.intIn(path+".initial_limit", r.InitialLimit, min(max(DefaultInitialLimit, m.MinLimit), m.MaxLimit), 1, maxJobs)
	if r.InitialLimit != nil && (m.InitialLimit < m.MinLimit || m.InitialLimit > m.MaxLimit) {
		p.fail(path+".initial_limit", "must be within min_limit..max_limit (%d..%d), got %d", m.MinLimit, m.MaxLimit, m.InitialLimit)
	}
	m.ConfiguredConcurrency = p.intIn(path+".configured_concurrency", r.ConfiguredConc, 0, 0, 1_000_000)
	// error_call_s carries over between changes; a change that turns errors
	// on must know how long a failing call takes.
	var haveCall bool
	for i, rc := range r.Changes {
		cpath := fmt.Sprintf("%s.changes[%d]", path, i)
		var c rawChange
		if !p.decode(cpath, rc, &c) {
			continue
		}
		ch := Change{AtS: p.at(cpath+".at_s", c.AtS)}
		if c.ProviderConcurrency == nil && c.ErrorRate == nil && c.ErrorCallS == nil {
			p.fail(cpath, "changes nothing: give provider_concurrency, error_rate or error_call_s")
		}
		if c.ProviderConcurrency != nil {
			v := p.intIn(cpath+".provider_concurrency", c.ProviderConcurrency, 0, 0, 1_000_000)
			ch.ProviderConcurrency = &v
		}
		if c.ErrorCallS != nil {
			v := p.floatIn(cpath+".error_call_s", c.ErrorCallS, 0, 0, true, maxDraw)
			ch.ErrorCallS = &v
			haveCall = true
		}
		if c.ErrorRate != nil {
			v := p.floatIn(cpath+".error_rate", c.ErrorRate, 0, 0, true, 1)
			ch.ErrorRate = &v
			if v > 0 && !haveCall {
				p.fail(cpath+".error_call_s", "required when error_rate > 0 (here or in an earlier change)")
			}
		}
		m.Changes = append(m.Changes, ch)
	}
	return m, true
}

func (p *parser) pin(path string, raw json.RawMessage, tiers int) (Pin, bool) {
	var r rawPin
	if !p.decode(path, raw, &r) {
		return Pin{}, false
	}
	pin := Pin{AtS: p.at(path+".at_s", r.AtS)}
	if r.Scope == nil {
		p.fail(path+".scope", "required")
	} else {
		pin.Scope = *r.Scope
		kind, names, _ := strings.Cut(pin.Scope, "#")
		want := map[string]int{"account": 1, "project": 2, "batch": 3}[kind]
		parts := strings.Split(names, "/")
		empty := false
		for _, s := range parts {
			empty = empty || s == ""
		}
		if want == 0 || len(parts) != want || empty {
			p.fail(path+".scope", "must be account#A, project#A/P or batch#A/P/B, got %q", pin.Scope)
		}
	}
	if r.Tier == nil {
		p.fail(path+".tier", "required")
	} else {
		pin.Tier = p.intIn(path+".tier", r.Tier, 0, 0, tiers-1)
	}
	return pin, true
}

func (p *parser) batch(path string, raw json.RawMessage, tiers int) (Batch, bool) {
	var r rawBatch
	if !p.decode(path, raw, &r) {
		return Batch{}, false
	}
	b := Batch{
		AtS:     p.at(path+".at_s", r.AtS),
		Account: p.name(path+".account", r.Account),
		Project: p.name(path+".project", r.Project),
		Batch:   p.name(path+".batch", r.Batch),
		Model:   p.name(path+".model", r.Model),
		Jobs:    p.intIn(path+".jobs", r.Jobs, 0, 1, maxJobs),
		Tier:    -1,
		Calls:   p.dist(path+".calls", r.Calls, true),
		ThinkS:  p.dist(path+".think_s", r.ThinkS, true),
	}
	for _, f := range []struct{ field, v string }{{"account", b.Account}, {"project", b.Project}, {"batch", b.Batch}} {
		if strings.ContainsRune(f.v, '/') {
			p.fail(path+"."+f.field, "must not contain \"/\", got %q", f.v)
		}
	}
	if r.Tier != nil {
		b.Tier = p.intIn(path+".tier", r.Tier, 0, 0, tiers-1)
	}
	return b, true
}

// dist parses a DIST: exactly one of {fixed} | {median, p90} | {min, max}.
func (p *parser) dist(path string, raw json.RawMessage, required bool) Dist {
	if isNull(raw) {
		if required {
			p.fail(path, "required")
		}
		return Dist{}
	}
	var r rawDist
	if !p.decode(path, raw, &r) {
		return Dist{}
	}
	const forms = `give exactly one of {"fixed": x}, {"median": m, "p90": p} or {"min": a, "max": b}`
	lognormal := r.Median != nil || r.P90 != nil
	uniform := r.Min != nil || r.Max != nil
	n := 0
	for _, set := range []bool{r.Fixed != nil, lognormal, uniform} {
		if set {
			n++
		}
	}
	if n != 1 {
		p.fail(path, "%s", forms)
		return Dist{}
	}
	finite := func(field string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxDraw {
			p.fail(path+"."+field, "must be within 0..%g, got %g", float64(maxDraw), v)
			return false
		}
		return true
	}
	switch {
	case r.Fixed != nil:
		if finite("fixed", *r.Fixed) {
			return FixedDist(*r.Fixed)
		}
	case lognormal:
		if r.Median == nil || r.P90 == nil {
			p.fail(path, "a lognormal needs both median and p90")
			return Dist{}
		}
		if !finite("median", *r.Median) || !finite("p90", *r.P90) {
			return Dist{}
		}
		if *r.Median <= 0 {
			p.fail(path+".median", "must be positive, got %g", *r.Median)
			return Dist{}
		}
		if *r.P90 < *r.Median {
			p.fail(path+".p90", "must be at least the median %g, got %g", *r.Median, *r.P90)
			return Dist{}
		}
		return LognormalDist(*r.Median, *r.P90)
	case uniform:
		if r.Min == nil || r.Max == nil {
			p.fail(path, "a uniform needs both min and max")
			return Dist{}
		}
		if !finite("min", *r.Min) || !finite("max", *r.Max) {
			return Dist{}
		}
		if *r.Max < *r.Min {
			p.fail(path+".max", "must be at least min %g, got %g", *r.Min, *r.Max)
			return Dist{}
		}
		return UniformDist(*r.Min, *r.Max)
	}
	return Dist{}
}

// name reads a required non-empty string.
func (p *parser) name(path string, v *string) string {
	switch {
	case v == nil:
		p.fail(path, "required")
		return ""
	case strings.TrimSpace(*v) == "":
		p.fail(path, "must not be empty")
	}
	return *v
}

// intIn reads an integer within lo..hi; def applies when it is missing, and
// def 0 with lo > 0 makes it required.
func (p *parser) intIn(path string, v *int, def, lo, hi int) int {
	if v == nil {
		if def == 0 && lo > 0 {
			p.fail(path, "required")
		}
		return def
	}
	if *v < lo || *v > hi {
		p.fail(path, "must be within %d..%d, got %d", lo, hi, *v)
	}
	return *v
}

// floatIn reads a number above lo (or at lo when closed) and at most hi.
func (p *parser) floatIn(path string, v *float64, def, lo float64, closed bool, hi float64) float64 {
	if v == nil {
		return def
	}
	x := *v
	bad := math.IsNaN(x) || x > hi || x < lo || (!closed && x == lo)
	if bad {
		if closed {
			p.fail(path, "must be within %g..%g, got %g", lo, hi, x)
		} else {
			p.fail(path, "must be above %g and at most %g, got %g", lo, hi, x)
		}
	}
	return x
}

// at reads a required event time: seconds from the start, not negative.
// Times past duration_s are allowed (they never happen), so --duration can
// cut a scenario short.
func (p *parser) at(path string, v *float64) float64 {
	if v == nil {
		p.fail(path, "required")
		return 0
	}
	if *v < 0 || *v > MaxDurationS || math.IsNaN(*v) {
		p.fail(path, "must be within 0..%d, got %g", MaxDurationS, *v)
	}
	return *v
}
