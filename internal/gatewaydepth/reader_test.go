package gatewaydepth

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/evalsched/evalsched/internal/httpfake"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// client makes one attempt a call, so a test counts the fake's calls
// exactly.
func client(url string) *cloudwatch.Client { return clientWithAttempts(url, 1) }

func clientWithAttempts(url string, attempts int) *cloudwatch.Client {
	return cloudwatch.New(cloudwatch.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(url), RetryMaxAttempts: attempts,
	})
}

// retryingClient keeps the SDK's standard retries, for the tests of calls
// of hundreds of queries. Over loopback such a call now and then fails with
// "use of closed network connection" on a 200 (about one run in 300 of
// `go test -count=300`, and once in CI on a busy machine; keep-alives off
// did not stop it). The standard retryer takes that error as a connection
// reset and retries it (aws-sdk-go-v2 issue 2737), as the scheduler's
// client does in production. A retry repeats a request: count
// distinctCalls.
func retryingClient(url string) *cloudwatch.Client { return clientWithAttempts(url, 0) } // 0: the SDK's default

// distinctCalls counts the distinct GetMetricData requests the fake
// received, and their queries.
func distinctCalls(fake *httpfake.CloudWatch) (calls, queries int) {
	seen := map[string]bool{}
	for _, req := range fake.Requests {
		qs := req["MetricDataQueries"].(cbor.List)
		if k := fmt.Sprint(qs); !seen[k] {
			seen[k] = true
			queries += len(qs)
		}
	}
	return len(seen), queries
}

func TestDepthsReadsTheNewestAverage(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	fake.Put("gpt-5.5", now.Add(-45*time.Second), 90) // an older period
	fake.Put("gpt-5.5", now.Add(-25*time.Second), 12) // the newest period [-30s, -20s): mean 24.5
	fake.Put("gpt-5.5", now.Add(-22*time.Second), 37)
	fake.Put("small", now.Add(-10*time.Minute), 5) // outside the lookback
	r := New(client(fake.URL()), Config{})
	got, err := r.Depths(context.Background(), []string{"gpt-5.5", "small", "silent"}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := now.Add(-30 * time.Second).Add(10 * time.Second)
	if d := got["gpt-5.5"]; d.Value != 24.5 || !d.At.Equal(want) {
		t.Errorf("gpt-5.5: got %v at %v, want 24.5 at %v", d.Value, d.At, want)
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
	if stat["Stat"] != cbor.String("Average") || stat["Metric"].(cbor.Map)["Namespace"] != cbor.String("LLMGateway") {
		t.Errorf("got query %v, want Average of LLMGateway", q)
	}
}

func TestDepthsSplitsPast500Models(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	var models []string
	for i := range 1201 {
		m := fmt.Sprintf("model-%04d", i)
		models = append(models, m)
		fake.Put(m, now.Add(-15*time.Second), float64(i))
	}
	got, err := New(retryingClient(fake.URL()), Config{}).Depths(context.Background(), models, now)
	if err != nil {
		t.Fatal(err)
	}
	if calls, queries := distinctCalls(fake); calls != 3 || queries != 1201 {
		t.Errorf("got %d calls with %d queries, want 3 calls, 1201 queries", calls, queries)
	}
	if len(got) != 1201 || got["model-1200"].Value != 1200 {
		t.Errorf("got %d depths, model-1200 = %v; want all 1201 and 1200", len(got), got["model-1200"].Value)
	}
}

func TestDepthsReportsFailures(t *testing.T) {
	fake := httpfake.NewCloudWatch()
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
	err := (Config{ErrorMetricName: "ProviderErrors"}).Validate()
	if err == nil || !strings.Contains(err.Error(), "calls metric") {
		t.Errorf("got %v, want an error naming the missing calls metric", err)
	}
}

func TestDepthsReadsTheErrorRateInTheSameCall(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	// gpt-5.5: two periods with calls; the newest [-30s, -20s) has 40 calls,
	// 30 of them answered with errors (two datapoints summed).
	fake.Put("gpt-5.5", now.Add(-25*time.Second), 12)
	fake.PutMetric("Calls", "gpt-5.5", now.Add(-45*time.Second), 100)
	fake.PutMetric("ProviderErrors", "gpt-5.5", now.Add(-45*time.Second), 1)
	fake.PutMetric("Calls", "gpt-5.5", now.Add(-25*time.Second), 40)
	fake.PutMetric("ProviderErrors", "gpt-5.5", now.Add(-25*time.Second), 10)
	fake.PutMetric("ProviderErrors", "gpt-5.5", now.Add(-22*time.Second), 20)
	// healthy: calls but no error datapoint at all (a counter published
	// only when it moves): rate 0.
	fake.Put("healthy", now.Add(-15*time.Second), 3)
	fake.PutMetric("Calls", "healthy", now.Add(-15*time.Second), 50)
	// quiet: the newest period has errors without a calls datapoint (no
	// denominator), so the older period with calls counts.
	fake.PutMetric("Calls", "quiet", now.Add(-55*time.Second), 10)
	fake.PutMetric("ProviderErrors", "quiet", now.Add(-55*time.Second), 5)
	fake.PutMetric("ProviderErrors", "quiet", now.Add(-15*time.Second), 7)
	// idle: a depth, no calls: no error rate.
	fake.Put("idle", now.Add(-15*time.Second), 0)

	r := New(client(fake.URL()), Config{ErrorMetricName: "ProviderErrors", CallsMetricName: "Calls"})
	got, err := r.Depths(context.Background(), []string{"gpt-5.5", "healthy", "quiet", "idle", "silent"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if fake.Calls != 1 || fake.Queries != 15 {
		t.Errorf("got %d calls with %d queries, want 1 call with 15 (depth, errors, calls per model)", fake.Calls, fake.Queries)
	}
	cases := []struct {
		model   string
		depth   float64
		rate    float64
		calls   float64
		rateAt  time.Time // zero: no rate
		depthAt bool
	}{
		{"gpt-5.5", 12, 0.75, 40, now.Add(-20 * time.Second), true},
		{"healthy", 3, 0, 50, now.Add(-10 * time.Second), true},
		{"quiet", 0, 0.5, 10, now.Add(-50 * time.Second), false},
		{"idle", 0, 0, 0, time.Time{}, true},
	}
	for _, c := range cases {
		d := got[c.model]
		if d.Value != c.depth || d.At.IsZero() == c.depthAt {
			t.Errorf("%s: got depth %v at %v, want %v (datapoint %v)", c.model, d.Value, d.At, c.depth, c.depthAt)
		}
		if d.ErrorRate != c.rate || d.Calls != c.calls || !d.ErrorAt.Equal(c.rateAt) {
			t.Errorf("%s: got error rate %v of %v calls at %v, want %v of %v at %v", c.model, d.ErrorRate, d.Calls, d.ErrorAt, c.rate, c.calls, c.rateAt)
		}
	}
	if _, ok := got["silent"]; ok {
		t.Error("silent: got an entry for a model with no datapoint of any metric")
	}
	// The error and calls queries are Sums of the named metrics.
	for _, q := range fake.Requests[0]["MetricDataQueries"].(cbor.List)[:3] {
		qm := q.(cbor.Map)
		stat := qm["MetricStat"].(cbor.Map)
		name := stat["Metric"].(cbor.Map)["MetricName"]
		want := map[cbor.String]cbor.String{"QueueDepth": "Average", "ProviderErrors": "Sum", "Calls": "Sum"}[name.(cbor.String)]
		if stat["Stat"] != want {
			t.Errorf("query %v of %v: got stat %v, want %v", qm["Id"], name, stat["Stat"], want)
		}
	}
}

func TestDepthsWithErrorsSplitsPast500Queries(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	var models []string
	for i := range 400 {
		m := fmt.Sprintf("model-%03d", i)
		models = append(models, m)
		fake.Put(m, now.Add(-15*time.Second), float64(i))
		fake.PutMetric("Calls", m, now.Add(-15*time.Second), 100)
		fake.PutMetric("Errors", m, now.Add(-15*time.Second), float64(i%100))
	}
	got, err := New(retryingClient(fake.URL()), Config{ErrorMetricName: "Errors", CallsMetricName: "Calls"}).Depths(context.Background(), models, now)
	if err != nil {
		t.Fatal(err)
	}
	if calls, queries := distinctCalls(fake); calls != 3 || queries != 1200 {
		t.Errorf("got %d calls with %d queries, want 3 calls (166 models each at most), 1200 queries", calls, queries)
	}
	if d := got["model-399"]; d.Value != 399 || d.ErrorRate != 0.99 {
		t.Errorf("model-399: got depth %v, error rate %v; want 399 and 0.99", d.Value, d.ErrorRate)
	}
}

func TestDepthsReadsCallsInServiceOfTheDepthsPeriod(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	// gpt-5.5: depth and calls in service in the newest period [-30s,
	// -20s); in service is its Maximum (two datapoints).
	fake.Put("gpt-5.5", now.Add(-25*time.Second), 3)
	fake.PutMetric("InService", "gpt-5.5", now.Add(-45*time.Second), 99) // an older period
	fake.PutMetric("InService", "gpt-5.5", now.Add(-28*time.Second), 240)
	fake.PutMetric("InService", "gpt-5.5", now.Add(-24*time.Second), 250)
	// lagging: its newest in-service datapoint is of an older period than
	// its depth's: not paired (the controller reads the two together).
	fake.Put("lagging", now.Add(-15*time.Second), 0)
	fake.PutMetric("InService", "lagging", now.Add(-35*time.Second), 40)
	// bare: calls in service, no depth: no entry.
	fake.PutMetric("InService", "bare", now.Add(-15*time.Second), 7)

	r := New(client(fake.URL()), Config{InServiceMetricName: "InService"})
	got, err := r.Depths(context.Background(), []string{"gpt-5.5", "lagging", "bare"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if fake.Calls != 1 || fake.Queries != 6 {
		t.Errorf("got %d calls with %d queries, want 1 call with 6 (depth and in service per model)", fake.Calls, fake.Queries)
	}
	at := now.Add(-20 * time.Second)
	if d := got["gpt-5.5"]; d.Value != 3 || d.InService != 250 || !d.InServiceAt.Equal(at) || !d.At.Equal(at) {
		t.Errorf("gpt-5.5: got depth %v, in service %v at %v; want 3 and 250 at %v", d.Value, d.InService, d.InServiceAt, at)
	}
	if d := got["lagging"]; d.At.IsZero() || !d.InServiceAt.IsZero() || d.InService != 0 {
		t.Errorf("lagging: got %+v, want its depth without an in-service datapoint of another period", d)
	}
	if d, ok := got["bare"]; ok {
		t.Errorf("bare: got %+v, want no entry without a depth", d)
	}
	q := fake.Requests[0]["MetricDataQueries"].(cbor.List)[1].(cbor.Map)
	stat := q["MetricStat"].(cbor.Map)
	if stat["Stat"] != cbor.String("Maximum") || stat["Metric"].(cbor.Map)["MetricName"] != cbor.String("InService") {
		t.Errorf("got query %v, want the Maximum of InService", q)
	}
}

func TestDepthsWithEveryMetricSplitsPast500Queries(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	var models []string
	for i := range 300 {
		m := fmt.Sprintf("model-%03d", i)
		models = append(models, m)
		fake.Put(m, now.Add(-15*time.Second), 1)
		fake.PutMetric("InService", m, now.Add(-15*time.Second), float64(i))
	}
	got, err := New(retryingClient(fake.URL()), Config{ErrorMetricName: "Errors", CallsMetricName: "Calls", InServiceMetricName: "InService"}).Depths(context.Background(), models, now)
	if err != nil {
		t.Fatal(err)
	}
	if calls, queries := distinctCalls(fake); calls != 3 || queries != 1200 {
		t.Errorf("got %d calls with %d queries, want 3 calls (125 models of 4 queries each at most), 1200 queries", calls, queries)
	}
	if d := got["model-299"]; d.InService != 299 {
		t.Errorf("model-299: got in service %v, want 299", d.InService)
	}
}
