package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/iamcheck"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestFlowsUnderTheTemplatesRole runs the results function's real flows —
// a verdict recorded, invalid ones dead-lettered, a sampled batch's
// verdicts that meet its stop rule and skips the rest — with the
// function's environment and IAM role as template.yaml deploys them: every
// SDK call is refused unless ResultsRole grants it on that resource
// (internal/iamcheck).
func TestFlowsUnderTheTemplatesRole(t *testing.T) {
	ctx := context.Background()
	stack, check := iamcheck.Function(t, "ResultsFunction", nil)
	ddb, sqsEndpoint := localservers.DynamoDB(t), localservers.SQS(t)
	_, urls := stack.Queues(t, sqsEndpoint, "ResultsDeadLetterQueue")
	env := stack.Setenv(t, "ResultsFunction", map[string]string{
		"EVALSCHED_DLQ_URL":         urls[0],
		"AWS_ENDPOINT_URL_DYNAMODB": ddb, "AWS_ENDPOINT_URL_SQS": sqsEndpoint,
	})
	store := dynamotest.Tables(t, ddb, env["EVALSCHED_TABLE_PREFIX"], scheduler.ModelConfig{Enabled: true, MaxLimit: 10})
	plain := dynamotest.ClaimedSampleJob(t, store)
	sampled := dynamotest.SampleBatch()
	sampled.Batch = "iam-sampled"
	sampled.Sampling = &sampling.Params{MOE: 0.5, Confidence: 0.5, MinPerStratum: 1}
	sampled.Jobs = nil
	for i := range 20 {
		sampled.Jobs = append(sampled.Jobs, job.JobSpec{Key: fmt.Sprintf("q-%d", i), Stratum: "math"})
	}
	if _, err := store.Submit(ctx, sampled, time.Now()); err != nil {
		t.Fatal(err)
	}
	q := scheduler.QueueKey{Account: sampled.Account, Project: sampled.Project, Batch: sampled.Batch, Model: sampled.Model}
	c, err := store.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: sampled.Model, Grants: []scheduler.Grant{{Queue: q, Count: 10}}}}}, nil)
	if err != nil || len(c.Claimed) != 10 {
		t.Fatalf("claim 10 sampled jobs: %v, %d", err, len(c.Claimed))
	}

	var logs bytes.Buffer
	h, err := build(ctx, slog.New(slog.NewTextHandler(&logs, nil)), check.LoadOption())
	if err != nil {
		t.Fatal(err)
	}
	// events/sqs-results.json: one verdict for the sample job, two invalid.
	data, err := os.ReadFile("../../events/sqs-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(data), "66476c6c86396f14ee4b0f45f2b7bbe3", plain)), &ev); err != nil {
		t.Fatal(err)
	}
	for i, j := range c.Claimed { // ten passes: the stop rule holds, the rest is skipped
		body, _ := json.Marshal(map[string]any{"version": 1, "job_id": j.ID, "attempt": 1, "outcome": "pass", "result_token": j.ResultToken.Reveal()})
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("sampled-%d", i), Body: string(body), EventSource: "aws:sqs"})
	}
	resp, err := h.Handle(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("err %v, batch item failures %v, want none", err, resp.BatchItemFailures)
	}
	if r, ok, err := store.JobResult(ctx, plain); err != nil || !ok || !r.Pass {
		t.Errorf("the sample job's result %+v, %v, %v; want its pass", r, ok, err)
	}
	skipped := 0
	for i := range 20 {
		j, _, err := store.Job(ctx, job.JobID(sampled.Account, sampled.Project, sampled.Batch, fmt.Sprintf("q-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if j.State == job.Skipped {
			skipped++
		}
	}
	if skipped == 0 {
		t.Errorf("no job of the sampled batch was skipped: its stop rule did not run\n%s", logs.String())
	}
	if d := check.Denied(); len(d) > 0 {
		t.Errorf("ResultsRole refused %d calls the function makes:\n%s\nthe function logged:\n%s", len(d), check.Report(), logs.String())
	}
	check.RequireExercised(t, "ResultsRole")
}
