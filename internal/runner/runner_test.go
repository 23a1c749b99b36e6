package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/scheduler"
)

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time                                 { return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error { c.now = c.now.Add(d); return nil }

// lease is one lease item in memory with the store's conditions.
type lease struct {
	mu    sync.Mutex
	owner string
	until time.Time
}

type handle struct {
	l  *lease
	me string
}

func (h handle) Acquire(_ context.Context, now, until time.Time) (bool, string, time.Time, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.owner != "" && h.l.owner != h.me && now.Before(h.l.until) {
		return false, h.l.owner, h.l.until, nil
	}
	h.l.owner, h.l.until = h.me, until
	return true, h.me, until, nil
}
func (h handle) Renew(_ context.Context, _, until time.Time) (bool, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.owner != h.me {
		return false, nil
	}
	h.l.until = until
	return true, nil
}
func (h handle) Release(context.Context) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.owner == h.me {
		h.l.owner = ""
	}
	return nil
}

type launcher struct{ n int }

func (l *launcher) Launch(_ context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	var out []scheduler.LaunchResult
	for _, j := range jobs {
		l.n++
		out = append(out, scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: "arn:" + j.ID})
	}
	return out
}

type depths struct{}

func (depths) Depths(_ context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	out := map[string]scheduler.Depth{}
	for _, m := range models {
		out[m] = scheduler.Depth{Value: 0, At: now.Add(-20 * time.Second)}
	}
	return out, nil
}

func TestRunPassesReportsAndHandsOver(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	st := memstore.New(scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 5})
	spec := memstore.BatchSpec{Account: "acme", Project: "p", Batch: "b", Model: "gpt", Tier: -1}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		spec.Jobs = append(spec.Jobs, memstore.JobSpec{Key: k})
	}
	if _, err := st.Submit(context.Background(), spec, clock.now); err != nil {
		t.Fatal(err)
	}
	l := &launcher{}
	reconciled := 0
	var metrics, logs bytes.Buffer
	shared := &lease{}
	r := &Runner{
		Scheduler: &scheduler.Scheduler{Store: st, Depths: depths{}, Launcher: l, Clock: clock, Config: scheduler.DefaultConfig()},
		Lease:     func(owner string) passloop.Lease { return handle{shared, owner} },
		Clock:     clock, Metrics: &metrics, Namespace: "evalsched",
		Reconcile: func(context.Context, time.Time) (any, error) { reconciled++; return nil, nil },
		Log:       slog.New(slog.NewJSONHandler(&logs, nil)),
	}
	// Invoked as Lambda invokes it, with the scheduled event of events/: a
	// single scheduler's rule sends EventBridge's own event, which names no
	// shard: shard 0.
	payload, err := os.ReadFile("../../events/eventbridge-scheduled.json")
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Shards: 1, Runner: func(int) (*Runner, error) { return r, nil }}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	out, err := lambda.NewHandler(h.Handle).Invoke(ctx, payload)
	var res Result
	if err != nil || json.Unmarshal(out, &res) != nil || res.Passes != 6 || res.Failed != 0 {
		t.Fatalf("got %s, %v; want six passes", out, err)
	}
	if reconciled != 1 {
		t.Errorf("reconciled %d times in one invocation, want once", reconciled)
	}
	if l.n != 5 {
		t.Errorf("got %d launches, want the initial limit 5", l.n)
	}
	// Every pass is one JSON log line with the model's decision in it.
	lines := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON", line)
		}
		if rec["msg"] == "pass" {
			lines++
			if rec["shard"] != 0.0 {
				t.Errorf("pass line without shard 0: %s", line)
			}
			if !strings.Contains(line, `"limit_reason"`) {
				t.Errorf("pass line without the limit reason: %s", line)
			}
		}
	}
	if lines != 6 {
		t.Errorf("got %d pass lines, want 6", lines)
	}
	if !strings.Contains(metrics.String(), `"JobLimit"`) {
		t.Error("no EMF metrics written")
	}
	// The lease was released: the next invocation takes it at once.
	res, err = r.Run(context.Background(), "req-2")
	if err != nil || res.Passes != 6 {
		t.Fatalf("next invocation: got %+v, %v", res, err)
	}
}

func TestSecondInvocationExitsQuietly(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 5, 0, time.UTC)}
	held := &lease{owner: "req-1", until: clock.now.Add(time.Minute)}
	r := &Runner{
		Scheduler: &scheduler.Scheduler{Store: memstore.New(scheduler.ModelConfig{}), Launcher: &launcher{}, Clock: clock, Config: scheduler.DefaultConfig()},
		Lease:     func(owner string) passloop.Lease { return handle{held, owner} },
		Clock:     clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	res, err := r.Run(context.Background(), "req-2")
	if err != nil || res.Passes != 0 || !strings.Contains(res.Stopped, "req-1") {
		t.Errorf("got %+v, %v; want no pass and the holder named", res, err)
	}
}
