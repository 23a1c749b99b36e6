package bill

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/localservers"
)

var (
	server   *localservers.Server
	startErr error
	start    sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

func endpoint(t *testing.T) string {
	t.Helper()
	start.Do(func() { server, startErr = localservers.StartDynamoDB() })
	if startErr != nil {
		t.Fatal(startErr)
	}
	return server.Endpoint
}

// small is a load small enough to measure in seconds: 6 models, all busy,
// 12 batches, a pass launching 6 jobs, single-job messages.
var small = Load{JobsPerWeek: 6 * 60480, Models: 6, ActiveModels: 6, PassInterval: 10 * time.Second,
	JobLength: 20 * time.Minute, ActiveBatches: 12, Waiting: 100, JobsPerMessage: 1}

// TestRequestsOfAPassAndAJob pins what one pass and one job's life ask of
// DynamoDB and CloudWatch: a change that adds a request or a unit moves
// these numbers (and the bill: evalsched cost), so it shows in review.
func TestRequestsOfAPassAndAJob(t *testing.T) {
	ms, err := Measure(context.Background(), endpoint(t), small, Setup{ModelMetrics: emf.Full, InService: true, ErrorRate: true,
		TaskStatuses: []string{"RUNNING", "STOPPED"}, Readings: true})
	if err != nil {
		t.Fatal(err)
	}
	n, k := float64(ms.JobsMeasured), float64(ms.Claimed)
	got := map[string]PerUnit{
		"pass (snapshot, model states, other)": ms.PassFixed.Per(1),
		"job: submit (a 1-job message)":        ms.Submit.Per(1),
		"job: claim":                           ms.Claim.Per(k),
		"job: launch record":                   ms.Record.Per(k),
		"job: task events (RUNNING, STOPPED)":  ms.Events.Per(n),
		"job: result":                          ms.Result.Per(n),
		"invocation: the scheduler's lease":    ms.Lease.Per(1),
		"pass: the bridge's readings item":     ms.DepthRead.Per(1),
		"bridge: one write of its readings":    ms.ReadingsPut.Per(1),
	}
	want := map[string]string{
		"pass (snapshot, model states, other)": "{Requests:43 ByOp:map[BatchGetItem:1 Query:34 Scan:2 UpdateItem(model states):6] RRU:17 WRU:6}",
		"job: submit (a 1-job message)":        "{Requests:6 ByOp:map[BatchGetItem:1 BatchWriteItem:1 Query:1 TransactWriteItems:1 UpdateItem:2] RRU:0 WRU:15}",
		"job: claim":                           "{Requests:0.5 ByOp:map[BatchGetItem:0.333 TransactWriteItems:0.167] RRU:1.167 WRU:6}",
		"job: launch record":                   "{Requests:1 ByOp:map[UpdateItem:1] RRU:0 WRU:2}",
		"job: task events (RUNNING, STOPPED)":  "{Requests:4 ByOp:map[GetItem:2 TransactWriteItems:1 UpdateItem:1] RRU:2 WRU:9}",
		"job: result":                          "{Requests:2 ByOp:map[GetItem:1 UpdateItem:1] RRU:1 WRU:1}",
		"invocation: the scheduler's lease":    "{Requests:8 ByOp:map[DeleteItem:1 PutItem:1 UpdateItem:6] RRU:0 WRU:8}",
		"pass: the bridge's readings item":     "{Requests:1 ByOp:map[Query:1] RRU:0.5 WRU:0}",
		"bridge: one write of its readings":    "{Requests:1 ByOp:map[PutItem:1] RRU:0 WRU:1}",
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if g := fmt.Sprintf("%+v", got[name]); g != want[name] {
			t.Errorf("%s:\n got  %s\n want %s", name, g, want[name])
		}
	}
	if ms.MetricQueries != 0 || ms.MetricCalls != 0 {
		t.Errorf("GetMetricData with the readings item: got %d queries in %d calls, want none", ms.MetricQueries, ms.MetricCalls)
	}
	// GatewayDepthSource cloudwatch: every metric of the busy models in
	// one call.
	ms, err = Measure(context.Background(), endpoint(t), small, Setup{ModelMetrics: emf.Full, InService: true, ErrorRate: true,
		TaskStatuses: []string{"RUNNING", "STOPPED"}})
	if err != nil {
		t.Fatal(err)
	}
	if ms.MetricQueries != 4*small.ActiveModels || ms.MetricCalls != 1 || ms.DepthRead.Requests != 0 {
		t.Errorf("GetMetricData: got %d queries in %d calls (and %d DynamoDB reads), want %d in 1 (and none)", ms.MetricQueries, ms.MetricCalls, ms.DepthRead.Requests, 4*small.ActiveModels)
	}
}

// TestCostDocMatchesTheCode: docs/cost.md shows the bill the code gives at
// the seed's load (make cost-doc writes it): a change that moves a request
// or a unit moves a line there too.
func TestCostDocMatchesTheCode(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the seed's load (~1 min)")
	}
	root, err := localservers.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash("docs/cost.md")))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Run(context.Background(), endpoint(t), SeedLoad(), deployment(t), Recommended)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range CheckDoc(string(doc), b) {
		t.Errorf("docs/cost.md: %s (make cost-doc)", d)
	}
}
