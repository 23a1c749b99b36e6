package depthbridge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/evalsched/evalsched/internal/gatewaydepth"
	"github.com/evalsched/evalsched/internal/httpfake"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// endpoint is a scrape target whose answer a test changes between steps.
type endpoint struct {
	srv    *httptest.Server
	mu     sync.Mutex
	body   string
	ctype  string
	status int
}

func serve(t testing.TB, body string) *endpoint {
	t.Helper()
	e := &endpoint{body: body, ctype: "text/plain; version=0.0.4; charset=utf-8", status: http.StatusOK}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		w.Header().Set("Content-Type", e.ctype)
		w.WriteHeader(e.status)
		fmt.Fprint(w, e.body)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) set(body string, status int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.body, e.status = body, status
}

func (e *endpoint) url() string { return e.srv.URL + "/metrics" }

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func cwClient(url string) *cloudwatch.Client {
	return cloudwatch.New(cloudwatch.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(url), RetryMaxAttempts: 1,
	})
}

// allNames publishes every role.
var allNames = CloudWatch{InService: "InService", Errors: "GatewayErrors", Calls: "GatewayCalls"}

func newBridge(t *testing.T, fake *httpfake.CloudWatch, cfg Config) *Bridge {
	t.Helper()
	b, err := New(cwClient(fake.URL()), nil, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// steps runs one Step a second from `from`, then flushes.
func steps(t *testing.T, b *Bridge, from time.Time, n int, between func(i int)) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if between != nil {
			between(i)
		}
		if err := b.Step(ctx, from.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx, from.Add(time.Duration(n)*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// published returns the values the fake received for one metric of one
// model, by second.
func published(fake *httpfake.CloudWatch, metric, model string) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for _, p := range fake.Puts() {
		for _, d := range p.Data {
			if d.MetricName == metric && d.Dimensions["Model"] == model {
				out[d.Timestamp.UTC()] = d.Value
			}
		}
	}
	return out
}

// TestPresetsReadEachGatewaysExposition scrapes each gateway's exposition
// (testdata: vLLM's text format and OpenMetrics, Envoy's
// /stats/prometheus, LiteLLM's /metrics) twice, the counters moved in
// between, and checks every value published for the second scrape.
func TestPresetsReadEachGatewaysExposition(t *testing.T) {
	type want map[string]map[string]float64 // model → metric → value; a metric absent is not published
	for _, tc := range []struct {
		name, file, ctype string
		target            Target
		lowercase         bool
		next              func(string) string // the second scrape's body
		want              want
		dropped           []string
	}{
		{
			name: "vllm", file: "vllm.txt", target: Target{Preset: "vllm"},
			want: want{"meta-llama/Llama-3.1-8B-Instruct": {"QueueDepth": 7, "InService": 24}},
		},
		{
			name: "vllm openmetrics", file: "vllm-openmetrics.txt", ctype: "application/openmetrics-text; version=1.0.0; charset=utf-8",
			target: Target{Preset: "vllm", Models: map[string]string{"Qwen/Qwen3-0.6B": "qwen3-0.6b"}},
			want:   want{"qwen3-0.6b": {"QueueDepth": 2, "InService": 3}},
		},
		{
			name: "envoy", file: "envoy.txt",
			target: Target{Preset: "envoy", OnlyMapped: true, Models: map[string]string{"llama-8b": "llama-8b", "httproute/default/mixtral/rule/0": "mixtral-8x7b"}},
			next: func(s string) string {
				// 3 more 429s, 1 more 5xx, 10 more calls to llama-8b.
				s = strings.Replace(s, `envoy_cluster_upstream_rq{envoy_response_code="429",envoy_cluster_name="llama-8b"} 12`, `envoy_cluster_upstream_rq{envoy_response_code="429",envoy_cluster_name="llama-8b"} 15`, 1)
				s = strings.Replace(s, `{envoy_response_code_class="5",envoy_cluster_name="llama-8b"} 3`, `{envoy_response_code_class="5",envoy_cluster_name="llama-8b"} 4`, 1)
				return strings.Replace(s, `envoy_cluster_upstream_rq_total{envoy_cluster_name="llama-8b"} 955`, `envoy_cluster_upstream_rq_total{envoy_cluster_name="llama-8b"} 965`, 1)
			},
			want: want{
				"llama-8b":     {"QueueDepth": 9, "InService": 16, "GatewayErrors": 4, "GatewayCalls": 10},
				"mixtral-8x7b": {"QueueDepth": 0, "InService": 2, "GatewayErrors": 0, "GatewayCalls": 0},
			},
			dropped: []string{"xds_cluster", "xds-cluster"},
		},
		{
			name: "litellm", file: "litellm.txt", lowercase: true,
			next: func(s string) string {
				s = strings.Replace(s, `requested_model="gpt-4o",team="None",team_alias="None"} 120.0`, `requested_model="gpt-4o",team="None",team_alias="None"} 130.0`, 1)
				return strings.Replace(s, `exception_status="429",hashed_api_key="88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b",litellm_model_name="gpt-4o",model_id="0b2c6d3e1f",requested_model="gpt-4o",team="None",team_alias="None"} 6.0`,
					`exception_status="429",hashed_api_key="88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b",litellm_model_name="gpt-4o",model_id="0b2c6d3e1f",requested_model="gpt-4o",team="None",team_alias="None"} 7.0`, 1)
			},
			target: Target{Preset: "litellm"},
			// No queue gauge in LiteLLM: no depth, no calls in service.
			want: want{
				"gpt-4o":          {"GatewayErrors": 1, "GatewayCalls": 10},
				"claude-sonnet-4": {"GatewayErrors": 0, "GatewayCalls": 0},
			},
		},
		{
			// A LiteLLM serving one model: its pod-wide in-flight gauge is
			// that model's calls in service.
			name: "litellm in flight", file: "litellm.txt", lowercase: true,
			target: Target{Preset: "litellm", InService: []string{"litellm_in_flight_requests"}, Model: "gpt-4o"},
			want: want{
				"gpt-4o":          {"InService": 3, "GatewayErrors": 0, "GatewayCalls": 0},
				"claude-sonnet-4": {"GatewayErrors": 0, "GatewayCalls": 0},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := httpfake.NewCloudWatch()
			defer fake.Close()
			body := fixture(t, tc.file)
			e := serve(t, body)
			if tc.ctype != "" {
				e.ctype = tc.ctype
			}
			tc.target.URL = e.url()
			b := newBridge(t, fake, Config{CloudWatch: allNames, Lowercase: tc.lowercase, Targets: []Target{tc.target}})
			steps(t, b, t0, 2, func(i int) {
				if i == 1 && tc.next != nil {
					e.set(tc.next(body), http.StatusOK)
				}
			})
			second := t0.Add(time.Second)
			for model, metrics := range tc.want {
				for _, metric := range []string{"QueueDepth", "InService", "GatewayErrors", "GatewayCalls"} {
					got := published(fake, metric, model)
					w, wanted := metrics[metric]
					switch {
					case !wanted && len(got) > 0:
						t.Errorf("%s %s: published %v; want nothing", model, metric, got)
					case wanted && (len(got) != 2 || got[second] != w):
						t.Errorf("%s %s: published %v; want 2 seconds, %g at the second", model, metric, got, w)
					}
				}
				// A counter's first scrape has no increase yet.
				if _, ok := metrics["GatewayCalls"]; ok && published(fake, "GatewayCalls", model)[t0] != 0 {
					t.Errorf("%s: calls at the first scrape %v; want 0", model, published(fake, "GatewayCalls", model)[t0])
				}
			}
			for _, p := range fake.Puts() {
				for _, d := range p.Data {
					if _, ok := tc.want[d.Dimensions["Model"]]; !ok {
						t.Errorf("published model %q; want only %v", d.Dimensions["Model"], tc.want)
					}
					if d.StorageResolution != 1 || p.Namespace != "LLMGateway" || d.Unit != "Count" {
						t.Errorf("datum %+v in %s; want high resolution, Count, in LLMGateway", d, p.Namespace)
					}
				}
			}
		})
	}
}

// TestVanishingTargetPublishesNothingForItsModels: a target refused,
// answering 503 or serving what does not parse gets nothing published for
// its models (also a model another target still serves: its sum would be
// short), so the scheduler's reader finds their newest datapoint from
// before and holds; a target back is published again.
func TestVanishingTargetPublishesNothingForItsModels(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	a := serve(t, "# TYPE q gauge\nq{model=\"x\"} 3\nq{model=\"shared\"} 1\n")
	b := serve(t, "# TYPE q gauge\nq{model=\"y\"} 4\nq{model=\"shared\"} 2\n")
	bBody := b.body
	br := newBridge(t, fake, Config{Targets: []Target{
		{URL: a.url(), Depth: []string{"q{model}"}},
		{URL: b.url(), Depth: []string{"q{model}"}},
	}})
	steps(t, br, t0, 6, func(i int) {
		switch i {
		case 2:
			a.srv.Close() // connection refused from now on
		case 3:
			b.set("busy", http.StatusServiceUnavailable)
		case 4:
			b.set("q{model=\"y\" 4\n", http.StatusOK) // does not parse
		case 5:
			b.set(bBody, http.StatusOK)
		}
	})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for model, want := range map[string]map[time.Time]float64{
		"x":      {at(0): 3, at(1): 3},
		"shared": {at(0): 3, at(1): 3},
		"y":      {at(0): 4, at(1): 4, at(2): 4, at(5): 4},
	} {
		if got := published(fake, "QueueDepth", model); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: published %v; want %v", model, got, want)
		}
	}
	// The scheduler's reader: x's newest datapoint is from before a
	// vanished, so the limits hold on it (stale), never read zero.
	r := gatewaydepth.New(cwClient(fake.URL()), gatewaydepth.Config{Period: time.Second, Lookback: time.Minute})
	d, err := r.Depths(context.Background(), []string{"x", "y"}, at(6))
	if err != nil {
		t.Fatal(err)
	}
	if d["x"].Value != 3 || !d["x"].At.Equal(at(2)) || d["y"].Value != 4 || !d["y"].At.Equal(at(6)) {
		t.Errorf("read back %+v; want x 3 ending at %v (before it vanished), y 4 ending at %v", d, at(2), at(6))
	}
}

// TestCounterResets: a counter lower than at the previous scrape was
// reset; its increase is its new value, never negative nor its history;
// after a failed scrape the next value is a new start (no increase).
func TestCounterResets(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	e := serve(t, "")
	br := newBridge(t, fake, Config{CloudWatch: CloudWatch{Errors: "E", Calls: "C"}, Targets: []Target{
		{URL: e.url(), Errors: []string{"gw_errors_total{model}"}, Calls: []string{"gw_calls_total{model}"}},
	}})
	calls := []int{100, 110, 3, 5, -1, 900, 905}
	steps(t, br, t0, len(calls), func(i int) {
		if calls[i] < 0 {
			e.set("down", http.StatusBadGateway)
			return
		}
		e.set(fmt.Sprintf("# TYPE gw_calls_total counter\ngw_calls_total{model=\"m\"} %d\n# TYPE gw_errors_total counter\ngw_errors_total{model=\"m\"} %d\n", calls[i], calls[i]/10), http.StatusOK)
	})
	got := published(fake, "C", "m")
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	want := map[time.Time]float64{at(0): 0, at(1): 10, at(2): 3, at(3): 2, at(5): 0, at(6): 5}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls published %v; want %v", got, want)
	}
	if errs := published(fake, "E", "m"); errs[at(2)] != 0 || errs[at(1)] != 1 {
		t.Errorf("errors published %v; want 1 at 1 s, 0 at the reset (3/10 rounds to 0)", errs)
	}
}

// TestModelAppearingMidRun: a model first listed at the third scrape is
// published from then on, every second, zeros once its series goes.
func TestModelAppearingMidRun(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	e := serve(t, "")
	br := newBridge(t, fake, Config{Targets: []Target{{URL: e.url(), Preset: "vllm"}}})
	line := func(model string, v int) string {
		return fmt.Sprintf("vllm:num_requests_waiting{engine=\"0\",model_name=%q} %d.0\n", model, v)
	}
	steps(t, br, t0, 6, func(i int) {
		body := "# TYPE vllm:num_requests_waiting gauge\n" + line("a", 1)
		if i == 2 || i == 3 {
			body += line("b", 5)
		}
		e.set(body, http.StatusOK)
	})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	want := map[time.Time]float64{at(2): 5, at(3): 5, at(4): 0, at(5): 0}
	if got := published(fake, "QueueDepth", "b"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("b published %v; want %v", got, want)
	}
	if got := published(fake, "QueueDepth", "a"); len(got) != 6 {
		t.Errorf("a published %v; want every second", got)
	}
}

// TestStepPublishesEachPeriodWhole: Step sends what it gathered when a new
// PublishEvery starts, in one call, before it scrapes: each call holds
// whole 10-second periods, one datapoint per second.
func TestStepPublishesEachPeriodWhole(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	e := serve(t, fixture(t, "vllm.txt"))
	br := newBridge(t, fake, Config{Targets: []Target{{URL: e.url(), Preset: "vllm"}}})
	for s := range 21 {
		if err := br.Step(context.Background(), t0.Add(time.Duration(s)*time.Second+300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	puts := fake.Puts()
	if len(puts) != 2 {
		t.Fatalf("%d PutMetricData calls after 21 s; want 2 (at 10 s and 20 s)", len(puts))
	}
	for k, p := range puts {
		if len(p.Data) != 10 {
			t.Errorf("call %d: %d datums; want 10", k, len(p.Data))
		}
		for j, d := range p.Data {
			if want := t0.Add(time.Duration(10*k+j) * time.Second); !d.Timestamp.Equal(want) {
				t.Errorf("call %d datum %d at %v; want %v", k, j, d.Timestamp, want)
			}
		}
	}
}

// TestBatchesStayWithinPutMetricDataLimits publishes 700 models of the
// longest names the configuration allows, depth and in service: 1,400
// datums go in calls of at most 1,000, each body under 1 MB (the fake
// refuses more, as CloudWatch does).
func TestBatchesStayWithinPutMetricDataLimits(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	var body strings.Builder
	body.WriteString("# TYPE q gauge\n# TYPE r gauge\n")
	for i := range 700 {
		model := fmt.Sprintf("%03d%s", i, strings.Repeat("m", 125)) // 128 bytes, the longest job model name
		fmt.Fprintf(&body, "q{model=%q} %d\nr{model=%q} 1\n", model, i, model)
	}
	e := serve(t, body.String())
	long := strings.Repeat("N", 255)
	br := newBridge(t, fake, Config{
		CloudWatch: CloudWatch{Namespace: long, Dimension: "Model", Depth: strings.Repeat("D", 255), InService: strings.Repeat("S", 255)},
		Targets:    []Target{{URL: e.url(), Depth: []string{"q{model}"}, InService: []string{"r{model}"}}},
	})
	steps(t, br, t0, 1, nil)
	puts := fake.Puts()
	total := 0
	for _, p := range puts {
		total += len(p.Data)
		if len(p.Data) > httpfake.MaxPutDatums || p.Bytes > httpfake.MaxPutBytes {
			t.Errorf("a call of %d datums, %d bytes", len(p.Data), p.Bytes)
		}
	}
	if len(puts) != 2 || total != 1400 {
		t.Errorf("%d calls, %d datums; want 2 calls, 1400 datums", len(puts), total)
	}
	t.Logf("the largest body: %d bytes for %d datums", puts[0].Bytes, len(puts[0].Data))
}
