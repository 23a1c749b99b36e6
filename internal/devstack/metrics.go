package devstack

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/depthbridge"
	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/schedulerfn"
)

// depthPath is the gateway's readings as on AWS with the bridge, through
// the parts that run there: the world's gateway serves /metrics as vLLM
// does, `evalsched bridge`'s code scrapes it every second and writes the
// readings item to the state table on DynamoDB Local (depthitem.Writer),
// and the pass reads it back with depthitem.Reader.
type depthPath struct {
	metricsURL string
	metrics    *http.Server
	table      string
	reader     *depthitem.Reader
	stop       context.CancelFunc
	wg         sync.WaitGroup
}

// startDepthPath starts the gateway's /metrics on 127.0.0.1 for the world,
// and the bridge writing to table until ctx ends or Close.
func startDepthPath(ctx context.Context, w *world, cfg config.Config, ddb *dynamodb.Client, table string, log *slog.Logger) (*depthPath, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &depthPath{metricsURL: "http://" + ln.Addr().String() + "/metrics", table: table}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", w.serveMetrics)
	d.metrics = &http.Server{Handler: mux}
	go d.metrics.Serve(ln) //nolint:errcheck // ends with Close
	// The world's gateway publishes its calls in service too, so the limit
	// controller learns each model's provider concurrency from a standing
	// queue (make local's models have no provider_concurrency).
	inService := cmp.Or(cfg.InServiceMetricName, "InService")
	// A period of one second, each second written at the next: the pass
	// reads the queue of a second or two ago, as it read the world's queue
	// now before the bridge. No CloudWatch client: readings only.
	b, err := depthbridge.New(nil, nil, depthbridge.Config{
		Interval: depthbridge.Duration(time.Second), PublishEvery: depthbridge.Duration(time.Second),
		CloudWatch: depthbridge.CloudWatch{Namespace: cfg.MetricNamespace, Dimension: cfg.MetricDimension, Depth: cfg.MetricName, InService: inService},
		Targets:    []depthbridge.Target{{URL: d.metricsURL, Preset: "vllm"}},
	}, log)
	if err != nil {
		d.Close()
		return nil, err
	}
	b.Readings = &depthitem.Writer{API: ddb, Table: table}
	d.reader = &depthitem.Reader{API: ddb, Table: table}
	ctx, d.stop = context.WithCancel(ctx)
	d.wg.Go(func() { _ = b.Run(ctx, schedulerfn.RealClock{}) })
	return d, nil
}

// Close stops the bridge, then the server.
func (d *depthPath) Close() {
	if d.stop != nil {
		d.stop()
	}
	d.wg.Wait()
	_ = d.metrics.Close()
}

// serveMetrics is the gateway's /metrics in vLLM's text exposition: per
// model, the calls queued (vllm:num_requests_waiting) and in service at
// the provider (vllm:num_requests_running), for every model the world was
// told of or has run, zeros included, as a vLLM server lists the models it
// serves from its start.
func (w *world) serveMetrics(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	names := slices.Sorted(maps.Keys(w.known))
	waiting, running := make([]int64, len(names)), make([]int, len(names))
	for i, name := range names {
		if g := w.models[name]; g != nil {
			waiting[i], running[i] = g.waiting.Load(), len(g.slots)
		}
	}
	w.mu.Unlock()
	rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(rw, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n")
	for i, name := range names {
		fmt.Fprintf(rw, "vllm:num_requests_running{engine=\"0\",model_name=%q} %d.0\n", name, running[i])
	}
	fmt.Fprintf(rw, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n# TYPE vllm:num_requests_waiting gauge\n")
	for i, name := range names {
		fmt.Fprintf(rw, "vllm:num_requests_waiting{engine=\"0\",model_name=%q} %d.0\n", name, waiting[i])
	}
}
