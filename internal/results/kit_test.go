package results

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/sandboxkit"
)

// TestKitToStore: the sandbox kit's SQSReporter sends to a results queue on
// fauxqs; what the queue delivers, the handler records on the job and its
// stratum. A sandbox's retried send (same attempt) and a lost first
// attempt's late verdict change nothing.
func TestKitToStore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(scheduler.ModelConfig{})
	b := job.BatchSpec{Account: "acme", Project: "evals", Batch: "mmlu", Model: "gpt-5.5", Tier: -1,
		Sampling: &sampling.Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 1},
		Jobs:     []job.JobSpec{{Key: "q1", Stratum: "math"}, {Key: "q2", Stratum: "math"}}}
	if _, err := store.Submit(ctx, b, t0); err != nil {
		t.Fatal(err)
	}
	q := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
	committed, _ := store.Commit(ctx, scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: b.Model, Grants: []scheduler.Grant{{Queue: q, Count: 1}}}}}, nil)
	claimed := committed.Claimed
	if len(claimed) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(claimed))
	}
	j := claimed[0]

	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(localservers.SQS(t)),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	rq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("results")})
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("results-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	reporter := sandboxkit.SQSReporter{Client: client, QueueURL: aws.ToString(rq.QueueUrl)}
	score := 1.0
	send := func(attempt int, outcome sandboxkit.Outcome) {
		t.Helper()
		job := sandboxkit.Job{ID: j.ID, Attempt: attempt, Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model,
			ResultToken: j.ResultToken.Reveal()}
		if err := reporter.Report(ctx, sandboxkit.NewResult(job, outcome, &score, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	send(1, sandboxkit.Pass)
	send(1, sandboxkit.Pass) // the sandbox's own retry
	send(2, sandboxkit.Fail) // an attempt the job never reached

	h := &Handler{Store: store, DLQ: client, DLQURL: aws.ToString(dlq.QueueUrl)}
	var ev events.SQSEvent
	for len(ev.Records) < 3 {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: rq.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("the results queue delivered %d of 3 messages", len(ev.Records))
		}
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, intake.Record(m))
		}
	}
	resp, err := h.Handle(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v, failures %v", err, resp.BatchItemFailures)
	}
	if r, ok := store.JobResult(j.ID); !ok || !r.Pass || r.Attempt != 1 || r.Score == nil || *r.Score != 1 {
		t.Errorf("recorded %+v, %v; want attempt 1's pass, score 1", r, ok)
	}
	sb, _ := store.Sampled("acme/evals/mmlu")
	if len(sb.Strata) != 1 || sb.Strata[0].Results != 1 || sb.Strata[0].Passes != 1 {
		t.Errorf("stratum counts %+v, want one result, one pass", sb.Strata)
	}
}
