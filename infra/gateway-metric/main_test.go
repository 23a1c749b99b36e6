package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
)

type recorder struct {
	calls []*cloudwatch.PutMetricDataInput
}

func (r *recorder) PutMetricData(_ context.Context, in *cloudwatch.PutMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	r.calls = append(r.calls, in)
	return &cloudwatch.PutMetricDataOutput{}, nil
}

// What the scheduler reads: one high-resolution datapoint per model, the
// model as the dimension, zeros included.
func TestPublish(t *testing.T) {
	rec := &recorder{}
	p := Publisher{API: rec, Namespace: "LLMGateway", MetricName: "QueueDepth", Dimension: "Model"}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if err := p.Publish(context.Background(), map[string]float64{"gpt-5.5": 37, "idle": 0}, at); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 1 || len(rec.calls[0].MetricData) != 2 {
		t.Fatalf("got %d calls, want 1 with 2 datapoints", len(rec.calls))
	}
	for i, want := range []struct {
		model string
		value float64
	}{{"gpt-5.5", 37}, {"idle", 0}} {
		d := rec.calls[0].MetricData[i]
		if aws.ToString(d.Dimensions[0].Name) != "Model" || aws.ToString(d.Dimensions[0].Value) != want.model ||
			aws.ToFloat64(d.Value) != want.value || aws.ToInt32(d.StorageResolution) != 1 || !aws.ToTime(d.Timestamp).Equal(at) {
			t.Errorf("datapoint %d: got %s=%s %v res %v, want Model=%s %v res 1", i,
				aws.ToString(d.Dimensions[0].Name), aws.ToString(d.Dimensions[0].Value), aws.ToFloat64(d.Value), aws.ToInt32(d.StorageResolution), want.model, want.value)
		}
	}
	// More models than one call takes: several calls.
	many := map[string]float64{}
	for i := range 2500 {
		many[fmt.Sprintf("m%04d", i)] = 1
	}
	rec.calls = nil
	if err := p.Publish(context.Background(), many, at); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 3 {
		t.Errorf("2500 models: got %d calls, want 3 (1000 datapoints a call)", len(rec.calls))
	}
}
