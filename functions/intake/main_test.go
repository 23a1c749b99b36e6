package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestUnderTheEmulator builds the function as it ships (static, linux,
// lambda.norpc), runs it under the runtime interface emulator with its
// environment pointing at DynamoDB Local and fauxqs, invokes it once with
// events/sqs-batch.json and finds the jobs in the table.
func TestUnderTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function and the emulator")
	}
	ctx := context.Background()
	ddbEndpoint, sqsEndpoint := localservers.DynamoDB(t), localservers.SQS(t)

	// The world: tables and a dead-letter queue.
	const prefix = "rie-"
	store := dynamotest.Tables(t, ddbEndpoint, prefix, scheduler.ModelConfig{})
	sqsClient := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	q, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("intake-dlq")})
	if err != nil {
		t.Fatal(err)
	}

	// The function as on AWS, under the emulator, with what the SAM
	// template sets and the endpoint variables the SDK honours.
	fn := localservers.Lambda(t, "intake",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB="+ddbEndpoint, "AWS_ENDPOINT_URL_SQS="+sqsEndpoint,
		"EVALSCHED_TABLE_PREFIX="+prefix, "EVALSCHED_DLQ_URL="+aws.ToString(q.QueueUrl),
	)

	// One invocation, as SQS's event source mapping makes it.
	event, err := os.ReadFile("../../events/sqs-batch.json")
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

	// The jobs landed, and the function reported them.
	snap, err := store.Snapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, q := range snap.Queues {
		got[q.Batch+" "+q.Model] = q.Waiting
	}
	want := map[string]int{"2026-11-29-sweep-17 gpt-5.5": 2, "2026-11-29-sweep-17 claude-opus-4.8": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waiting jobs %v, want %v\n%s", got, want, fn.Output())
	}
	if testing.Verbose() {
		t.Logf("emulator and function output:\n%s", fn.Output())
	}
	if !strings.Contains(fn.Output(), `"IntakeJobs":3`) {
		t.Errorf("no EMF document counting 3 jobs in the function's output:\n%s", fn.Output())
	}
}
