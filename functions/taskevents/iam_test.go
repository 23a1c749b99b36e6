package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/iamcheck"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestFlowsUnderTheTemplatesRole runs the task events' real flows — a
// task starts, stops, is retried (a sampled job's: its batch's stop mark is
// checked), a stale event arrives — with the function's environment and
// IAM role as template.yaml deploys them: every SDK call is refused unless
// TaskEventsRole grants it on that resource (internal/iamcheck).
func TestFlowsUnderTheTemplatesRole(t *testing.T) {
	ctx := context.Background()
	stack, check := iamcheck.Function(t, "TaskEventsFunction", nil)
	ddb := localservers.DynamoDB(t)
	env := stack.Setenv(t, "TaskEventsFunction", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": ddb})
	store := dynamotest.Tables(t, ddb, env["EVALSCHED_TABLE_PREFIX"], scheduler.ModelConfig{Enabled: true, MaxLimit: 10})
	plain := dynamotest.ClaimedSampleJob(t, store)
	sampled := dynamotest.SampleBatch()
	sampled.Batch = "iam-sampled"
	sampled.Sampling = &sampling.Params{MOE: 0.1, Confidence: 0.9, MinPerStratum: 1}
	sampled.Jobs[0].Stratum = "math"
	retried := dynamotest.ClaimedJob(t, store, sampled)

	var logs bytes.Buffer
	h, err := build(ctx, slog.New(slog.NewTextHandler(&logs, nil)), check.LoadOption())
	if err != nil {
		t.Fatal(err)
	}
	h.Metrics = io.Discard
	// The events of events/, for the job the test claimed: the launcher's
	// startedBy and overrides name it.
	invoke := func(file, id, batch string) {
		t.Helper()
		event, err := os.ReadFile("../../events/" + file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(event), eventJobID, id)
		text = strings.ReplaceAll(text, dynamotest.SampleBatch().Batch, batch)
		if err := h.Handle(ctx, json.RawMessage(text)); err != nil {
			t.Errorf("%s for %s: %v", file, batch, err)
		}
	}
	state := func(id string) job.State {
		j, _, err := store.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.State
	}

	invoke("ecs-running.json", plain, dynamotest.SampleBatch().Batch) // start
	invoke("ecs-stopped-exit0.json", plain, dynamotest.SampleBatch().Batch)
	invoke("ecs-running.json", plain, dynamotest.SampleBatch().Batch) // stale: the job ended
	if got := state(plain); got != job.Succeeded {
		t.Errorf("the started and stopped job is %s, want SUCCEEDED", got)
	}
	invoke("ecs-spot-interruption.json", retried, sampled.Batch) // retry
	if got := state(retried); got != job.Waiting {
		t.Errorf("the interrupted sampled job is %s, want WAITING (retried)", got)
	}
	if d := check.Denied(); len(d) > 0 {
		t.Errorf("TaskEventsRole refused %d calls the function makes:\n%s\nthe function logged:\n%s", len(d), check.Report(), logs.String())
	}
	check.RequireExercised(t, "TaskEventsRole")
}
