// Command gateway-metric shows how an LLM gateway publishes the queue depth
// evalsched's scheduler reads (internal/gatewaydepth): per model, the number
// of calls queued and not yet in service, as a high-resolution CloudWatch
// metric with the model as a dimension. A gateway calls Publish from its own
// loop, once a second; this command publishes one set of values, or repeats
// it with -every.
//
//	go run ./infra/gateway-metric -depth gpt-5.5=37 -depth claude-x=0
//	go run ./infra/gateway-metric -depth gpt-5.5=37 -every 1s
//
// Publish zeros too, at a steady pace: the scheduler reads a period's
// Average as the mean queue (a period of only nonzero values overstates it),
// and holds a model's limit when its newest datapoint is missing or stale,
// so a silent gateway freezes the limits instead of raising them.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// API is the CloudWatch call a publisher makes.
type API interface {
	PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// Publisher writes the depth metric; its fields are the template's
// GatewayMetric* parameters (defaults LLMGateway, QueueDepth, Model).
type Publisher struct {
	API        API
	Namespace  string
	MetricName string
	Dimension  string
}

// maxDatums is PutMetricData's limit of values per call.
const maxDatums = 1000

// Publish writes one datapoint per model, timestamped at, with a storage
// resolution of one second (periods of 1, 5, 10 or 30 s need it).
func (p Publisher) Publish(ctx context.Context, depths map[string]float64, at time.Time) error {
	var data []types.MetricDatum
	for _, model := range slices.Sorted(maps.Keys(depths)) {
		data = append(data, types.MetricDatum{
			MetricName:        aws.String(p.MetricName),
			Dimensions:        []types.Dimension{{Name: aws.String(p.Dimension), Value: aws.String(model)}},
			Value:             aws.Float64(depths[model]),
			Unit:              types.StandardUnitCount,
			StorageResolution: aws.Int32(1),
			Timestamp:         aws.Time(at),
		})
	}
	for start := 0; start < len(data); start += maxDatums {
		_, err := p.API.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{
			Namespace:  aws.String(p.Namespace),
			MetricData: data[start:min(start+maxDatums, len(data))],
		})
		if err != nil {
			return fmt.Errorf("put gateway depth: %w", err)
		}
	}
	return nil
}

// depthFlags collects -depth model=value.
type depthFlags map[string]float64

func (d depthFlags) String() string { return fmt.Sprint(map[string]float64(d)) }

func (d depthFlags) Set(s string) error {
	model, value, ok := strings.Cut(s, "=")
	v, err := strconv.ParseFloat(value, 64)
	if !ok || model == "" || err != nil || v < 0 {
		return fmt.Errorf("%q is not model=depth (a number ≥ 0)", s)
	}
	d[model] = v
	return nil
}

func main() {
	depths := depthFlags{}
	namespace := flag.String("namespace", "LLMGateway", "the metric's namespace (GatewayMetricNamespace)")
	metric := flag.String("metric", "QueueDepth", "the metric's name (GatewayMetricName)")
	dimension := flag.String("dimension", "Model", "the model dimension (GatewayMetricDimension)")
	every := flag.Duration("every", 0, "publish again at this interval until interrupted (0: once)")
	flag.Var(depths, "depth", "`model=depth`: calls queued for the model (repeat per model)")
	flag.Parse()
	if len(depths) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	p := Publisher{API: cloudwatch.NewFromConfig(cfg), Namespace: *namespace, MetricName: *metric, Dimension: *dimension}
	for {
		if err := p.Publish(ctx, depths, time.Now()); err != nil {
			log.Fatal(err)
		}
		if *every <= 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(*every):
		}
	}
}
