package httpfake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

func cwClient(url string) *cloudwatch.Client {
	return cloudwatch.New(cloudwatch.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(url), RetryMaxAttempts: 1,
	})
}

func datum(metric, model string, at time.Time, v float64) types.MetricDatum {
	return types.MetricDatum{
		MetricName: aws.String(metric), Value: aws.Float64(v), Timestamp: aws.Time(at), StorageResolution: aws.Int32(1),
		Dimensions: []types.Dimension{{Name: aws.String("Model"), Value: aws.String(model)}}, Unit: types.StandardUnitCount,
	}
}

// TestPutMetricDataIsReadBack sends datums with the SDK's PutMetricData and
// reads their Average back with its GetMetricData: the fake keeps what it
// received, field by field.
func TestPutMetricDataIsReadBack(t *testing.T) {
	fake := NewCloudWatch()
	defer fake.Close()
	cw, ctx := cwClient(fake.URL()), context.Background()
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	if _, err := cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String("LLMGateway"), MetricData: []types.MetricDatum{
		datum("QueueDepth", "m1", at, 4), datum("QueueDepth", "m1", at.Add(time.Second), 8),
	}}); err != nil {
		t.Fatal(err)
	}
	puts := fake.Puts()
	if len(puts) != 1 || puts[0].Namespace != "LLMGateway" || len(puts[0].Data) != 2 {
		t.Fatalf("puts %+v; want one of 2 datums in LLMGateway", puts)
	}
	d := puts[0].Data[1]
	if d.MetricName != "QueueDepth" || d.Dimensions["Model"] != "m1" || d.Value != 8 || !d.Timestamp.Equal(at.Add(time.Second)) || d.StorageResolution != 1 || d.Unit != "Count" {
		t.Errorf("datum %+v; want QueueDepth Model=m1 8 at %v, resolution 1, Count", d, at.Add(time.Second))
	}
	out, err := cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(at.Add(-time.Minute)), EndTime: aws.Time(at.Add(time.Minute)),
		MetricDataQueries: []types.MetricDataQuery{{Id: aws.String("m0"), MetricStat: &types.MetricStat{
			Metric: &types.Metric{Namespace: aws.String("LLMGateway"), MetricName: aws.String("QueueDepth"),
				Dimensions: []types.Dimension{{Name: aws.String("Model"), Value: aws.String("m1")}}},
			Period: aws.Int32(10), Stat: aws.String("Average")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.MetricDataResults; len(r) != 1 || len(r[0].Values) != 1 || r[0].Values[0] != 6 {
		t.Errorf("GetMetricData %+v; want one period of Average 6", r)
	}
}

// TestPutMetricDataLimits: CloudWatch refuses 1,001 datums and a body over
// 1 MB, and stores nothing of a refused call; the SDK gzips a large body,
// and the limit is on its decompressed size.
func TestPutMetricDataLimits(t *testing.T) {
	fake := NewCloudWatch()
	defer fake.Close()
	cw, ctx := cwClient(fake.URL()), context.Background()
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	many := make([]types.MetricDatum, MaxPutDatums+1)
	for i := range many {
		many[i] = datum("QueueDepth", "m", at, 1)
	}
	_, err := cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String("N"), MetricData: many})
	if err == nil || !strings.Contains(err.Error(), "1000") {
		t.Errorf("1,001 datums: err %v; want refused", err)
	}
	if _, err := cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String("N"), MetricData: many[:MaxPutDatums]}); err != nil {
		t.Errorf("1,000 datums: %v", err)
	}
	big := make([]types.MetricDatum, 900)
	for i := range big {
		big[i] = datum("QueueDepth", strings.Repeat("x", 1024), at, 1)
		big[i].Dimensions = append(big[i].Dimensions, types.Dimension{Name: aws.String("Pad"), Value: aws.String(strings.Repeat("y", 1024))})
	}
	_, err = cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String("N"), MetricData: big})
	if err == nil || !strings.Contains(err.Error(), "RequestEntityTooLarge") {
		t.Errorf("a body over 1 MB: err %v; want RequestEntityTooLarge", err)
	}
	puts := fake.Puts()
	if len(puts) != 1 || len(puts[0].Data) != MaxPutDatums || !puts[0].Gzip {
		t.Errorf("%d puts stored; want only the call of 1,000 datums, gzipped by the SDK", len(puts))
	}
}
