package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/intake"
)

var dlqCommand = command{
	name:    "dlq",
	summary: "list the intake's dead-letter queue with each message's reason; --delete or --redrive them",
	run:     runDLQ,
}

const dlqUsage = `usage: evalsched dlq [flags]

Lists the messages the intake could not accept, from its dead-letter queue:
for each, when it was dead-lettered, its id on the intake queue, the batch
it names (as far as its body says), the reason (evalsched-reason: which
field broke which rule) and the submitter's own message attributes.

Listing deletes nothing: each message is received, hidden for --visibility
while the list is read, then made visible again (its receive count rises
by one). --delete deletes the messages listed; --redrive sends each back to
the intake queue (--intake-queue-url or EVALSCHED_QUEUE_URL), with the
submitter's attributes, and deletes it from the dead-letter queue once
sent. Redrive what a fixed deployment will now accept; a message that
breaks the contract is dead-lettered again: fix it and submit it instead.

The queue is --queue-url or EVALSCHED_DLQ_URL (evalsched local prints it;
the stack's outputs name it). The AWS SDK's settings apply: AWS_REGION,
AWS_PROFILE, and AWS_ENDPOINT_URL_SQS (or AWS_ENDPOINT_URL) for a local
stand-in.

Exit codes: 0 listed (and deleted or redriven), 1 a failed call, 2 usage.

flags:
`

// deadLetter is one message of the dead-letter queue as dlq shows it.
type deadLetter struct {
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

// dlqClient is what dlq calls of SQS; an *sqs.Client satisfies it.
type dlqClient interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

func runDLQ(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dlq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), dlqUsage)
		fs.PrintDefaults()
	}
	queueURL := fs.String("queue-url", os.Getenv("EVALSCHED_DLQ_URL"), "the dead-letter queue's `URL` (default $EVALSCHED_DLQ_URL)")
	intakeURL := fs.String("intake-queue-url", os.Getenv("EVALSCHED_QUEUE_URL"), "with --redrive: the intake queue's `URL` (default $EVALSCHED_QUEUE_URL)")
	limit := fs.Int("max", 1000, "list at most `N` messages")
	visibility := fs.Duration("visibility", time.Minute, "hide each message for `D` while the list is read (at most 12h)")
	body := fs.Bool("body", false, "show each message's body")
	jsonOut := fs.Bool("json", false, "print a JSON array")
	del := fs.Bool("delete", false, "delete the messages listed")
	redrive := fs.Bool("redrive", false, "send the messages listed back to the intake queue, then delete them here")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s dlq: "+format+"\n", append([]any{programName}, a...)...)
		return exitUsage
	}
	switch {
	case len(pos) > 0:
		return usageErr("unexpected argument %q", pos[0])
	case *queueURL == "":
		return usageErr("--queue-url (or EVALSCHED_DLQ_URL) is required")
	case *del && *redrive:
		return usageErr("--delete and --redrive exclude each other (--redrive deletes what it sent)")
	case *redrive && *intakeURL == "":
		return usageErr("--redrive needs --intake-queue-url (or EVALSCHED_QUEUE_URL)")
	case *limit < 1:
		return usageErr("--max must be at least 1")
	case *visibility < time.Second || *visibility > 12*time.Hour:
		return usageErr("--visibility must be within 1s..12h")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	awsCfg, err := loadAWS(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s dlq: AWS configuration: %v\n", programName, err)
		return exitFailed
	}
	if awsCfg.Region == "" {
		fmt.Fprintf(stderr, "%s dlq: no AWS region: set AWS_REGION, or a region in your AWS profile\n", programName)
		return exitFailed
	}
	client := sqs.NewFromConfig(awsCfg)

	// 1. Read: receive until the queue answers empty, hiding what was read.
	letters, err := receiveDeadLetters(ctx, client, *queueURL, *limit, *visibility)
	failed := err != nil
	if err != nil {
		fmt.Fprintf(stderr, "%s dlq: read %s: %v\n", programName, *queueURL, err)
	}

	// 2. Act: delete, redrive, or give the messages back.
	switch {
	case *del:
		for i := range letters {
			if err := deleteLetter(ctx, client, *queueURL, &letters[i]); err != nil {
				fmt.Fprintf(stderr, "%s dlq: delete %s: %v\n", programName, letters[i].MessageID, err)
				failed = true
			}
		}
	case *redrive:
		for i := range letters {
			l := &letters[i]
			if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(*intakeURL), MessageBody: aws.String(l.Body), MessageAttributes: l.sent}); err != nil {
				fmt.Fprintf(stderr, "%s dlq: redrive %s to %s: %v (left in the dead-letter queue)\n", programName, l.MessageID, *intakeURL, err)
				failed = true
				continue
			}
			if err := deleteLetter(ctx, client, *queueURL, l); err != nil {
				// Sent twice at worst: the intake stores each job once.
				fmt.Fprintf(stderr, "%s dlq: %s was redriven but not deleted here: %v\n", programName, l.MessageID, err)
				failed = true
				continue
			}
			l.Action = "redriven"
		}
	}
	if err := releaseLetters(context.WithoutCancel(ctx), client, *queueURL, letters); err != nil {
		fmt.Fprintf(stderr, "%s dlq: make the messages visible again: %v (they will be after --visibility)\n", programName, err)
		failed = true
	}

	// 3. Print.
	if !*body {
		for i := range letters {
			letters[i].Body = ""
		}
	}
	if *jsonOut {
		if letters == nil {
			letters = []deadLetter{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(letters)
	} else {
		printDeadLetters(stdout, *queueURL, letters, *limit)
	}
	if failed {
		return exitFailed
	}
	return exitOK
}

// receiveDeadLetters receives up to limit messages, each hidden for
// visibility. Long polls of one second: SQS's short poll may answer empty
// while messages wait on other servers.
func receiveDeadLetters(ctx context.Context, client dlqClient, url string, limit int, visibility time.Duration) ([]deadLetter, error) {
	var out []deadLetter
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
func letterOf(m sqstypes.Message) deadLetter {
	l := deadLetter{
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

func deleteLetter(ctx context.Context, client dlqClient, url string, l *deadLetter) error {
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(l.receipt)}); err != nil {
		return err
	}
	l.Action, l.receipt = "deleted", ""
	return nil
}

// releaseLetters makes the messages still held visible again at once,
// ten a call.
func releaseLetters(ctx context.Context, client dlqClient, url string, letters []deadLetter) error {
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

// printDeadLetters prints the list for a person, oldest first.
func printDeadLetters(w io.Writer, url string, letters []deadLetter, limit int) {
	slices.SortStableFunc(letters, func(a, b deadLetter) int { return a.SentAt.Compare(b.SentAt) })
	more := ""
	if len(letters) == limit {
		more = " (--max reached: there may be more)"
	}
	fmt.Fprintf(w, "%s in %s%s\n", count(len(letters), "message"), url, more)
	for _, l := range letters {
		batch := l.Batch
		if batch == "" {
			batch = "(no batch named)"
		} else if l.Part != "" {
			batch += " part " + l.Part
		}
		fmt.Fprintf(w, "\n%s  %s  %s  %s bytes", l.SentAt.Format(time.RFC3339), l.MessageID, batch, commas(l.Bytes))
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
