package depthbridge

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestReadingsReachThePassThroughDynamoDB: the bridge, with no CloudWatch
// client, writes each period's readings to the state table on DynamoDB
// Local, and the pass's reader (depthitem.Reader, the scheduler's
// DepthReader in the default deployment) reads them back: the depth's mean
// over the period's seconds, the calls in service at their maximum, the
// error rate of the period's counters; a model whose target went down
// keeps its older reading until the lookback drops it; a model the bridge
// never saw is missing.
func TestReadingsReachThePassThroughDynamoDB(t *testing.T) {
	ctx := context.Background()
	ddb := localservers.DynamoDB(t)
	prefix := fmt.Sprintf("bridge%d-", time.Now().UnixNano())
	dynamotest.Tables(t, ddb, prefix, scheduler.ModelConfig{})
	client, err := dynamostore.LocalClient(ctx, ddb)
	if err != nil {
		t.Fatal(err)
	}
	table := dynamostore.DefaultTables(prefix).State
	ea, eb := serve(t, ""), serve(t, "")
	sel := Target{Depth: []string{"gw_queue{model}"}, InService: []string{"gw_active{model}"},
		Errors: []string{"gw_errors_total{model}"}, Calls: []string{"gw_calls_total{model}"}}
	ta, tb := sel, sel
	ta.URL, tb.URL = ea.url(), eb.url()
	br, err := New(nil, nil, Config{CloudWatch: allNames, Targets: []Target{ta, tb}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	br.Readings = &depthitem.Writer{API: client, Table: table}
	body := func(model string, queue, active, errors, calls int) string {
		return fmt.Sprintf("# TYPE gw_queue gauge\ngw_queue{model=%q} %d\n# TYPE gw_active gauge\ngw_active{model=%q} %d\n"+
			"# TYPE gw_errors_total counter\ngw_errors_total{model=%q} %d\n# TYPE gw_calls_total counter\ngw_calls_total{model=%q} %d\n",
			model, queue, model, active, model, errors, model, calls)
	}
	steps(t, br, t0, 20, func(i int) {
		errs := 0
		if i >= 10 {
			errs = i - 9 // one error a second in the second period
		}
		ea.set(body("a", i, 2*i, errs, 10*i), http.StatusOK)
		if i < 10 {
			eb.set(body("b", 7, 3, 0, 5*i), http.StatusOK)
		} else {
			eb.set("down", http.StatusBadGateway) // b: nothing in the second period
		}
	})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	r := &depthitem.Reader{API: client, Table: table}
	got, err := r.Depths(ctx, []string{"a", "b", "never-seen"}, at(21))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]scheduler.Depth{
		// Seconds 10..19: queue 10..19, active up to 38, 10 errors in 100 calls.
		"a": {Value: 14.5, At: at(20), InService: 38, InServiceAt: at(20), ErrorRate: 0.1, Calls: 100, ErrorAt: at(20)},
		// Seconds 0..9 (its target down after): 45 calls (the first
		// scrape's counters add nothing), no errors.
		"b": {Value: 7, At: at(10), InService: 3, InServiceAt: at(10), ErrorRate: 0, Calls: 45, ErrorAt: at(10)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read back\n %+v\nwant\n %+v", got, want)
	}
	// A lookback of 5 s: b's reading, 11 s old, is stale and missing.
	r.Lookback = 5 * time.Second
	got, err = r.Depths(ctx, []string{"a", "b"}, at(21))
	if _, ok := got["b"]; err != nil || ok || got["a"].Value != 14.5 {
		t.Errorf("with a 5-s lookback: %+v, %v; want a alone", got, err)
	}
}
