package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/evalsched/evalsched/internal/deadletter"
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

func runDLQ(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dlq", stderr, dlqUsage)
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
	if msg := dlqMisuse(pos, *queueURL, *intakeURL, *del, *redrive, *limit, *visibility); msg != "" {
		fmt.Fprintf(stderr, "%s dlq: %s\n", programName, msg)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client, err := sqsClient(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s dlq: %v\n", programName, err)
		return exitFailed
	}

	// 1. Read: receive until the queue answers empty, hiding what was read.
	q := &deadletter.Queue{API: client, URL: *queueURL}
	letters, err := q.Receive(ctx, *limit, *visibility)
	failed := err != nil
	if err != nil {
		fmt.Fprintf(stderr, "%s dlq: read %s: %v\n", programName, *queueURL, err)
	}
	// 2. Act: delete, redrive, or give the messages back.
	var errs []error
	if *del {
		errs = q.DeleteAll(ctx, letters)
	} else if *redrive {
		errs = q.Redrive(ctx, *intakeURL, letters)
	}
	for _, err := range errs {
		fmt.Fprintf(stderr, "%s dlq: %v\n", programName, err)
		failed = true
	}
	if err := q.Release(context.WithoutCancel(ctx), letters); err != nil {
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
			letters = []deadletter.Letter{}
		}
		writeJSON(stdout, stderr, letters)
	} else {
		deadletter.Write(stdout, *queueURL, letters, *limit)
	}
	if failed {
		return exitFailed
	}
	return exitOK
}

// dlqMisuse is what is wrong with dlq's arguments, "" when nothing.
func dlqMisuse(pos []string, queueURL, intakeURL string, del, redrive bool, limit int, visibility time.Duration) string {
	switch {
	case len(pos) > 0:
		return fmt.Sprintf("unexpected argument %q", pos[0])
	case queueURL == "":
		return "--queue-url (or EVALSCHED_DLQ_URL) is required"
	case del && redrive:
		return "--delete and --redrive exclude each other (--redrive deletes what it sent)"
	case redrive && intakeURL == "":
		return "--redrive needs --intake-queue-url (or EVALSCHED_QUEUE_URL)"
	case limit < 1:
		return "--max must be at least 1"
	case visibility < time.Second || visibility > 12*time.Hour:
		return "--visibility must be within 1s..12h"
	}
	return ""
}
