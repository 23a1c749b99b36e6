package schedulerfn

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestRunPassesReportsAndHandsOver(t *testing.T) {
	clock := passfake.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	st := memstore.New(scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 5})
	spec := job.BatchSpec{Account: "acme", Project: "p", Batch: "b", Model: "gpt", Tier: -1}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		spec.Jobs = append(spec.Jobs, job.JobSpec{Key: k})
	}
	if _, err := st.Submit(context.Background(), spec, clock.Now()); err != nil {
		t.Fatal(err)
	}
	l := &passfake.Launcher{}
	reconciled := 0
	var metrics, logs bytes.Buffer
	shared := &passfake.Lease{}
	r := &Runner{
		Scheduler: &scheduler.Scheduler{Store: st, Depths: passfake.IdleGateway{}, Launcher: l, Clock: clock, Config: scheduler.DefaultConfig()},
		Lease:     func(owner string) passloop.Lease { return shared.Handle(owner) },
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
	if n := len(l.Launched()); n != 5 {
		t.Errorf("got %d launches, want the initial limit 5", n)
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
	clock := passfake.NewClock(time.Date(2026, 11, 29, 12, 0, 5, 0, time.UTC))
	held := passfake.HeldBy("req-1", clock.Now().Add(time.Minute))
	r := &Runner{
		Scheduler: &scheduler.Scheduler{Store: memstore.New(scheduler.ModelConfig{}), Launcher: &passfake.Launcher{}, Clock: clock, Config: scheduler.DefaultConfig()},
		Lease:     func(owner string) passloop.Lease { return held.Handle(owner) },
		Clock:     clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	res, err := r.Run(context.Background(), "req-2")
	if err != nil || res.Passes != 0 || !strings.Contains(res.Stopped, "req-1") {
		t.Errorf("got %+v, %v; want no pass and the holder named", res, err)
	}
}
