package gatewaydepth

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/evalsched/evalsched/internal/awsfake"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func client(url string) *cloudwatch.Client {
	return cloudwatch.New(cloudwatch.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(url), RetryMaxAttempts: 1,
	})
}

func TestDepthsReadsTheNewestMaximum(t *testing.T) {
	fake := awsfake.NewCloudWatch()
	defer fake.Close()
	fake.Put("gpt-5.5", now.Add(-45*time.Second), 90) // an older period
	fake.Put("gpt-5.5", now.Add(-25*time.Second), 12) // the newest period [-30s, -20s): max 37
	fake.Put("gpt-5.5", now.Add(-22*time.Second), 37)
	fake.Put("small", now.Add(-10*time.Minute), 5) // outside the lookback
	r := New(client(fake.URL()), Config{})
	got, err := r.Depths(context.Background(), []string{"gpt-5.5", "small", "silent"}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := now.Add(-30 * time.Second).Add(10 * time.Second)
	if d := got["gpt-5.5"]; d.Value != 37 || !d.At.Equal(want) {
		t.Errorf("gpt-5.5: got %v at %v, want 37 at %v", d.Value, d.At, want)
	}
	if d, ok := got["small"]; ok {
		t.Errorf("small: got %+v, want no datapoint (older than the lookback)", d)
	}
	if _, ok := got["silent"]; ok {
		t.Error("silent: got a datapoint for a model that published none")
	}
	// The request is what CloudWatch expects.
	q := fake.Requests[0]["MetricDataQueries"].(cbor.List)[0].(cbor.Map)
	stat := q["MetricStat"].(cbor.Map)
	if stat["Stat"] != cbor.String("Maximum") || stat["Metric"].(cbor.Map)["Namespace"] != cbor.String("LLMGateway") {
		t.Errorf("got query %v, want Maximum of LLMGateway", q)
	}
}

func TestDepthsSplitsPast500Models(t *testing.T) {
	fake := awsfake.NewCloudWatch()
	defer fake.Close()
	var models []string
	for i := range 1201 {
		m := fmt.Sprintf("model-%04d", i)
		models = append(models, m)
		fake.Put(m, now.Add(-15*time.Second), float64(i))
	}
	got, err := New(client(fake.URL()), Config{}).Depths(context.Background(), models, now)
	if err != nil {
		t.Fatal(err)
	}
	if fake.Calls != 3 || fake.Queries != 1201 {
		t.Errorf("got %d calls with %d queries, want 3 calls, 1201 queries", fake.Calls, fake.Queries)
	}
	if len(got) != 1201 || got["model-1200"].Value != 1200 {
		t.Errorf("got %d depths, model-1200 = %v; want all 1201 and 1200", len(got), got["model-1200"].Value)
	}
}

func TestDepthsReportsFailures(t *testing.T) {
	fake := awsfake.NewCloudWatch()
	defer fake.Close()
	fake.Fail = 1
	_, err := New(client(fake.URL()), Config{}).Depths(context.Background(), []string{"gpt"}, now)
	if err == nil {
		t.Fatal("got no error from a failing CloudWatch")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (Config{Period: 7 * time.Second}).Validate(); err == nil {
		t.Error("a 7 s period passed validation")
	}
}
