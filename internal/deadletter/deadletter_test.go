package deadletter

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/intake"
)

func TestLetterOf(t *testing.T) {
	m := sqstypes.Message{
		MessageId: aws.String("m1"), ReceiptHandle: aws.String("r1"),
		Body: aws.String(`{"version":1,"account":"acme","project":"search","batch":"b1","part":2,"parts":4,"jobs":[]}`),
		Attributes: map[string]string{
			string(sqstypes.MessageSystemAttributeNameSentTimestamp):           "1764806400000",
			string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount): "3",
		},
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			intake.AttrReason: {DataType: aws.String("String"), StringValue: aws.String("tier: 5 is outside 0..2")},
			"team":            {DataType: aws.String("String"), StringValue: aws.String("search")},
			"blob":            {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
		},
	}
	l := letterOf(m)
	if l.Batch != "acme/search/b1" || l.Part != "2/4" || l.Reason != "tier: 5 is outside 0..2" || l.ReceiveCount != 3 || l.SentAt.Unix() != 1764806400 {
		t.Errorf("got %+v", l)
	}
	if l.Attributes["team"] != "search" || l.Attributes["blob"] != "base64:AQI=" || len(l.sent) != 2 {
		t.Errorf("attributes %v (sent %d), want team and blob, both kept for a redrive", l.Attributes, len(l.sent))
	}
	// No reason: moved by SQS's redrive policy, not rejected by the intake.
	l = letterOf(sqstypes.Message{MessageId: aws.String("m2"), Body: aws.String("not json")})
	if !strings.HasPrefix(l.Reason, "(no "+intake.AttrReason) || l.Batch != "" {
		t.Errorf("without a reason: got reason %q, batch %q", l.Reason, l.Batch)
	}
}

func TestWriteOldestFirst(t *testing.T) {
	var b strings.Builder
	Write(&b, "q", []Letter{{MessageID: "new", Reason: "r", SentAt: aws.ToTime(nil).AddDate(1, 0, 0)}, {MessageID: "old", Reason: "a; b"}}, 2)
	out := b.String()
	if !strings.HasPrefix(out, "2 messages in q (--max reached: there may be more)\n") || strings.Index(out, "old") > strings.Index(out, "new") ||
		!strings.Contains(out, "reason: a\n          b") {
		t.Errorf("got:\n%s", out)
	}
}
