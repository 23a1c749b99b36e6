package intake

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/batchmsg"
)

// The attributes of a dead-lettered message, beside the submitter's own; its
// body is the original's, unchanged, so it can be fixed and sent again.
const (
	// AttrReason holds why the message was rejected: the rules it breaks,
	// "field: rule; field: rule", cut to fit.
	AttrReason = "evalsched-reason"
	// AttrSourceMessageID holds the message's id on the intake queue, the
	// id the intake's log line names.
	AttrSourceMessageID = "evalsched-source-message-id"
)

// MaxReasonBytes bounds the reason attribute. Parse reports at most ten
// rules of a few hundred bytes each; only a path through a huge env name
// gets near it. The log line always has the whole reason.
const MaxReasonBytes = 4096

// maxMessageBytes is SQS's limit on a message: its body plus, for each
// attribute, the name, the data type and the value.
const maxMessageBytes = batchmsg.MaxMessageBytes

// Reason joins the rules a message breaks, in the order Parse found them.
func Reason(errs []*batchmsg.Error) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// maxAttributes is SQS's limit on a message's attributes.
const maxAttributes = 10

// DeadLetterAttributes returns the attributes of the dead-lettered copy of
// a message: its source id and the reason, then the attributes the
// submitter sent with it (submitted, by name), so whoever reads the
// dead-letter queue still has them (a trace id, who sent it). The reason is
// cut (ending in "…") so that the copy fits SQS's 1 MiB limit. What cannot
// fit — an attribute of ours when the body alone nearly fills the limit, a
// submitter's attribute past SQS's ten or the size, or one named like ours
// — is left out rather than have the send refused forever; dropped names
// the submitter's attributes left out, for the log line.
func DeadLetterAttributes(body, messageID, reason string, submitted map[string]sqstypes.MessageAttributeValue) (attrs map[string]sqstypes.MessageAttributeValue, dropped []string) {
	attrs = map[string]sqstypes.MessageAttributeValue{}
	room := maxMessageBytes - len(body)
	add := func(name, value string) {
		cost := len(name) + len("String") + len(value)
		if value == "" || cost > room {
			return
		}
		attrs[name] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
		room -= cost
	}
	add(AttrSourceMessageID, clean(messageID))
	add(AttrReason, cut(clean(reason), min(MaxReasonBytes, room-len(AttrReason)-len("String"))))
	// In name order, so the same message always keeps the same ones.
	for _, name := range slices.Sorted(maps.Keys(submitted)) {
		a := submitted[name]
		cost := len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
		if _, ours := attrs[name]; ours || name == AttrReason || name == AttrSourceMessageID || len(attrs) == maxAttributes || cost > room {
			dropped = append(dropped, name)
			continue
		}
		attrs[name] = a
		room -= cost
	}
	return attrs, dropped
}

// SubmittedAttributes converts the message attributes of a Lambda SQS record
// to the form SendMessage takes. List values, which SQS reserves and does not
// deliver, are not carried.
func SubmittedAttributes(in map[string]events.SQSMessageAttribute) map[string]sqstypes.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]sqstypes.MessageAttributeValue, len(in))
	for name, a := range in {
		out[name] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	return out
}

// ellipsis marks a cut reason.
const ellipsis = "…"

// cut shortens s to at most n bytes on a character boundary, ending in "…"
// when it was cut; "" when not even that fits.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len(ellipsis)
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// clean replaces what SQS refuses in a string attribute (characters outside
// #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF, and invalid UTF-8)
// by U+FFFD. The reason quotes values with escapes, so this is a guard.
func clean(s string) string {
	ok := func(r rune) bool {
		return r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) ||
			(r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
	}
	valid := true
	for _, r := range s {
		if !ok(r) || r == utf8.RuneError {
			valid = false
			break
		}
	}
	if valid {
		return s
	}
	return strings.Map(func(r rune) rune {
		if !ok(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}
