package intake_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/intake"
)

const limit = 1 << 20 // SQS: body plus each attribute's name, type and value

// size is a message's size as SQS counts it.
func size(body string, attrs map[string]sqstypes.MessageAttributeValue) int {
	n := len(body)
	for name, a := range attrs {
		n += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue))
	}
	return n
}

func TestDeadLetterAttributes(t *testing.T) {
	const id = "6f1c3a52-0b7e-4d2a-9c41-000000000002"
	long := strings.Repeat("jobs[1].env: name \"ÄÖÜ\" must match; ", 500) // ~19 KB, multi-byte characters
	tests := []struct {
		name       string
		body       string
		reason     string
		wantID     bool
		wantReason string // "": absent; "…" suffix: cut, compared as a prefix
	}{
		{"short", "{}", "version: required", true, "version: required"},
		{"long reason cut to MaxReasonBytes", "{}", long, true, long[:intake.MaxReasonBytes-40] + "…"},
		{"cut to fit next to a large body", strings.Repeat("x", limit-200), long, true, long[:100] + "…"},
		{"body fills the limit: no attributes", strings.Repeat("x", limit), long, false, ""},
		{"room for the id only", strings.Repeat("x", limit-len(intake.AttrSourceMessageID)-len("String")-len(id)-len(intake.AttrReason)-len("String")-2), long, true, ""},
		{"characters SQS refuses are replaced", "{}", "message: \x00 at byte 7, \ufffe", true, "message: \ufffd at byte 7, \ufffd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			attrs, _ := intake.DeadLetterAttributes(tc.body, id, tc.reason, nil)
			if n := size(tc.body, attrs); n > limit {
				t.Errorf("message of %d bytes with its attributes, over SQS's %d", n, limit)
			}
			if got := aws.ToString(attrs[intake.AttrSourceMessageID].StringValue); (got == id) != tc.wantID {
				t.Errorf("source id %q, want it present: %v", got, tc.wantID)
			}
			got := aws.ToString(attrs[intake.AttrReason].StringValue)
			if !utf8.ValidString(got) || len(got) > intake.MaxReasonBytes {
				t.Errorf("reason of %d bytes (valid UTF-8: %v), want at most %d valid", len(got), utf8.ValidString(got), intake.MaxReasonBytes)
			}
			if prefix, cut := strings.CutSuffix(tc.wantReason, "…"); cut {
				if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, "…") {
					t.Errorf("reason %.60q…, want %.60q… cut with an ellipsis", got, prefix)
				}
				return
			}
			if got != tc.wantReason {
				t.Errorf("reason %q, want %q", got, tc.wantReason)
			}
		})
	}
}

// TestDeadLetterFitsSQS: SQS (fauxqs, which counts sizes as SQS does) takes
// the dead-lettered copy of a message of nearly 1 MiB with its cut reason.
func TestDeadLetterFitsSQS(t *testing.T) {
	start(t)
	url := createQueue(t, "intake-dlq-fits")
	body := strings.Repeat("x", limit-300)
	attrs, _ := intake.DeadLetterAttributes(body, "m-1", strings.Repeat("jobs[0].key: required; ", 100), nil)
	if _, ok := attrs[intake.AttrReason]; !ok {
		t.Fatal("no reason attribute, want one cut to fit")
	}
	_, err := servers.sqsClient.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs,
	})
	if err != nil {
		t.Fatalf("SQS refused it: %v", err)
	}
	// One byte more of reason and SQS refuses: the cut is exact.
	a := attrs[intake.AttrReason]
	a.StringValue = aws.String(aws.ToString(a.StringValue) + "x")
	attrs[intake.AttrReason] = a
	_, err = servers.sqsClient.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs,
	})
	if err == nil || !strings.Contains(err.Error(), "shorter than") {
		t.Errorf("one byte over: got %v, want SQS to refuse the size", err)
	}
}

// TestFixtures: the SQS events in events/ are what Lambda delivers: each
// record's md5OfBody is its body's, so `sam local invoke -e` and the tests
// see the real thing.
func TestFixtures(t *testing.T) {
	for _, name := range []string{"sqs-batch.json", "sqs-mixed.json", "sqs-parts.json"} {
		ev := fixtureEvent(t, name)
		if len(ev.Records) == 0 {
			t.Errorf("%s: no records", name)
		}
		for _, r := range ev.Records {
			sum := md5.Sum([]byte(r.Body))
			if r.Md5OfBody != hex.EncodeToString(sum[:]) || r.EventSource != "aws:sqs" || r.MessageId == "" {
				t.Errorf("%s: record %s: md5OfBody %s, eventSource %q; want the body's md5 and aws:sqs", name, r.MessageId, r.Md5OfBody, r.EventSource)
			}
		}
	}
}

// TestDeadLetterKeepsTheSubmittersAttributes: a message sent to the intake
// queue with attributes of its own (String, Number, Binary), received as the
// event source receives it and rejected, reaches the dead-letter queue
// (fauxqs) with them beside the reason. Past SQS's ten attributes, the
// submitter's last by name are dropped and the log names them.
func TestDeadLetterKeepsTheSubmittersAttributes(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	queue := createQueue(t, fmt.Sprintf("intake-attrs-%03d", seq.Add(1)))
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	few := map[string]sqstypes.MessageAttributeValue{
		"trace-id":  str("abc-123"),
		"submitter": str("alice@acme"),
		"attempt":   {DataType: aws.String("Number"), StringValue: aws.String("3")},
		"blob":      {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
	}
	many := map[string]sqstypes.MessageAttributeValue{}
	for i := range 10 {
		many[fmt.Sprintf("a%d", i)] = str(fmt.Sprint(i))
	}
	for _, attrs := range []map[string]sqstypes.MessageAttributeValue{few, many} {
		if _, err := servers.sqsClient.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(queue), MessageBody: aws.String(`{"version": 1}`), MessageAttributes: attrs,
		}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := servers.sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}, AttributeNames: []sqstypes.QueueAttributeName{"All"},
	})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("received %d messages, %v; want the 2 sent", len(got.Messages), err)
	}
	var ev events.SQSEvent
	for _, m := range got.Messages {
		ev.Records = append(ev.Records, intake.Record(m))
	}
	if resp := r.invoke(payload(t, ev.Records...)); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch item failures %v, want none", failures(resp))
	}

	dead := r.deadLetters()
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead))
	}
	for _, m := range got.Messages {
		d := dead[aws.ToString(m.MessageId)]
		if !strings.HasPrefix(aws.ToString(d.MessageAttributes[intake.AttrReason].StringValue), "account: required") {
			t.Errorf("%s: reason %q, want the rules broken", aws.ToString(m.MessageId), aws.ToString(d.MessageAttributes[intake.AttrReason].StringValue))
		}
		want := few
		if len(m.MessageAttributes) == 10 {
			want = map[string]sqstypes.MessageAttributeValue{}
			for i := range 8 { // 8 of the submitter's and our 2
				want[fmt.Sprintf("a%d", i)] = str(fmt.Sprint(i))
			}
		}
		for name, a := range want {
			g, ok := d.MessageAttributes[name]
			if !ok || aws.ToString(g.DataType) != aws.ToString(a.DataType) || aws.ToString(g.StringValue) != aws.ToString(a.StringValue) || string(g.BinaryValue) != string(a.BinaryValue) {
				t.Errorf("dead letter's attribute %s = %+v (present %v), want %+v", name, g, ok, a)
			}
		}
		if n := len(d.MessageAttributes); n != len(want)+2 {
			t.Errorf("dead letter has %d attributes, want %d (the submitter's kept and our 2)", n, len(want)+2)
		}
	}
	if !strings.Contains(r.logs.String(), `"attributes_dropped":["a8","a9"]`) {
		t.Errorf("the log does not name the dropped attributes a8, a9:\n%s", r.logs.String())
	}
}
