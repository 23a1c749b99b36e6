package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/iamcheck"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/schedulerfn"
)

// TestFlowsUnderTheTemplatesRole runs the scheduler's real flows —
// passes that launch (RunTask, passing the sandbox's roles), the lease
// taken over minute by minute, the reconciler stopping a task past its
// timeout and putting back a crashed pass's sampled job, a provider's drop
// — with the function's environment and IAM role as template.yaml deploys
// them: every SDK call is refused unless SchedulerRole grants it on that
// resource (internal/iamcheck). ECS and CloudWatch are the HTTP-level
// fakes, so the real clients serialize every call. Both depth sources:
// GetMetricData, and the bridge's readings item (no GetMetricData grant).
func TestFlowsUnderTheTemplatesRole(t *testing.T) {
	for _, source := range []string{"cloudwatch", "dynamodb"} {
		t.Run(source, func(t *testing.T) { flows(t, source) })
	}
}

func flows(t *testing.T, source string) {
	ctx := context.Background()
	stack, check := iamcheck.Function(t, "SchedulerFunction", map[string]string{"Subnets": "subnet-1", "SecurityGroups": "sg-1", "GatewayDepthSource": source})
	ddb := localservers.DynamoDB(t)
	ecsFake, cw := httpfake.NewECS(), httpfake.NewCloudWatch()
	t.Cleanup(ecsFake.Close)
	t.Cleanup(cw.Close)
	env := stack.Setenv(t, "SchedulerFunction", map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": ddb, "AWS_ENDPOINT_URL_ECS": ecsFake.URL(), "AWS_ENDPOINT_URL_CLOUDWATCH": cw.URL(),
		// Two passes a second apart per invocation: the minute, shortened.
		"EVALSCHED_PASS_INTERVAL_SECONDS": "1", "EVALSCHED_PASSES": "2",
	})
	store := dynamotest.Tables(t, ddb, env["EVALSCHED_TABLE_PREFIX"], scheduler.ModelConfig{})
	if env["EVALSCHED_DEPTH_SOURCE"] != source {
		t.Fatalf("EVALSCHED_DEPTH_SOURCE is %q, want %q", env["EVALSCHED_DEPTH_SOURCE"], source)
	}
	raw, err := dynamostore.LocalClient(ctx, ddb)
	if err != nil {
		t.Fatal(err)
	}
	readings := &depthitem.Writer{API: raw, Table: dynamostore.DefaultTables(env["EVALSCHED_TABLE_PREFIX"]).State}
	if err := store.PutModel(ctx, scheduler.ModelConfig{Name: "gpt-5.5", Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 2, InitialLimit: 8}); err != nil {
		t.Fatal(err)
	}
	b := job.BatchSpec{Account: "acme", Project: "iam", Batch: "b", Model: "gpt-5.5", Tier: 1, TimeoutSeconds: 60}
	for i := range 20 {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("j-%02d", i)})
	}
	if _, err := store.Submit(ctx, b, time.Now()); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	h, err := build(ctx, slog.New(slog.NewJSONHandler(&logs, nil)), check.LoadOption())
	if err != nil {
		t.Fatal(err)
	}
	// The EMF the runner writes to stdout in Lambda, here to a buffer:
	// the model's values (its depth) are there, not in the pass line.
	var metrics bytes.Buffer
	runnerOf := h.Runner
	h.Runner = func(shard int) (*schedulerfn.Runner, error) {
		r, err := runnerOf(shard)
		if r != nil {
			r.Metrics = &metrics
		}
		return r, err
	}
	invoke := func(depth float64) {
		t.Helper()
		now := time.Now()
		for s := range 5 {
			cw.Put("gpt-5.5", now.Add(-time.Duration(s)*time.Second), depth)
		}
		if err := readings.Put(ctx, now, map[string]scheduler.Depth{"gpt-5.5": {Value: depth, At: now}}); err != nil {
			t.Fatal(err)
		}
		res, err := h.Handle(ctx, json.RawMessage(`{"shard": 0}`))
		if err != nil {
			t.Errorf("invocation at depth %g: %+v, %v", depth, res, err)
		}
	}
	invoke(0) // an idle gateway: launches
	// A job that has run past its timeout: the reconciler stops its task.
	inflight, err := store.InFlight(ctx)
	if err != nil || len(inflight) == 0 {
		t.Fatalf("in flight after the launches: %v, %d jobs", err, len(inflight))
	}
	late := inflight[0]
	ecsFake.SetStatus(late.TaskARN, "RUNNING")
	if err := store.TaskStarted(ctx, late.ID, late.Attempt, time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	invoke(0) // the next minute: takes the lease over, reconciles
	// A pass that crashed between its claim and the launch, three
	// minutes ago, of a sampled job: the reconciler looks for its task
	// (ListTasks) and puts it back, checking its batch's stop mark.
	sampled := job.BatchSpec{Account: "acme", Project: "iam", Batch: "sampled", Model: "claude-opus-4.8", Tier: 0,
		Sampling: &sampling.Params{MOE: 0.1, Confidence: 0.9, MinPerStratum: 1}, Jobs: []job.JobSpec{{Key: "q-1", Stratum: "math"}}}
	if _, err := store.Submit(ctx, sampled, time.Now()); err != nil {
		t.Fatal(err)
	}
	q := scheduler.QueueKey{Account: sampled.Account, Project: sampled.Project, Batch: sampled.Batch, Model: sampled.Model}
	crashed, err := store.Commit(ctx, scheduler.Plan{At: time.Now().Add(-3 * time.Minute),
		Models: []scheduler.ModelPlan{{Model: sampled.Model, Grants: []scheduler.Grant{{Queue: q, Count: 1}}}}}, nil)
	if err != nil || len(crashed.Claimed) != 1 {
		t.Fatalf("claim the sampled job: %v", err)
	}
	invoke(0)
	if j, _, err := store.Job(ctx, crashed.Claimed[0].ID); err != nil || j.State == job.Claimed {
		t.Errorf("the crashed pass's job is %s (%v), want it put back or launched", j.State, err)
	}
	invoke(1000)                                                                                          // the provider drops
	if !regexp.MustCompile(`"GatewayDepth":[1-9][^\n]*"Model":"gpt-5.5"`).MatchString(metrics.String()) { // the earlier passes read 0
		t.Errorf("no pass read the depth of 1,000 from %s\n%s", source, tail(metrics.String()))
	}
	if len(ecsFake.Tasks()) == 0 {
		t.Errorf("no task launched\n%s", tail(logs.String()))
	}
	if d := check.Denied(); len(d) > 0 {
		t.Errorf("SchedulerRole refused %d calls the scheduler makes:\n%s\nthe function logged:\n%s", len(d), check.Report(), tail(logs.String()))
	}
	check.RequireExercised(t, "SchedulerRole")
}

func tail(s string) string {
	if len(s) > 6000 {
		return s[len(s)-6000:]
	}
	return s
}
