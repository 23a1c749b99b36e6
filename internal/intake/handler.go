package intake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/job"
)

// Submitter stores a batch's jobs as waiting, idempotently: a job that
// exists with the same content is skipped; a message that disagrees with
// its stored batch is refused whole with a *job.ConflictError (wrapping
// job.ErrConflict). *dynamostore.Store and *memstore.Store satisfy it.
type Submitter interface {
	Submit(ctx context.Context, b job.BatchSpec, now time.Time) (created int, err error)
}

// Sender is the SQS call the handler makes to dead-letter a message; an
// *sqs.Client satisfies it.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Config is what the handler needs of the deployment.
type Config struct {
	// Batch is what the contract's rules refer to: tiers, defaults.
	Batch batchmsg.Config
	// DLQURL is the intake's dead-letter queue, where invalid messages go.
	DLQURL string
	// Namespace is the EMF namespace of the intake's metrics.
	Namespace string
}

// ConfigFrom takes the intake's settings from the functions' configuration;
// it fails when the dead-letter queue is missing or the contract's settings
// break its rules (a message must never be judged by a broken deployment).
func ConfigFrom(c config.Config) (Config, error) {
	if err := c.Require("EVALSCHED_DLQ_URL"); err != nil {
		return Config{}, err
	}
	cfg := Config{
		Batch: batchmsg.Config{
			Tiers: c.Tiers, DefaultTier: c.DefaultTier, DefaultTaskDefinition: c.DefaultTaskDefinition,
			EnvAllow: c.EnvAllow,
		},
		DLQURL:    c.DLQURL,
		Namespace: c.EMFNamespace,
	}
	if err := cfg.Batch.Validate(); err != nil {
		return Config{}, fmt.Errorf("intake config: %w", err)
	}
	return cfg, nil
}

// Handler is the intake function. Its fields are set once, at cold start.
type Handler struct {
	Store  Submitter
	DLQ    Sender
	Config Config
	// Log receives one JSON line per record that is not simply stored:
	// rejected, conflicting, retried (nil: slog.Default()).
	Log *slog.Logger
	// Metrics receives one EMF document per invocation (nil: os.Stdout,
	// where the Lambda log agent picks it up).
	Metrics io.Writer
	// Now is the clock (nil: time.Now): a job's submit time.
	Now func() time.Time
}

// reserve is the time left at the end of an invocation for its answer: a
// record still in the store then is cut short (the store releases its lock)
// and reported for redelivery, rather than killed with the whole delivery.
const reserve = 2 * time.Second

// Handle takes one SQS delivery, its records one at a time, and reports the
// records SQS should deliver again (ReportBatchItemFailures). It never
// returns an error: that would redeliver the records already done too.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-reserve))
		defer cancel()
	}
	var (
		resp   events.SQSEventResponse
		counts = Counts{Messages: len(ev.Records)}
		failed = map[string]bool{} // FIFO message groups with a failed record
	)
	for i := range ev.Records {
		r := &ev.Records[i]
		group := r.Attributes["MessageGroupId"]
		var out outcome
		if group != "" && failed[group] {
			out = retry
			h.log().Warn("message retried: an earlier record of its FIFO group failed",
				"message_id", r.MessageId, "group", group)
		} else {
			out = h.record(ctx, r, &counts)
		}
		if out == retry {
			counts.Retried++
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			if group != "" {
				failed[group] = true
			}
		}
	}
	if err := counts.write(h.metrics(), h.Config.Namespace, h.now()); err != nil {
		h.log().Error("intake metrics not written", "err", err)
	}
	return resp, nil
}

// outcome is what became of one record.
type outcome int

const (
	done  outcome = iota // stored, or dead-lettered with its reason
	retry                // a batch item failure: SQS delivers it again
)

// record parses, submits or dead-letters one record.
func (h *Handler) record(ctx context.Context, r *events.SQSMessage, counts *Counts) outcome {
	log := h.log().With("message_id", r.MessageId)
	if err := ctx.Err(); err != nil {
		log.Warn("message retried: no time left in this invocation", "err", err)
		return retry
	}

	// 1. Parse.
	m, err := batchmsg.Parse([]byte(r.Body), h.Config.Batch)
	if err != nil {
		errs := batchmsg.Errors(err)
		if len(errs) == 0 {
			// The deployment's fault (ConfigFrom guards against it): the
			// message may well be valid, so it must not be dead-lettered.
			log.Error("message retried: the configuration cannot judge it", "err", err)
			return retry
		}
		return h.reject(ctx, log, r, Reason(errs), counts)
	}
	log = log.With("batch", m.ID())
	if m.Parts > 0 {
		log = log.With("part", m.Part, "parts", m.Parts)
	}

	// 2. Submit.
	created, err := h.Store.Submit(ctx, m.Spec(), h.now())
	counts.Jobs += created

	// 3. Answer.
	var conflict *job.ConflictError
	switch {
	case err == nil:
		if m.Parts > 0 {
			counts.Parts++
		}
		log.Info("message stored", "jobs", len(m.Jobs), "created", created)
		return done
	case errors.As(err, &conflict):
		// Nothing of it was stored: the dead-letter queue holds it with
		// every field that disagrees, to be fixed (or sent as a new
		// batch) and redriven.
		return h.deadLetter(ctx, log, r, conflict.Reason(), &counts.Conflicts, "message conflicts with its stored batch: to the dead-letter queue, nothing stored")
	case errors.Is(err, dynamostore.ErrInvalid):
		// Parse lets nothing through that the store refuses; should the
		// two disagree, the message is still the one to blame.
		return h.reject(ctx, log, r, err.Error(), counts)
	}
	log.Warn("message retried: the store failed", "created", created, "err", err.Error())
	return retry
}

// reject sends an invalid message to the dead-letter queue with its reason;
// if that fails the record is retried, so the message is never lost.
func (h *Handler) reject(ctx context.Context, log *slog.Logger, r *events.SQSMessage, reason string, counts *Counts) outcome {
	return h.deadLetter(ctx, log, r, reason, &counts.Rejected, "message rejected to the dead-letter queue")
}

// deadLetter sends a message to the dead-letter queue with its reason,
// then counts it in *n and logs msg; if the send fails the record is
// retried.
func (h *Handler) deadLetter(ctx context.Context, log *slog.Logger, r *events.SQSMessage, reason string, n *int, msg string) outcome {
	attrs, dropped := DeadLetterAttributes(r.Body, r.MessageId, reason, SubmittedAttributes(r.MessageAttributes))
	if len(dropped) > 0 {
		log = log.With("attributes_dropped", dropped)
	}
	_, err := h.DLQ.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(h.Config.DLQURL), MessageBody: aws.String(r.Body), MessageAttributes: attrs,
	})
	if err != nil {
		log.Error("message retried: to the dead-letter queue, which refused it",
			"reason", reason, "err", err.Error())
		return retry
	}
	*n++
	log.Warn(msg, "reason", reason)
	return done
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func (h *Handler) metrics() io.Writer {
	if h.Metrics != nil {
		return h.Metrics
	}
	return os.Stdout
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

var _ Sender = (*sqs.Client)(nil)
var _ Submitter = (*dynamostore.Store)(nil)
