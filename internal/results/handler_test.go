package results

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// TestHandleEventFile drives the handler with events/sqs-results.json
// against a store holding the batch of events/sqs-batch.json and a
// dead-letter queue on fauxqs: the valid verdict is recorded; the
// malformed message, the one naming no job, and the two naming the job's
// attempt with a forged token or none are dead-lettered with their
// reasons; nothing is retried; the same delivery again records nothing
// new.
func TestHandleEventFile(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(scheduler.ModelConfig{})
	store.SetTokenSource(dynamotest.SampleTokens)
	b := job.BatchSpec{Account: "acme", Project: "search-evals", Batch: "2026-11-29-sweep-17", Model: "gpt-5.5", Tier: 1,
		Jobs: []job.JobSpec{{Key: "task-000123"}}}
	if _, err := store.Submit(ctx, b, t0); err != nil {
		t.Fatal(err)
	}
	q := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
	store.Commit(ctx, scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: b.Model, Grants: []scheduler.Grant{{Queue: q, Count: 1}}}}}, nil)

	endpoint := localservers.SQS(t)
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("results-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Store: store, DLQ: client, DLQURL: aws.ToString(dlq.QueueUrl), Now: func() time.Time { return t0 }}

	data, err := os.ReadFile("../../events/sqs-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		resp, err := h.Handle(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: %v, failures %v", round, err, resp.BatchItemFailures)
		}
	}
	id := job.JobID(b.Account, b.Project, b.Batch, "task-000123")
	if r, ok := store.JobResult(id); !ok || !r.Pass || r.Attempt != 1 || r.Score == nil || *r.Score != 0.83 {
		t.Errorf("recorded %+v, %v; want attempt 1's pass with score 0.83", r, ok)
	}

	reasons := map[string]int{}
	for n := 0; n < 8; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlq.QueueUrl, MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			reasons[aws.ToString(m.MessageAttributes[intake.AttrReason].StringValue)]++
			n++
		}
	}
	want := map[string]int{
		`attempt: 1.0 must be an integer in 1..10; outcome: "ok" must be "pass" or "fail"; result_token: required`: 2,
		"job_id: 00000000000000000000000000000000 is no job of this deployment":                                    2,
		"result_token: not the token of job " + id + " attempt 1 (EVALSCHED_RESULT_TOKEN of that attempt's task)":  2,
		"result_token: required": 2,
	}
	if len(reasons) != len(want) {
		t.Fatalf("dead-lettered %v, want %v", reasons, want)
	}
	for r, n := range want {
		if reasons[r] != n {
			t.Errorf("dead-lettered %v, want %v", reasons, want)
		}
	}
}
