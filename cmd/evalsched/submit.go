package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/config"
)

var submitCommand = command{
	name:    "submit",
	summary: "send a batch to the intake queue: a message as it is, JSON Lines split into parts under 1 MiB",
	run:     runSubmit,
}

const submitUsage = `usage: evalsched submit [flags] FILE

Sends a batch to the intake queue. FILE (or - for standard input) is either

  - a batch message (docs/batch-format.md), sent as it is, never split: it
    must be under 1 MiB with at most 10,000 jobs; or
  - JSON Lines of jobs, one {"key": …, "env": {…}, "model": …} per line, with
    the batch's fields as flags (--account, --project and --batch required).
    The jobs are split into parts, each a message under SQS's 1 MiB limit
    with at most 10,000 jobs, numbered with part and parts.

A batch of JSON Lines is sampled (docs/sampling.md) when --moe
and --confidence are given: every part carries the same "sampling", and
each job needs a stratum, from its own "stratum" or, with --stratum-field,
from another field of its line (a top-level field, moved into "stratum",
or env.NAME, which stays in the env). Example, stop at ±1.5 % with 99 %
confidence, strata by each line's "subject":

  evalsched submit --account lab --project mmlu --batch run7 --model m \
    --moe 0.015 --confidence 0.99 --stratum-field subject questions.jsonl

Every part is checked first with the intake's own parser: a broken rule is
printed as "FILE:LINE: field: rule" and nothing is sent (exit 1). Then the
parts are sent one SendMessage each, with a progress bar on a terminal, and
a last line sums up. The intake stores each job once, so sending a file
again after a failure is safe. Sending is not storing: the intake refuses a
message that is invalid or conflicts with its batch as stored (a changed
env, tier, …, parts that do not fit) and puts it in the dead-letter queue
with the reason, storing nothing of it: see evalsched dlq.

The queue is --queue-url or EVALSCHED_QUEUE_URL. The AWS SDK's settings
apply: AWS_REGION, AWS_PROFILE, and AWS_ENDPOINT_URL_SQS (or
AWS_ENDPOINT_URL) for a local stand-in.

Exit codes: 0 sent, 1 invalid input or a failed send, 2 usage.

flags:
`

// maxShown is how many broken rules submit prints before it stops listing.
const maxShown = 20

func runSubmit(args []string, stdout, stderr io.Writer) int {
	return submit(args, os.Stdin, stdout, stderr)
}

// submit is runSubmit with standard input as a parameter, for tests.
func submit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("submit", stderr, submitUsage)
	queueURL := fs.String("queue-url", os.Getenv("EVALSCHED_QUEUE_URL"), "the intake queue `URL` (default $EVALSCHED_QUEUE_URL)")
	dryRun := fs.Bool("dry-run", false, "check and split, print the parts, send nothing")
	def := batchmsg.DefaultConfig()
	tiers := fs.Int("tiers", def.Tiers, "the deployment's number of tiers `N`: a tier must be 0..N-1")
	bf := batchmsg.AddFlags(fs)
	envAllow := envAllowFlag(fs)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "evalsched submit: "+format+"\n", a...)
		fs.Usage()
		return exitUsage
	}
	failed := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "evalsched submit: "+format+"\n", a...)
		return exitFailed
	}
	if len(files) != 1 {
		return usageErr("want one FILE (or - for standard input), got %d", len(files))
	}
	if *queueURL == "" && !*dryRun {
		return usageErr("--queue-url (or EVALSCHED_QUEUE_URL) is required, except with --dry-run")
	}
	if *tiers < 1 {
		return usageErr("--tiers must be at least 1")
	}
	cfg := batchmsg.Config{Tiers: *tiers, DefaultTier: min(def.DefaultTier, *tiers-1), DefaultMaxAttempts: def.DefaultMaxAttempts, EnvAllow: config.List(*envAllow)}
	batchSet := bf.Given()

	name, data, err := readInput(files[0], stdin, -1)
	if err != nil {
		return failed("%v", err)
	}

	// 1. Check and split.
	var b *batchmsg.Outgoing
	if batchmsg.IsMessage(data, name) {
		if len(batchSet) > 0 {
			return usageErr("%s is a batch message, which names its own fields: %s apply to JSON Lines of jobs", name, strings.Join(batchSet, ", "))
		}
		var errs []string
		b, errs = batchmsg.FromMessage(data, name, cfg)
		if errs != nil {
			printErrors(stderr, errs)
			return exitFailed
		}
	} else {
		h, err := bf.Fields()
		if err != nil {
			return usageErr("%v", err)
		}
		var errs []string
		b, errs = batchmsg.FromLines(data, batchmsg.Lines{Name: name, Fields: h, StratumField: bf.StratumField(), FieldNames: batchmsg.FlagNames, MaxErrors: maxShown}, cfg)
		if errs != nil {
			printErrors(stderr, errs)
			return exitFailed
		}
	}
	if *dryRun {
		for i, p := range b.Parts {
			fmt.Fprintf(stdout, "part %d of %d: %s jobs, %s bytes\n", i+1, len(b.Parts), cliout.Commas(p.Jobs), cliout.Commas(len(p.Body)))
		}
		fmt.Fprintf(stdout, "would send %s: %s jobs in %s (dry run: nothing sent)\n", b.ID, cliout.Commas(b.Jobs), cliout.Count(len(b.Parts), "part"))
		return exitOK
	}

	// 2. Send.
	return send(b, name, *queueURL, stdout, stderr)
}

// send sends the parts one SendMessage each, with a progress bar on a
// terminal, and sums up.
func send(b *batchmsg.Outgoing, name, queueURL string, stdout, stderr io.Writer) int {
	failed := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "evalsched submit: "+format+"\n", a...)
		return exitFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client, err := sqsClient(ctx)
	if err != nil {
		return failed("%v", err)
	}
	bar := cliout.NewLine(stderr, true, 100*time.Millisecond)
	sentJobs := 0
	draw := func(sent int) {
		bar.Draw(sent == 0 || sent == len(b.Parts), "sending %s %s %s/%s parts, %s/%s jobs", b.ID, cliout.Bar(sent, len(b.Parts)),
			cliout.Commas(sent), cliout.Commas(len(b.Parts)), cliout.Commas(sentJobs), cliout.Commas(b.Jobs))
	}
	for i, p := range b.Parts {
		draw(i)
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(p.Body))})
		if err != nil {
			bar.Clear()
			fmt.Fprintf(stderr, "evalsched submit: send part %d of %d to %s: %v\n", i+1, len(b.Parts), queueURL, err)
			return failed("%s of %s were sent (%s jobs); sending %s again is safe: the intake stores each job once",
				cliout.Commas(i), cliout.Count(len(b.Parts), "part"), cliout.Commas(sentJobs), name)
		}
		sentJobs += p.Jobs
	}
	draw(len(b.Parts))
	bar.Clear()
	fmt.Fprintf(stdout, "sent %s: %s jobs in %s to %s\n", b.ID, cliout.Commas(b.Jobs), cliout.Count(len(b.Parts), "part"), queueURL)
	fmt.Fprintln(stdout, sentNote)
	return exitOK
}

// readInput reads FILE, or standard input for "-" (named <stdin>): all of
// it, or at most limit bytes when limit ≥ 0.
func readInput(name string, stdin io.Reader, limit int64) (string, []byte, error) {
	in := stdin
	if name == "-" {
		name = "<stdin>"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return name, nil, err
		}
		defer f.Close()
		in = f
	}
	if limit >= 0 {
		in = io.LimitReader(in, limit)
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return name, nil, fmt.Errorf("read %s: %w", name, err)
	}
	return name, data, nil
}

// sentNote follows the sent line: the queue took the message, the intake
// has yet to judge it against the batch as stored (a resubmission with a
// changed field is refused there, asynchronously).
const sentNote = "the intake stores it, or puts it in the dead-letter queue with the reason if it conflicts with the batch as stored (a changed env, tier, …, or parts that do not fit): evalsched dlq"

func printErrors(w io.Writer, errs []string) {
	for i, s := range errs {
		if i == maxShown {
			fmt.Fprintf(w, "… and more; fix these first\n")
			break
		}
		fmt.Fprintln(w, s)
	}
}
