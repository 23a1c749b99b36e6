package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/iamcheck"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestFlowsUnderTheTemplatesRole runs the intake's real flows — a new
// batch, a batch in parts, a conflicting resend, a sampled batch — with
// the function's environment and IAM role as template.yaml deploys them:
// every SDK call the function makes is refused unless IntakeRole grants it
// on that resource (internal/iamcheck), as AWS would.
func TestFlowsUnderTheTemplatesRole(t *testing.T) {
	ctx := context.Background()
	stack, check := iamcheck.Function(t, "IntakeFunction", nil)
	ddb, sqsEndpoint := localservers.DynamoDB(t), localservers.SQS(t)

	// The stack's tables and dead-letter queue, by the template's names.
	env, err := stack.Environment("IntakeFunction")
	if err != nil {
		t.Fatal(err)
	}
	store := dynamotest.Tables(t, ddb, env["EVALSCHED_TABLE_PREFIX"], scheduler.ModelConfig{})
	sq, urls := stack.Queues(t, sqsEndpoint, "IntakeDeadLetterQueue")
	stack.Setenv(t, "IntakeFunction", map[string]string{
		"EVALSCHED_DLQ_URL":         urls[0],
		"AWS_ENDPOINT_URL_DYNAMODB": ddb, "AWS_ENDPOINT_URL_SQS": sqsEndpoint,
	})
	var logs bytes.Buffer // the function's log: what it saw of a refusal
	h, err := build(ctx, slog.New(slog.NewTextHandler(&logs, nil)), check.LoadOption())
	if err != nil {
		t.Fatal(err)
	}
	h.Metrics = io.Discard

	jobs := func(keys ...string) []map[string]any {
		var out []map[string]any
		for i, k := range keys {
			j := map[string]any{"key": k, "env": map[string]string{"N": fmt.Sprint(i)}}
			out = append(out, j)
		}
		return out
	}
	msg := func(batch string, extra map[string]any, js []map[string]any) map[string]any {
		m := map[string]any{"version": 1, "account": "acme", "project": "iam", "batch": batch, "model": "gpt-5.5", "jobs": js}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	sampled := jobs("q-1", "q-2", "q-3", "q-4")
	for i, j := range sampled {
		j["stratum"] = []string{"math", "code"}[i%2]
	}
	flows := []struct {
		name string
		msg  map[string]any
	}{
		{"a new batch", msg("new", nil, jobs("a", "b"))},
		{"the same batch again (nothing new)", msg("new", nil, jobs("a", "b"))},
		{"part 2 of 2", msg("parts", map[string]any{"part": 2, "parts": 2}, jobs("c"))},
		{"part 1 of 2", msg("parts", map[string]any{"part": 1, "parts": 2}, jobs("d", "e"))},
		{"a conflicting resend", msg("new", nil, []map[string]any{{"key": "a", "env": map[string]string{"N": "changed"}}})},
		{"a sampled batch", msg("sampled", map[string]any{"sampling": map[string]any{"moe": 0.1, "confidence": 0.9, "min_per_stratum": 1}}, sampled)},
	}
	for i, f := range flows {
		body, _ := json.Marshal(f.msg)
		resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: fmt.Sprintf("m-%d", i), Body: string(body), EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:intake", AWSRegion: "us-east-1",
		}}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Errorf("%s: err %v, batch item failures %v, want none", f.name, err, resp.BatchItemFailures)
		}
	}
	if d := check.Denied(); len(d) > 0 {
		t.Errorf("IntakeRole refused %d calls the intake makes:\n%s\nthe function logged:\n%s", len(d), check.Report(), firstLines(logs.String(), 3))
	}

	// The flows did what they should: the batches are stored, the
	// conflicting resend went to the dead-letter queue.
	snap, err := store.Snapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	waiting := map[string]int{}
	for _, q := range snap.Queues {
		waiting[q.Batch] += q.Waiting
	}
	if want := map[string]int{"new": 2, "parts": 3, "sampled": 4}; fmt.Sprint(waiting) != fmt.Sprint(want) {
		t.Errorf("waiting jobs by batch %v, want %v", waiting, want)
	}
	recv, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &urls[0], MaxNumberOfMessages: 10})
	if err != nil || len(recv.Messages) != 1 {
		t.Errorf("dead-letter queue: %v, %d messages, want the conflicting resend", err, len(recv.Messages))
	}

	// Least privilege: every grant of the role served a flow.
	check.RequireExercised(t, "IntakeRole")
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
