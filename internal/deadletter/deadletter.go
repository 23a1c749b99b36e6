package deadletter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/intake"
)

// Letter is one message of the dead-letter queue as the operator sees it.
type Letter struct {
	MessageID       string            `json:"message_id"`
	SourceMessageID string            `json:"source_message_id,omitempty"`
	SentAt          time.Time         `json:"sent_at"`
	ReceiveCount    int               `json:"receive_count"`
	Batch           string            `json:"batch,omitempty"` // account/project/batch, as far as the body names it
	Part            string            `json:"part,omitempty"`  // "2/4"
	Reason          string            `json:"reason"`
	Bytes           int               `json:"bytes"`
	Attributes      map[string]string `json:"attributes,omitempty"` // the submitter's, binary as base64
	Body            string            `json:"body,omitempty"`       // with --body
	Action          string            `json:"action,omitempty"`     // "deleted", "redriven"

	receipt string
	sent    map[string]sqstypes.MessageAttributeValue // the submitter's, for a redrive
}

// API is what a Queue calls of SQS; an *sqs.Client satisfies it.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Queue is the intake's dead-letter queue at URL.
type Queue struct {
	API API
	URL string
}

// Receive receives up to limit messages, each hidden for visibility. Long
// polls of one second: SQS's short poll may answer empty while messages
// wait on other servers.
func (q *Queue) Receive(ctx context.Context, limit int, visibility time.Duration) ([]Letter, error) {
	client, url := q.API, q.URL
	var out []Letter
	seen := map[string]bool{}
	for len(out) < limit {
		res, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: int32(min(10, limit-len(out))), WaitTimeSeconds: 1,
			VisibilityTimeout: int32(visibility / time.Second), MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
				sqstypes.MessageSystemAttributeNameSentTimestamp, sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
			},
		})
		if err != nil {
			return out, err
		}
		if len(res.Messages) == 0 {
			return out, nil
		}
		for _, m := range res.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] { // came back after --visibility: everything was read
				return out, nil
			}
			seen[id] = true
			out = append(out, letterOf(m))
		}
	}
	return out, nil
}

// letterOf reads one received message.
func letterOf(m sqstypes.Message) Letter {
	l := Letter{
		MessageID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Bytes: len(aws.ToString(m.Body)),
		receipt: aws.ToString(m.ReceiptHandle), Attributes: map[string]string{}, sent: map[string]sqstypes.MessageAttributeValue{},
	}
	if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		l.SentAt = time.UnixMilli(ms).UTC()
	}
	l.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	for name, a := range m.MessageAttributes {
		switch name {
		case intake.AttrReason:
			l.Reason = aws.ToString(a.StringValue)
		case intake.AttrSourceMessageID:
			l.SourceMessageID = aws.ToString(a.StringValue)
		default:
			l.sent[name] = a
			if a.StringValue != nil {
				l.Attributes[name] = aws.ToString(a.StringValue)
			} else {
				l.Attributes[name] = "base64:" + base64.StdEncoding.EncodeToString(a.BinaryValue)
			}
		}
	}
	if l.Reason == "" {
		// The intake did not reject it: SQS's redrive policy moved it after
		// repeated failed deliveries (the intake's log says why), or it was
		// sent here by hand.
		l.Reason = "(no " + intake.AttrReason + ": moved here by SQS after repeated failed deliveries, see the intake's log, or sent here directly)"
	}
	// The batch, as far as the body names it: a broken message may not.
	var head struct {
		Account, Project, Batch string
		Part, Parts             int
	}
	if json.Unmarshal([]byte(l.Body), &head) == nil && head.Account+head.Project+head.Batch != "" {
		l.Batch = head.Account + "/" + head.Project + "/" + head.Batch
		if head.Parts > 0 {
			l.Part = fmt.Sprintf("%d/%d", head.Part, head.Parts)
		}
	}
	return l
}

// Delete deletes a letter received, and marks it deleted.
func (q *Queue) Delete(ctx context.Context, l *Letter) error {
	if _, err := q.API.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: aws.String(l.receipt)}); err != nil {
		return err
	}
	l.Action, l.receipt = "deleted", ""
	return nil
}

// Send sends a letter's body to the queue at url (the intake's), with the
// submitter's attributes: a redrive.
func (q *Queue) Send(ctx context.Context, url string, l *Letter) error {
	_, err := q.API.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(l.Body), MessageAttributes: l.sent})
	return err
}

// DeleteAll deletes every letter; an error for each that failed.
func (q *Queue) DeleteAll(ctx context.Context, letters []Letter) []error {
	var errs []error
	for i := range letters {
		if err := q.Delete(ctx, &letters[i]); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", letters[i].MessageID, err))
		}
	}
	return errs
}

// Redrive sends every letter to the queue at url (the intake's) and then
// deletes it here, marking it redriven; an error for each that failed. A
// letter whose send failed stays in the dead-letter queue; one sent but
// not deleted is sent twice at worst, which is safe: the intake stores
// each job once.
func (q *Queue) Redrive(ctx context.Context, url string, letters []Letter) []error {
	var errs []error
	for i := range letters {
		l := &letters[i]
		if err := q.Send(ctx, url, l); err != nil {
			errs = append(errs, fmt.Errorf("redrive %s to %s: %w (left in the dead-letter queue)", l.MessageID, url, err))
			continue
		}
		if err := q.Delete(ctx, l); err != nil {
			errs = append(errs, fmt.Errorf("%s was redriven but not deleted here: %w", l.MessageID, err))
			continue
		}
		l.Action = "redriven"
	}
	return errs
}

// Release makes the messages still held visible again at once, ten a call.
func (q *Queue) Release(ctx context.Context, letters []Letter) error {
	client, url := q.API, q.URL
	var held []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for i, l := range letters {
		if l.receipt != "" {
			held = append(held, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(l.receipt), VisibilityTimeout: 0})
		}
	}
	var errs []error
	for batch := range slices.Chunk(held, 10) {
		res, err := client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: batch})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range res.Failed {
			errs = append(errs, fmt.Errorf("entry %s: %s", aws.ToString(f.Id), aws.ToString(f.Message)))
		}
	}
	return errors.Join(errs...)
}

// Write prints the list for a person, oldest first.
func Write(w io.Writer, url string, letters []Letter, limit int) {
	slices.SortStableFunc(letters, func(a, b Letter) int { return a.SentAt.Compare(b.SentAt) })
	more := ""
	if len(letters) == limit {
		more = " (--max reached: there may be more)"
	}
	fmt.Fprintf(w, "%s in %s%s\n", cliout.Count(len(letters), "message"), url, more)
	for _, l := range letters {
		batch := l.Batch
		if batch == "" {
			batch = "(no batch named)"
		} else if l.Part != "" {
			batch += " part " + l.Part
		}
		fmt.Fprintf(w, "\n%s  %s  %s  %s bytes", l.SentAt.Format(time.RFC3339), l.MessageID, batch, cliout.Commas(l.Bytes))
		if l.Action != "" {
			fmt.Fprintf(w, "  %s", l.Action)
		}
		fmt.Fprintln(w)
		if l.SourceMessageID != "" {
			fmt.Fprintf(w, "  intake message: %s\n", l.SourceMessageID)
		}
		fmt.Fprintf(w, "  reason: %s\n", strings.ReplaceAll(l.Reason, "; ", "\n          "))
		if len(l.Attributes) > 0 {
			var kv []string
			for _, name := range slices.Sorted(maps.Keys(l.Attributes)) {
				kv = append(kv, name+"="+l.Attributes[name])
			}
			fmt.Fprintf(w, "  attributes: %s\n", strings.Join(kv, ", "))
		}
		if l.Body != "" {
			fmt.Fprintf(w, "  body: %s\n", l.Body)
		}
	}
}
