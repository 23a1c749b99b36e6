package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestUnderTheEmulator builds the function as it ships, runs it under the
// runtime interface emulator against DynamoDB Local and fauxqs, invokes it
// with events/sqs-results.json and finds the verdict on the job's item.
func TestUnderTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function and the emulator")
	}
	ctx := context.Background()
	ddbEndpoint, sqsEndpoint := localservers.DynamoDB(t), localservers.SQS(t)

	// The world: tables with the job of events/sqs-batch.json, claimed
	// (attempt 1), and a dead-letter queue.
	const prefix = "rie-results-"
	store := dynamotest.Tables(t, ddbEndpoint, prefix, scheduler.ModelConfig{Enabled: true, MaxLimit: 10})
	id := dynamotest.ClaimedSampleJob(t, store)
	sqsClient := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	dlq, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("results-dlq")})
	if err != nil {
		t.Fatal(err)
	}

	fn := localservers.Lambda(t, "results",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB="+ddbEndpoint, "AWS_ENDPOINT_URL_SQS="+sqsEndpoint,
		"EVALSCHED_TABLE_PREFIX="+prefix, "EVALSCHED_DLQ_URL="+aws.ToString(dlq.QueueUrl),
	)
	event, err := os.ReadFile("../../events/sqs-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var answer events.SQSEventResponse
	if err := json.Unmarshal(fn.Invoke(event), &answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.BatchItemFailures) != 0 {
		t.Errorf("batch item failures %v, want none\n%s", answer.BatchItemFailures, fn.Output())
	}
	r, ok, err := store.JobResult(ctx, id)
	if err != nil || !ok || !r.Pass || r.Attempt != 1 {
		t.Errorf("job result %+v, %v, %v; want attempt 1's pass\n%s", r, ok, err, fn.Output())
	}
	if !strings.Contains(fn.Output(), `"recorded":1`) || !strings.Contains(fn.Output(), `"rejected":4`) {
		t.Errorf("no log line with 1 recorded and 4 rejected:\n%s", fn.Output())
	}
}
