package schedulerfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/evalsched/evalsched/internal/dynamolease"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestParseShard(t *testing.T) {
	scheduled, err := os.ReadFile("../../events/eventbridge-scheduled.json")
	if err != nil {
		t.Fatal(err)
	}
	shard1, err := os.ReadFile("../../events/eventbridge-scheduled-shard1.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		event  string
		shards int
		want   int
		err    string // the whole error
	}{
		{"no body", "", 4, 0, ""},
		{"null", "null", 4, 0, ""},
		{"an object without the field", " {} ", 4, 0, ""},
		{"EventBridge's own scheduled event", string(scheduled), 1, 0, ""},
		{"the sample shard event", string(shard1), 2, 1, ""},
		{"the last shard", `{"shard": 3}`, 4, 3, ""},
		{"shard 0 of one", `{"shard": 0}`, 1, 0, ""},
		{"zero shards are one", `{"shard": 0}`, 0, 0, ""},
		{"past the last shard", `{"shard": 4}`, 4, 0, "scheduler event: shard: 4 is not an integer in 0..3 (EVALSCHED_SHARDS is 4)"},
		{"a shard without sharding", `{"shard": 1}`, 1, 0, "scheduler event: shard: 1 is not an integer in 0..0 (EVALSCHED_SHARDS is 1)"},
		{"negative", `{"shard": -1}`, 4, 0, "scheduler event: shard: -1 is not an integer in 0..3 (EVALSCHED_SHARDS is 4)"},
		{"a string", `{"shard": "1"}`, 4, 0, `scheduler event: shard: "1" is not an integer in 0..3 (EVALSCHED_SHARDS is 4)`},
		{"a fraction", `{"shard": 1.5}`, 4, 0, "scheduler event: shard: 1.5 is not an integer in 0..3 (EVALSCHED_SHARDS is 4)"},
		{"an exponent", `{"shard": 1e0}`, 4, 0, "scheduler event: shard: 1e0 is not an integer in 0..3 (EVALSCHED_SHARDS is 4)"},
		{"null shard", `{"shard": null}`, 4, 0, "scheduler event: shard: null is not an integer in 0..3 (EVALSCHED_SHARDS is 4)"},
		{"not an object", `[1]`, 4, 0, `scheduler event: not a JSON object (want {"shard": k}, 0 ≤ k < 4): json: cannot unmarshal array into Go value of type map[string]json.RawMessage`},
		{"malformed", `{"shard": 1`, 4, 0, `scheduler event: not a JSON object (want {"shard": k}, 0 ≤ k < 4): unexpected end of JSON input`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseShard(json.RawMessage(c.event), c.shards)
			switch {
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("got %d, %v; want shard %d", got, err, c.want)
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Errorf("got %d, %v; want the error %q", got, err, c.err)
			}
		})
	}
}

// With two shards, "claude-opus-4.8" is shard 0's and "gpt-5.5" shard 1's
// (scheduler.TestShardOfIsStable).
const model0, model1 = "claude-opus-4.8", "gpt-5.5"

// twoModels is a store with 7 waiting jobs of each model.
func twoModels(t *testing.T, at time.Time) *memstore.Store {
	t.Helper()
	st := memstore.New(scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 5})
	for _, m := range []string{model0, model1} {
		spec := job.BatchSpec{Account: "acme", Project: "p", Batch: "b-" + m, Model: m, Tier: -1}
		for i := range 7 {
			spec.Jobs = append(spec.Jobs, job.JobSpec{Key: fmt.Sprint(i)})
		}
		if _, err := st.Submit(context.Background(), spec, at); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// shardFixture builds the runners of a two-shard deployment over one store,
// as functions/scheduler wires the Lambda's.
type shardFixture struct {
	store    *memstore.Store
	leases   func(shard int, owner string) passloop.Lease
	clocks   [2]*passfake.Clock
	launched [2]*passfake.Launcher
	metrics  [2]bytes.Buffer
	logs     bytes.Buffer
	// reconcile, when set, runs as shard k's reconciler.
	reconcile [2]func(ctx context.Context, now time.Time) (any, error)
}

func (f *shardFixture) runner(shard int) *Runner {
	f.clocks[shard] = passfake.NewClock(t0)
	f.launched[shard] = &passfake.Launcher{}
	owns := func(m string) bool { return scheduler.ShardOf(m, 2) == shard }
	cfg := scheduler.DefaultConfig()
	return &Runner{
		Shard:     shard,
		Scheduler: &scheduler.Scheduler{Store: f.store.Shard(owns), Depths: passfake.IdleGateway{}, Launcher: f.launched[shard], Clock: f.clocks[shard], Config: cfg},
		Lease:     func(owner string) passloop.Lease { return f.leases(shard, owner) },
		Clock:     f.clocks[shard], Metrics: &f.metrics[shard], Namespace: "evalsched",
		Reconcile: f.reconcile[shard],
		Log:       slog.New(slog.NewJSONHandler(&f.logs, nil)),
	}
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// invoke runs the handler as Lambda does, with an event and a request id.
func invoke(h *Handler, event, requestID string) (Result, error) {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
	out, err := lambda.NewHandler(h.Handle).Invoke(ctx, []byte(event))
	var res Result
	if err == nil {
		if jerr := json.Unmarshal(out, &res); jerr != nil {
			return res, fmt.Errorf("result %s: %w", out, jerr)
		}
	}
	return res, err
}

// The handler builds a shard's runner on its first invocation and keeps it;
// a build that fails is tried again; a bad event builds nothing and fails
// the invocation with the field and the rule.
func TestHandlerBuildsEachShardOnce(t *testing.T) {
	f := &shardFixture{store: twoModels(t, t0)}
	held := [2]*passfake.Lease{{}, {}}
	f.leases = func(shard int, owner string) passloop.Lease { return held[shard].Handle(owner) }
	builds := map[int]int{}
	failNext := true
	h := &Handler{Shards: 2, Runner: func(k int) (*Runner, error) {
		builds[k]++
		if k == 1 && failNext {
			failNext = false
			return nil, errors.New("ecs client: boom")
		}
		return f.runner(k), nil
	}}

	if _, err := invoke(h, `{"shard": 2}`, "req-0"); err == nil || !strings.Contains(err.Error(), "shard: 2 is not an integer in 0..1") {
		t.Fatalf("shard 2 of 2: got %v, want the rule", err)
	}
	if _, err := invoke(h, `{"shard": 1}`, "req-1"); err == nil || !strings.Contains(err.Error(), "build shard 1: ecs client: boom") {
		t.Fatalf("failing build: got %v", err)
	}
	for i, ev := range []string{`{"shard": 1}`, `{"shard": 0}`, `{"shard": 1}`} {
		if res, err := invoke(h, ev, fmt.Sprint("req-", i+2)); err != nil || res.Passes != 6 {
			t.Fatalf("%s: got %+v, %v; want six passes", ev, res, err)
		}
	}
	if builds[0] != 1 || builds[1] != 2 || len(builds) != 2 {
		t.Errorf("got builds %v, want shard 0 once, shard 1 twice (one failed), nothing else", builds)
	}
	// Each shard launched its own model's jobs only: the initial limit of 5.
	for k, want := range []string{model0, model1} {
		if got := f.launched[k].Models(); len(got) != 1 || got[want] != 5 {
			t.Errorf("shard %d launched %v, want 5 of %s only", k, got, want)
		}
	}
	// Its metrics and log lines name it.
	if !strings.Contains(f.metrics[1].String(), `"Shard":"1"`) || strings.Contains(f.metrics[1].String(), `"Shard":"0"`) {
		t.Errorf("shard 1's EMF documents do not carry Shard 1 alone")
	}
	passes := map[float64]int{}
	for _, line := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON", line)
		}
		if rec["msg"] == "pass" {
			k, _ := rec["shard"].(float64)
			passes[k]++
		}
	}
	if passes[0] != 6 || passes[1] != 12 {
		t.Errorf("got pass lines by shard %v, want 6 of shard 0 and 12 of shard 1", passes)
	}
}

// Against DynamoDB Local, with the real lease items: shard 1 runs its whole
// minute while shard 0's invocation holds shard 0's lease, and a second
// invocation of shard 0 finds it held and exits.
func TestShardsHoldTheirLeasesSideBySide(t *testing.T) {
	ctx := context.Background()
	client, err := dynamostore.LocalClient(ctx, localservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	tables := dynamostore.DefaultTables("shards-")
	if err := dynamostore.New(client, tables, scheduler.ModelConfig{}).CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	f := &shardFixture{store: twoModels(t, t0)}
	f.leases = func(shard int, owner string) passloop.Lease {
		return dynamolease.ForShard(client, tables.State, shard, owner)
	}
	// Shard 0's first invocation stops in its first slot, under its lease,
	// until released.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.reconcile[0] = func(context.Context, time.Time) (any, error) {
		once.Do(func() { close(entered); <-release })
		return nil, nil
	}
	h := &Handler{Shards: 2, Runner: func(k int) (*Runner, error) { return f.runner(k), nil }}
	// Both built before the invocations overlap: the fixture's builder is
	// not safe for concurrent use (the Lambda's is).
	for k := range 2 {
		if _, err := h.runner(k); err != nil {
			t.Fatal(err)
		}
	}

	first := make(chan error, 1)
	var firstRes Result
	go func() {
		var err error
		firstRes, err = invoke(h, `{"shard": 0}`, "shard-0-a")
		first <- err
	}()
	select {
	case <-entered:
	case err := <-first:
		t.Fatalf("shard 0's first invocation ended before its first slot: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("shard 0's first invocation never reached its first slot")
	}

	// While shard 0 is held: shard 1 takes its own lease and passes.
	res, err := invoke(h, `{"shard": 1}`, "shard-1-a")
	if err != nil || res.Passes != 6 {
		t.Fatalf("shard 1 beside shard 0: got %+v, %v; want six passes", res, err)
	}
	// A second invocation of shard 0 does not.
	res, err = invoke(h, `{"shard": 0}`, "shard-0-b")
	if err != nil || res.Passes != 0 || !strings.Contains(res.Stopped, "shard-0-a") {
		t.Fatalf("second invocation of shard 0: got %+v, %v; want no pass and shard-0-a named", res, err)
	}

	close(release)
	if err := <-first; err != nil || firstRes.Passes != 6 {
		t.Fatalf("shard 0's first invocation: got %+v, %v; want six passes", firstRes, err)
	}
	if got := f.launched[0].Models(); len(got) != 1 || got[model0] != 5 {
		t.Errorf("shard 0 launched %v, want 5 of %s only", got, model0)
	}
	if got := f.launched[1].Models(); len(got) != 1 || got[model1] != 5 {
		t.Errorf("shard 1 launched %v, want 5 of %s only", got, model1)
	}
}
