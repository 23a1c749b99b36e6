package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/deadletter"
	"github.com/evalsched/evalsched/internal/intake"
)

// TestDLQ: two messages the intake function rejects (fauxqs, the real
// handler) are listed with their reasons, batches and the submitter's
// attributes, and listing leaves them in the queue; --max 1 --delete
// deletes one; --redrive sends the other back to the intake queue with its
// attributes and empties the dead-letter queue.
func TestDLQ(t *testing.T) {
	client, intakeURL := intakeQueue(t)
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("intake-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	dlqURL := aws.ToString(q.QueueUrl)
	t.Setenv("EVALSCHED_DLQ_URL", dlqURL)

	bodies := []string{
		`{"version": 1, "account": "acme", "project": "search", "batch": "b17", "model": "gpt-5.5", "tier": 9, "jobs": [{"key": "k1"}]}`,
		`{"version": 2}`,
	}
	for i, b := range bodies {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(intakeURL), MessageBody: aws.String(b),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"trace-id": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("t-", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(intakeURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("received %d, %v; want the 2 sent", len(got.Messages), err)
	}
	var ev events.SQSEvent
	for _, m := range got.Messages {
		ev.Records = append(ev.Records, intake.Record(m))
		if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(intakeURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	h := &intake.Handler{DLQ: client, Config: intake.Config{Batch: batchmsg.DefaultConfig(), DLQURL: dlqURL},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: io.Discard}
	if resp, _ := h.Handle(ctx, ev); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the intake failed %v", resp.BatchItemFailures)
	}

	list := func(args ...string) []deadletter.Letter {
		t.Helper()
		code, out, errs := runCLI(append([]string{"dlq", "--json"}, args...)...)
		if code != exitOK {
			t.Fatalf("dlq %v: exit %d: %s", args, code, errs)
		}
		var letters []deadletter.Letter
		if err := json.Unmarshal([]byte(out), &letters); err != nil {
			t.Fatalf("dlq %v: %v\n%s", args, err, out)
		}
		return letters
	}

	// Listed twice: reading deletes nothing.
	for range 2 {
		letters := list()
		if len(letters) != 2 {
			t.Fatalf("listed %d messages, want 2", len(letters))
		}
		byBatch := map[string]deadletter.Letter{}
		for _, l := range letters {
			byBatch[l.Batch] = l
		}
		if l := byBatch["acme/search/b17"]; l.Reason != "tier: 9 is outside 0..2" || l.Attributes["trace-id"] != "t-0" || l.SourceMessageID == "" || l.SentAt.IsZero() {
			t.Errorf("acme/search/b17: %+v; want its reason, trace-id, source id and time", l)
		}
		if l := byBatch[""]; l.Reason != "version: 2 is not a supported version (only 1)" || l.Attributes["trace-id"] != "t-1" {
			t.Errorf("the version-2 message: %+v; want its reason and trace-id", l)
		}
	}
	code, out, _ := runCLI("dlq")
	for _, want := range []string{"2 messages in " + dlqURL, "reason: tier: 9 is outside 0..2", "acme/search/b17", "attributes: trace-id=t-1"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("dlq: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}

	// --max 1 --delete: one gone, one left.
	if deleted := list("--max", "1", "--delete"); len(deleted) != 1 || deleted[0].Action != "deleted" {
		t.Fatalf("--max 1 --delete: %+v, want one deleted", deleted)
	}
	left := list()
	if len(left) != 1 {
		t.Fatalf("after the delete %d messages, want 1", len(left))
	}

	// --redrive: back on the intake queue with its attributes, gone here.
	t.Setenv("EVALSCHED_QUEUE_URL", intakeURL)
	if r := list("--redrive"); len(r) != 1 || r[0].Action != "redriven" {
		t.Fatalf("--redrive: %+v, want one redriven", r)
	}
	back, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(intakeURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil || len(back.Messages) != 1 {
		t.Fatalf("intake queue after the redrive: %d messages, %v; want 1", len(back.Messages), err)
	}
	m := back.Messages[0]
	if trace := aws.ToString(m.MessageAttributes["trace-id"].StringValue); trace != left[0].Attributes["trace-id"] || len(m.MessageAttributes) != 1 {
		t.Errorf("redriven attributes %v, want only the submitter's trace-id %q", m.MessageAttributes, left[0].Attributes["trace-id"])
	}
	if aws.ToString(m.Body) != bodies[0] && aws.ToString(m.Body) != bodies[1] {
		t.Errorf("redriven body %q, want one of the originals", aws.ToString(m.Body))
	}
	if rest := list(); len(rest) != 0 {
		t.Errorf("dead-letter queue after the redrive: %d messages, want none", len(rest))
	}
}

func TestDLQUsage(t *testing.T) {
	t.Setenv("EVALSCHED_DLQ_URL", "")
	t.Setenv("EVALSCHED_QUEUE_URL", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dlq"}, "--queue-url (or EVALSCHED_DLQ_URL) is required"},
		{[]string{"dlq", "--queue-url", "u", "--delete", "--redrive"}, "exclude each other"},
		{[]string{"dlq", "--queue-url", "u", "--redrive"}, "--redrive needs --intake-queue-url"},
		{[]string{"dlq", "--queue-url", "u", "extra"}, `unexpected argument "extra"`},
	} {
		if code, _, errs := runCLI(c.args...); code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
