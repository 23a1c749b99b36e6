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

// Config names the gateway's metric.
type Config struct {
	Namespace  string        // default "LLMGateway"
	MetricName string        // default "QueueDepth"
	Dimension  string        // default "Model"
	Period     time.Duration // default 10s; 1, 5, 10, 30 s or a multiple of 60 s
	Lookback   time.Duration // default 3m: how far back to look for the newest datapoint
}

// maxQueries is GetMetricData's limit of metrics per call.
const maxQueries = 500

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

// Depths reads the newest datapoint of each model: one call per 500 models,
// following NextToken. A model without a datapoint is missing from the map.
func (r *Reader) Depths(ctx context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	out := make(map[string]scheduler.Depth, len(models))
	for start := 0; start < len(models); start += maxQueries {
		chunk := models[start:min(start+maxQueries, len(models))]
		if err := r.read(ctx, chunk, now, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (r *Reader) read(ctx context.Context, models []string, now time.Time, out map[string]scheduler.Depth) error {
	period := int32(r.cfg.Period / time.Second)
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-r.cfg.Lookback)),
		EndTime:   aws.Time(now),
		ScanBy:    types.ScanByTimestampDescending,
	}
	for i, m := range models {
		in.MetricDataQueries = append(in.MetricDataQueries, types.MetricDataQuery{
			Id: aws.String("m" + strconv.Itoa(i)), // ids must start with a lowercase letter
			MetricStat: &types.MetricStat{
				Metric: &types.Metric{
					Namespace:  aws.String(r.cfg.Namespace),
					MetricName: aws.String(r.cfg.MetricName),
					Dimensions: []types.Dimension{{Name: aws.String(r.cfg.Dimension), Value: aws.String(m)}},
				},
				Period: aws.Int32(period),
				Stat:   aws.String("Maximum"),
			},
			ReturnData: aws.Bool(true),
		})
	}
	p := cloudwatch.NewGetMetricDataPaginator(r.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("get metric data for %d models: %w", len(models), err)
		}
		for _, res := range page.MetricDataResults {
			i, err := strconv.Atoi(aws.ToString(res.Id)[1:])
			if err != nil || i >= len(models) || len(res.Values) == 0 || len(res.Timestamps) == 0 {
				continue
			}
			// Newest first (ScanBy); a later page never holds a newer point.
			at := res.Timestamps[0].Add(r.cfg.Period)
			if old, ok := out[models[i]]; !ok || at.After(old.At) {
				out[models[i]] = scheduler.Depth{Value: res.Values[0], At: at}
			}
		}
	}
	return nil
}
