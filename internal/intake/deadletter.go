package intake

import (
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/batchmsg"
)

// The attributes of a dead-lettered message; its body is the original's,
// unchanged, so it can be fixed and sent again.
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

// DeadLetterAttributes returns the attributes of the dead-lettered copy of
// a message: its source id and the reason, the reason cut (ending in "…")
// so that the copy fits SQS's 1 MiB limit. An attribute that cannot fit at
// all (the body alone nearly fills the limit) is left out rather than have
// the send refused forever.
func DeadLetterAttributes(body, messageID, reason string) map[string]sqstypes.MessageAttributeValue {
	attrs := map[string]sqstypes.MessageAttributeValue{}
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
	return attrs
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
