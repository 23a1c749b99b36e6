package depthbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	dto "github.com/prometheus/client_model/go"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// API is the CloudWatch call the bridge makes.
type API interface {
	PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// Readings is where the bridge writes each period's readings of every
// model instead of (or besides) CloudWatch: the state table's readings
// item (depthitem.Writer), which the pass reads with one request.
type Readings interface {
	Put(ctx context.Context, now time.Time, depths map[string]scheduler.Depth) error
}

// Clock is the time the bridge runs by (schedulerfn.RealClock in production).
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// MaxDatums is PutMetricData's limit of metrics per request. A datum's
// names are bounded (model 128 bytes, metric and dimension names 255, see
// Config) so 1,000 of them stay far below the request's 1 MB: the count is
// the limit that binds (TestBatchesStayWithinPutMetricDataLimits).
const MaxDatums = 1000

// keepFor is how long datapoints that could not be sent are kept for the
// next publish: the scheduler looks back 3 minutes for its newest one.
const keepFor = 3 * time.Minute

// Bridge scrapes the targets and publishes each model's values. Step is
// one scrape of every target at a given time; Run calls it every Interval.
type Bridge struct {
	// Readings, when set, gets each PublishEvery's readings of every model
	// (Flush). Set it before the first Step.
	Readings Readings

	api     API // nil: no CloudWatch datapoints
	http    *http.Client
	cfg     Config
	targets []target
	tokens  []string // each target's bearer token, "" for none
	names   [nRoles]string
	log     *slog.Logger

	// state, carried from step to step (Step is not reentrant).
	up        []bool                   // the target's previous scrape succeeded
	prev      []map[string]float64     // each target's counters at its previous scrape, by series
	served    map[string]map[int]bool  // the targets each model was seen on, by model
	roles     map[string]*[nRoles]bool // the roles a series reported for each model
	pending   []types.MetricDatum      // gathered, not yet sent
	lastFlush time.Time
	period    map[string]*periodSum      // this period's seconds, by model, for Readings
	newest    map[string]scheduler.Depth // each model's newest readings, for Readings
}

// periodSum is one model's seconds of one PublishEvery: the depth's sum
// and count (its mean is what CloudWatch's Average of the seconds would
// be), the largest calls in service, the errors and calls.
type periodSum struct {
	depth, depthN float64
	inService     float64
	hasInService  bool
	errors, calls float64
}

// New returns a bridge for a configuration (its defaults applied, then
// validated); a nil api publishes no CloudWatch datapoints (set Readings);
// a nil client gets one with the configuration's timeout. The
// targets' bearer tokens are read from the environment now.
func New(api API, client *http.Client, cfg Config, log *slog.Logger) (*Bridge, error) {
	cfg = cfg.WithDefaults()
	ts, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	tokens := make([]string, len(ts))
	for i, t := range ts {
		if t.BearerTokenEnv != "" {
			if tokens[i] = os.Getenv(t.BearerTokenEnv); tokens[i] == "" {
				return nil, fmt.Errorf("bridge config: targets[%d].bearer_token_env: $%s is empty or unset", i, t.BearerTokenEnv)
			}
		}
	}
	if client == nil {
		client = &http.Client{Timeout: time.Duration(cfg.Timeout)}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bridge{api: api, http: client, cfg: cfg, targets: ts, tokens: tokens, names: cfg.metricNames(), log: log,
		up: make([]bool, len(ts)), prev: make([]map[string]float64, len(ts)), served: map[string]map[int]bool{},
		roles: map[string]*[nRoles]bool{}, period: map[string]*periodSum{}, newest: map[string]scheduler.Depth{}}
	for i := range ts {
		b.up[i] = true // the first failure is logged
	}
	return b, nil
}

// finalFlush bounds the last send when Run stops (ECS gives a stopping
// task 30 s).
const finalFlush = 5 * time.Second

// Run scrapes every Interval, on the Interval's boundaries, until ctx
// ends; then it sends what it gathered since the last send.
func (b *Bridge) Run(ctx context.Context, clock Clock) error {
	iv := time.Duration(b.cfg.Interval)
	for {
		now := clock.Now()
		if err := b.Step(ctx, now); err != nil && ctx.Err() == nil {
			b.log.Warn("bridge: publish", "err", err)
		}
		next := now.Truncate(iv).Add(iv)
		if clock.Sleep(ctx, next.Sub(clock.Now())) != nil {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlush)
			defer cancel()
			if err := b.Flush(fctx, clock.Now()); err != nil {
				b.log.Warn("bridge: last publish", "err", err)
			}
			return nil // ctx ended: a clean stop
		}
	}
}

// sample is what one target reported for one model in one scrape: its
// gauges' values and its counters' increases, by role, and which roles had
// a series.
type sample struct {
	v   [nRoles]float64
	has [nRoles]bool
}

// Step scrapes every target once at now and gathers one datapoint per
// model and published role, timestamped at now's second; when now starts a
// new PublishEvery, it first sends what was gathered before (so a sent
// period is whole). A model is left out of this second, every role of it,
// when any target it was ever seen on failed this scrape: its sum would be
// short, and nothing published lets the scheduler hold the model's limit
// where zeros would let it raise. A model seen once is published every
// second after (zeros when its targets no longer list it).
func (b *Bridge) Step(ctx context.Context, now time.Time) error {
	// 1. Send what the previous period gathered.
	var err error
	if bucket := now.Truncate(time.Duration(b.cfg.PublishEvery)); bucket.After(b.lastFlush) {
		if !b.lastFlush.IsZero() {
			err = b.Flush(ctx, now)
		}
		b.lastFlush = bucket
	}

	// 2. Scrape every target at once; read the results in target order.
	results := make([]map[string]sample, len(b.targets))
	errs := make([]error, len(b.targets))
	var wg sync.WaitGroup
	for i := range b.targets {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, time.Duration(b.cfg.Timeout))
			defer cancel()
			fams, err := Scrape(sctx, b.http, b.targets[i].URL, b.tokens[i])
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = b.extract(i, fams)
		})
	}
	wg.Wait()

	// 3. Sum per model over the targets that answered; note those that
	// did not.
	totals := map[string]*sample{}
	down := map[int]bool{}
	for i, res := range results {
		if errs[i] != nil {
			down[i] = true
			if b.up[i] {
				b.log.Warn("bridge: target down: nothing published for its models until it answers", "target", b.targets[i].URL, "err", errs[i])
			}
			b.up[i] = false
			b.prev[i] = nil // a counter seen again after a gap is a new start
			continue
		}
		if !b.up[i] {
			b.log.Info("bridge: target back", "target", b.targets[i].URL)
		}
		b.up[i] = true
		for model, s := range res {
			if b.served[model] == nil {
				b.served[model], b.roles[model] = map[int]bool{}, &[nRoles]bool{}
				b.log.Info("bridge: new model", "model", model, "target", b.targets[i].URL)
			}
			b.served[model][i] = true
			t := totals[model]
			if t == nil {
				t = &sample{}
				totals[model] = t
			}
			for r := range nRoles {
				t.v[r] += s.v[r]
				b.roles[model][r] = b.roles[model][r] || s.has[r]
			}
		}
	}

	// 4. One datum per model and role, in name order.
	at := now.Truncate(time.Second)
	for _, model := range slices.Sorted(maps.Keys(b.served)) {
		if anyDown(b.served[model], down) {
			continue
		}
		s := totals[model]
		if s == nil {
			s = &sample{}
		}
		has := *b.roles[model]
		// Errors and calls are a pair: calls without an error series had
		// no errors (LiteLLM and Envoy create the series at the first).
		has[roleErrors] = has[roleErrors] || has[roleCalls]
		has[roleCalls] = has[roleErrors]
		for r := range nRoles {
			// Only the roles a series ever reported for the model: a model
			// known only from LiteLLM's counters gets no depth (zeros would
			// say its queue is empty).
			if b.names[r] == "" || !has[r] {
				continue
			}
			if b.api != nil {
				b.pending = append(b.pending, b.datum(r, model, s.v[r], at))
			}
		}
		if b.Readings != nil {
			b.sum(model, s, has)
		}
	}
	return err
}

// sum adds one second of a model to its period's sums, the roles it has
// and publishes.
func (b *Bridge) sum(model string, s *sample, has [nRoles]bool) {
	p := b.period[model]
	if p == nil {
		p = &periodSum{}
		b.period[model] = p
	}
	on := func(r role) bool { return has[r] && b.names[r] != "" }
	if on(roleDepth) {
		p.depth += s.v[roleDepth]
		p.depthN++
	}
	if on(roleInService) {
		p.inService = max(p.inService, s.v[roleInService])
		p.hasInService = true
	}
	if on(roleErrors) {
		p.errors += s.v[roleErrors]
		p.calls += s.v[roleCalls]
	}
}

// readings folds the period ending at end into each model's newest
// readings, as gatewaydepth reads CloudWatch's: the depth is the mean of
// the period's seconds, the calls in service their maximum (paired with
// that depth), the error rate that of the newest period with calls; a
// model without a second this period keeps its older readings, for the
// pass to judge by their age.
func (b *Bridge) readings(end time.Time) map[string]scheduler.Depth {
	for model, p := range b.period {
		d := b.newest[model]
		if p.depthN > 0 {
			d.Value, d.At = p.depth/p.depthN, end
			d.InService, d.InServiceAt = 0, time.Time{}
			if p.hasInService {
				d.InService, d.InServiceAt = p.inService, end
			}
		}
		if p.calls > 0 {
			d.ErrorRate, d.Calls, d.ErrorAt = min(1, max(0, p.errors/p.calls)), p.calls, end
		}
		b.newest[model] = d
	}
	clear(b.period)
	return b.newest
}

func anyDown(targets map[int]bool, down map[int]bool) bool {
	for i := range targets {
		if down[i] {
			return true
		}
	}
	return false
}

// extract reads target i's mapped series: gauges as they are, counters as
// their increase since the target's previous scrape. A counter's first
// value adds nothing (its increase is unknown); one lower than before was
// reset (the process restarted) and adds its value, the increase since
// the reset, as Prometheus's rate() does: never negative, never the whole
// history.
func (b *Bridge) extract(i int, fams map[string]*dto.MetricFamily) map[string]sample {
	t := b.targets[i]
	out := map[string]sample{}
	counters := map[string]float64{}
	for r := range nRoles {
		for _, sel := range t.sel[r] {
			mf := fams[sel.Metric]
			if mf == nil && r.counter() {
				mf = fams[sel.Metric+"_total"]
			}
			for _, m := range mf.GetMetric() {
				v, ok := value(mf.GetType(), m, r.counter())
				if !ok || !matches(m, sel) {
					continue
				}
				raw := t.Model
				if sel.Label != "" {
					raw = labelValue(m, sel.Label)
				}
				model, ok := Normalize(raw, t.Target, b.cfg)
				if !ok {
					continue
				}
				if r.counter() {
					key := seriesKey(r, mf.GetName(), m)
					counters[key] = v
					prev, seen := b.prev[i][key]
					switch {
					case !seen:
						v = 0
					case v >= prev:
						v -= prev
					}
				}
				s := out[model]
				s.v[r] += v
				s.has[r] = true
				out[model] = s
			}
		}
	}
	b.prev[i] = counters
	return out
}

// value is a sample's value if its family's type suits the role: a gauge's
// or an untyped value for depth and in service, a counter's or an untyped
// value for errors and calls.
func value(typ dto.MetricType, m *dto.Metric, counter bool) (float64, bool) {
	switch {
	case typ == dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), true
	case counter && typ == dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), true
	case !counter && typ == dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

func matches(m *dto.Metric, sel Selector) bool {
	for k, v := range sel.Filters {
		if labelValue(m, k) != v {
			return false
		}
	}
	return true
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// seriesKey names one series of a role: its family and every label.
func seriesKey(r role, family string, m *dto.Metric) string {
	k := fmt.Sprint(int(r), family)
	for _, l := range m.GetLabel() {
		k += "\x00" + l.GetName() + "=" + l.GetValue()
	}
	return k
}

func (b *Bridge) datum(r role, model string, v float64, at time.Time) types.MetricDatum {
	return types.MetricDatum{
		MetricName:        aws.String(b.names[r]),
		Dimensions:        []types.Dimension{{Name: aws.String(b.cfg.CloudWatch.Dimension), Value: aws.String(model)}},
		Value:             aws.Float64(v),
		Unit:              types.StandardUnitCount,
		StorageResolution: aws.Int32(1),
		Timestamp:         aws.Time(at),
	}
}

// Flush writes the period's readings (Readings set), then sends every
// datapoint gathered, MaxDatums a request. What a failed request did not
// send is kept for the next flush, for up to keepFor; readings that could
// not be written are written with the next period's.
func (b *Bridge) Flush(ctx context.Context, now time.Time) error {
	var errs []error
	if b.Readings != nil && len(b.period) > 0 {
		// The period gathered began at lastFlush; it ends PublishEvery
		// later (or now, for Run's last flush of a part period).
		end := now.Truncate(time.Second)
		if full := b.lastFlush.Add(time.Duration(b.cfg.PublishEvery)); !b.lastFlush.IsZero() && full.Before(end) {
			end = full
		}
		if err := b.Readings.Put(ctx, now, b.readings(end)); err != nil {
			errs = append(errs, fmt.Errorf("write readings: %w", err))
		}
	}
	if err := b.flushDatums(ctx, now); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (b *Bridge) flushDatums(ctx context.Context, now time.Time) error {
	keep := b.pending[:0]
	for _, d := range b.pending {
		if now.Sub(*d.Timestamp) <= keepFor {
			keep = append(keep, d)
		}
	}
	b.pending = keep
	for len(b.pending) > 0 {
		n := min(len(b.pending), MaxDatums)
		_, err := b.api.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{
			Namespace:  aws.String(b.cfg.CloudWatch.Namespace),
			MetricData: b.pending[:n],
		})
		if err != nil {
			return fmt.Errorf("put %d datapoints: %w", n, err)
		}
		b.pending = b.pending[n:]
	}
	b.pending = nil
	return nil
}
