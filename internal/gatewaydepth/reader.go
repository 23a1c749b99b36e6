package gatewaydepth

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// API is the part of the CloudWatch client the reader calls.
type API interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// Config names the gateway's metrics.
type Config struct {
	Namespace  string        // default "LLMGateway"
	MetricName string        // default "QueueDepth"
	Dimension  string        // default "Model"
	Period     time.Duration // default 10s; 1, 5, 10, 30 s or a multiple of 60 s
	Lookback   time.Duration // default 3m: how far back to look for the newest datapoint
	// ErrorMetricName counts the calls the provider answered with an error
	// (429/5xx), CallsMetricName all calls, both per model in the same
	// namespace and dimension, read as Sums over Period. Both empty (the
	// default): no error rate is read. One without the other is an error.
	ErrorMetricName string
	CallsMetricName string
	// InServiceMetricName is the gateway's count of calls in service to the
	// model's provider (sent, not yet answered), per model in the same
	// namespace and dimension, read as a Maximum over Period. Empty (the
	// default): not read. The limit controller learns the provider's
	// concurrency and the knee from it (limits.Input.InService).
	InServiceMetricName string
}

// maxQueries is GetMetricData's limit of metrics per call.
const maxQueries = 500

// Query id prefixes: an id must start with a lowercase letter and hold only
// letters, digits and underscores; the model's index follows the prefix.
const (
	idDepth  = 'm'
	idErrors = 'e'
	idCalls  = 'c'
	idInSvc  = 's'
)

// Errors reports whether the error rate is read.
func (c Config) Errors() bool { return c.ErrorMetricName != "" }

func (c Config) withDefaults() Config {
	c.Namespace = cmp.Or(c.Namespace, "LLMGateway")
	c.MetricName = cmp.Or(c.MetricName, "QueueDepth")
	c.Dimension = cmp.Or(c.Dimension, "Model")
	c.Period = cmp.Or(c.Period, 10*time.Second)
	c.Lookback = cmp.Or(c.Lookback, 3*time.Minute)
	return c
}

// Validate names the first field that breaks its rule.
func (c Config) Validate() error {
	c = c.withDefaults()
	s := int(c.Period / time.Second)
	if time.Duration(s)*time.Second != c.Period || !(s == 1 || s == 5 || s == 10 || s == 30 || s%60 == 0) {
		return fmt.Errorf("gatewaydepth: period %v must be 1, 5, 10, 30 s or a multiple of 60 s", c.Period)
	}
	if c.Lookback < c.Period {
		return fmt.Errorf("gatewaydepth: lookback %v is shorter than the period %v", c.Lookback, c.Period)
	}
	if (c.ErrorMetricName == "") != (c.CallsMetricName == "") {
		return fmt.Errorf("gatewaydepth: error metric %q and calls metric %q must be set together (an error rate needs both) or both left empty", c.ErrorMetricName, c.CallsMetricName)
	}
	return nil
}

// Reader implements scheduler.DepthReader on CloudWatch.
type Reader struct {
	api API
	cfg Config
}

// New returns a reader; zero Config fields take the defaults.
func New(api API, cfg Config) *Reader {
	return &Reader{api: api, cfg: cfg.withDefaults()}
}

// Depths reads the newest datapoint of each model, its newest error rate
// when the error metric is configured and its calls in service of the
// depth's period when that metric is, all in the same calls: one per 500
// queries, following NextToken. A model without a depth datapoint has none
// in its Depth (zero At), a model without calls no error rate (zero
// ErrorAt), one without an in-service datapoint of its depth's period no
// InService (zero InServiceAt); a model with no depth nor rate is missing
// from the map.
func (r *Reader) Depths(ctx context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	out := make(map[string]scheduler.Depth, len(models))
	perModel := 1
	if r.cfg.Errors() {
		perModel += 2
	}
	if r.cfg.InServiceMetricName != "" {
		perModel++
	}
	step := maxQueries / perModel
	for start := 0; start < len(models); start += step {
		chunk := models[start:min(start+step, len(models))]
		if err := r.read(ctx, chunk, now, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// counts holds one model's error and call counts and calls in service by
// period start, over every page of a call.
type counts struct{ errors, calls, inService map[time.Time]float64 }

func (r *Reader) read(ctx context.Context, models []string, now time.Time, out map[string]scheduler.Depth) error {
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-r.cfg.Lookback)),
		EndTime:   aws.Time(now),
		ScanBy:    types.ScanByTimestampDescending,
	}
	for i, m := range models {
		in.MetricDataQueries = append(in.MetricDataQueries, r.query(idDepth, i, r.cfg.MetricName, m, "Average"))
		if r.cfg.Errors() {
			in.MetricDataQueries = append(in.MetricDataQueries,
				r.query(idErrors, i, r.cfg.ErrorMetricName, m, "Sum"),
				r.query(idCalls, i, r.cfg.CallsMetricName, m, "Sum"))
		}
		if r.cfg.InServiceMetricName != "" {
			in.MetricDataQueries = append(in.MetricDataQueries, r.query(idInSvc, i, r.cfg.InServiceMetricName, m, "Maximum"))
		}
	}
	rates := make([]counts, len(models))
	p := cloudwatch.NewGetMetricDataPaginator(r.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("get metric data for %d models: %w", len(models), err)
		}
		for _, res := range page.MetricDataResults {
			id := aws.ToString(res.Id)
			if len(id) < 2 {
				continue
			}
			i, err := strconv.Atoi(id[1:])
			if err != nil || i < 0 || i >= len(models) || len(res.Values) == 0 || len(res.Values) != len(res.Timestamps) {
				continue
			}
			switch id[0] {
			case idDepth:
				// Newest first (ScanBy); a later page never holds a newer point.
				at := res.Timestamps[0].Add(r.cfg.Period)
				if d := out[models[i]]; at.After(d.At) {
					d.Value, d.At = res.Values[0], at
					out[models[i]] = d
				}
			case idErrors:
				rates[i].errors = addAll(rates[i].errors, res.Timestamps, res.Values)
			case idCalls:
				rates[i].calls = addAll(rates[i].calls, res.Timestamps, res.Values)
			case idInSvc:
				rates[i].inService = addAll(rates[i].inService, res.Timestamps, res.Values)
			}
		}
	}
	for i, c := range rates {
		// The calls in service pair with the depth of their period: the
		// controller reads the provider as full only when both saw it.
		if d, ok := out[models[i]]; ok && !d.At.IsZero() {
			if v, ok := c.inService[d.At.Add(-r.cfg.Period)]; ok {
				d.InService, d.InServiceAt = v, d.At
				out[models[i]] = d
			}
		}
		if rate, calls, at, ok := c.newest(); ok {
			d := out[models[i]]
			d.ErrorRate, d.Calls, d.ErrorAt = rate, calls, at.Add(r.cfg.Period)
			out[models[i]] = d
		}
	}
	return nil
}

// query asks for one statistic of one metric of one model over Period.
func (r *Reader) query(prefix byte, i int, metric, model, stat string) types.MetricDataQuery {
	return types.MetricDataQuery{
		Id: aws.String(string(prefix) + strconv.Itoa(i)),
		MetricStat: &types.MetricStat{
			Metric: &types.Metric{
				Namespace:  aws.String(r.cfg.Namespace),
				MetricName: aws.String(metric),
				Dimensions: []types.Dimension{{Name: aws.String(r.cfg.Dimension), Value: aws.String(model)}},
			},
			Period: aws.Int32(int32(r.cfg.Period / time.Second)),
			Stat:   aws.String(stat),
		},
		ReturnData: aws.Bool(true),
	}
}

func addAll(m map[time.Time]float64, ts []time.Time, vs []float64) map[time.Time]float64 {
	if m == nil {
		m = make(map[time.Time]float64, len(ts))
	}
	for k, t := range ts {
		m[t] = vs[k]
	}
	return m
}

// newest returns the error rate of the newest period that had calls, with
// its calls and its start. A period with calls and no error datapoint had no errors (a
// gateway often publishes a counter only when it moves); a period with
// errors and no calls datapoint has no denominator and is skipped.
func (c counts) newest() (rate, calls float64, at time.Time, ok bool) {
	for t, n := range c.calls {
		if n <= 0 || (ok && !t.After(at)) {
			continue
		}
		at, ok = t, true
	}
	if !ok {
		return 0, 0, time.Time{}, false
	}
	return min(1, max(0, c.errors[at]/c.calls[at])), c.calls[at], at, true
}
