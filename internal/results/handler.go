package results

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resultmsg"
)

// Recorder records a job's verdict for an attempt; *dynamostore.Store and
// *memstore.Store satisfy it.
type Recorder interface {
	RecordResult(ctx context.Context, jobID string, r job.Result) (bool, error)
}

// Handler is the results function. Its fields are set once, at cold start.
type Handler struct {
	Store  Recorder
	DLQ    intake.Sender
	DLQURL string
	Log    *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now; the result's time
}

// Counts is what one invocation did with its records.
type Counts struct {
	Recorded, Ignored, Rejected, Retried int
}

// Handle takes one SQS delivery and reports the records to deliver again.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	var c Counts
	for i := range ev.Records {
		r := &ev.Records[i]
		if !h.record(ctx, r, &c) {
			c.Retried++
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	h.log().Info("results", "records", len(ev.Records), "recorded", c.Recorded, "ignored", c.Ignored, "rejected", c.Rejected, "retried", c.Retried)
	return resp, nil
}

// record handles one message; false: deliver it again.
func (h *Handler) record(ctx context.Context, r *events.SQSMessage, c *Counts) bool {
	m, err := resultmsg.Parse([]byte(r.Body))
	if err != nil {
		return h.reject(ctx, r, reason(err), c)
	}
	ok, err := h.Store.RecordResult(ctx, m.JobID, job.Result{Attempt: m.Attempt, Pass: m.Pass, Score: m.Score, At: h.now(), Token: m.Token})
	switch {
	case errors.Is(err, job.ErrUnknownJob):
		return h.reject(ctx, r, "job_id: "+m.JobID+" is no job of this deployment", c)
	case errors.Is(err, job.ErrWrongToken):
		// Right id and attempt, wrong token: a sandbox speaking for a job
		// not its own (or a harness that did not pass its token on).
		return h.reject(ctx, r, fmt.Sprintf("result_token: not the token of job %s attempt %d (EVALSCHED_RESULT_TOKEN of that attempt's task)", m.JobID, m.Attempt), c)
	case err != nil:
		h.log().Warn("results: record failed; SQS delivers it again", "message_id", r.MessageId, "job_id", m.JobID, "attempt", m.Attempt, "err", err)
		return false
	case ok:
		c.Recorded++
	default:
		c.Ignored++
		h.log().Info("results: stale or repeated result ignored", "message_id", r.MessageId, "job_id", m.JobID, "attempt", m.Attempt)
	}
	return true
}

// reject sends the message to the dead-letter queue with the reason; when
// that fails the message is retried (and SQS's redrive parks it in the end).
func (h *Handler) reject(ctx context.Context, r *events.SQSMessage, why string, c *Counts) bool {
	attrs, dropped := intake.DeadLetterAttributes(r.Body, r.MessageId, why, intake.SubmittedAttributes(r.MessageAttributes))
	_, err := h.DLQ.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.DLQURL), MessageBody: aws.String(r.Body), MessageAttributes: attrs})
	if err != nil {
		h.log().Warn("results: dead-letter failed; SQS delivers it again", "message_id", r.MessageId, "reason", why, "err", err)
		return false
	}
	c.Rejected++
	h.log().Warn("results: rejected to the dead-letter queue", "message_id", r.MessageId, "reason", why, "dropped_attributes", dropped)
	return true
}

// reason joins Parse's errors, "field: rule; field: rule".
func reason(err error) string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		s := ""
		for i, e := range j.Unwrap() {
			if i > 0 {
				s += "; "
			}
			s += e.Error()
		}
		return s
	}
	return fmt.Sprint(err)
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}
