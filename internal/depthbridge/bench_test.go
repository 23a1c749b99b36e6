package depthbridge

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
)

type discardAPI struct{ datums int }

func (d *discardAPI) PutMetricData(_ context.Context, in *cloudwatch.PutMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	d.datums += len(in.MetricData)
	return &cloudwatch.PutMetricDataOutput{}, nil
}

// envoyExposition is an Envoy's /stats/prometheus with n model clusters:
// the families the preset reads, 7 lines a cluster.
func envoyExposition(n int) string {
	var b strings.Builder
	for _, f := range []struct{ name, typ, extra string }{
		{"envoy_cluster_upstream_rq_pending_active", "gauge", ""},
		{"envoy_cluster_upstream_rq_active", "gauge", ""},
		{"envoy_cluster_upstream_rq_total", "counter", ""},
		{"envoy_cluster_upstream_rq_xx", "counter", `envoy_response_code_class="2",`},
		{"envoy_cluster_upstream_rq_xx", "counter", `envoy_response_code_class="5",`},
		{"envoy_cluster_upstream_rq", "counter", `envoy_response_code="429",`},
		{"envoy_cluster_upstream_rq", "counter", `envoy_response_code="200",`},
	} {
		if !strings.Contains(b.String(), "# TYPE "+f.name+" ") {
			fmt.Fprintf(&b, "# TYPE %s %s\n", f.name, f.typ)
		}
		for i := range n {
			fmt.Fprintf(&b, "%s{%senvoy_cluster_name=\"model-%04d\"} %d\n", f.name, f.extra, i, i)
		}
	}
	return b.String()
}

// BenchmarkStepEnvoy1000Clusters is one second's work for an Envoy of
// 1,000 model clusters, every role published: scrape over loopback, parse,
// sum, and send the previous second's 4,000 datapoints to an API that
// discards them. It must stay well inside the 1-s interval.
func BenchmarkStepEnvoy1000Clusters(b *testing.B) {
	e := serve(b, envoyExposition(1000))
	br, err := New(&discardAPI{}, nil, Config{PublishEvery: Duration(time.Second), CloudWatch: allNames,
		Targets: []Target{{URL: e.url(), Preset: "envoy"}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if err := br.Step(ctx, t0.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
}
