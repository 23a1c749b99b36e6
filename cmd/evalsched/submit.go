package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
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

// batchFlags are the batch's fields for JSON Lines input.
type batchFlags struct {
	account, project, batch, model, tier, taskDefinition, timeout *string
	maxAttempts                                                   *int
	moe, confidence                                               *float64
	minPerStratum                                                 *int
	stratumField                                                  *string
}

// addBatchFlags adds the batch's fields for JSON Lines input to fs.
func addBatchFlags(fs *flag.FlagSet) batchFlags {
	return batchFlags{
		account:        fs.String("account", "", "JSON Lines: the batch's `account`; required"),
		project:        fs.String("project", "", "JSON Lines: the batch's `project`; required"),
		batch:          fs.String("batch", "", "JSON Lines: the batch's `name`; required"),
		model:          fs.String("model", "", "JSON Lines: the `model` of jobs naming none"),
		tier:           fs.String("tier", "", "JSON Lines: the batch's `tier`, 0 most urgent (default: the deployment's)"),
		taskDefinition: fs.String("task-definition", "", "JSON Lines: ECS task definition `family[:revision]` (default: the deployment's)"),
		timeout:        fs.String("timeout", "", "JSON Lines: stop a job after `T`: seconds, or a duration such as 2h"),
		maxAttempts:    fs.Int("max-attempts", 0, "JSON Lines: launches lost to infrastructure a job may take, `N` of 1..10 (default 3)"),
		moe:            fs.Float64("moe", 0, "JSON Lines, sampled: stop once the pass rate is known to ±`M` (0.001..0.5); with --confidence"),
		confidence:     fs.Float64("confidence", 0, "JSON Lines, sampled: the `C` of the stop rule's interval (0.5..0.999); with --moe"),
		minPerStratum:  fs.Int("min-per-stratum", 0, "JSON Lines, sampled: results every stratum needs before a stop, `N` (default 30)"),
		stratumField:   fs.String("stratum-field", "", "JSON Lines, sampled: each job's stratum is its line's `FIELD` (a top-level field, or env.NAME)"),
	}
}

// batchFlagsSet lists the batch flags given, as "--name".
func batchFlagsSet(fs *flag.FlagSet) []string {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "account", "project", "batch", "model", "tier", "task-definition", "timeout", "max-attempts",
			"moe", "confidence", "min-per-stratum", "stratum-field":
			set = append(set, "--"+f.Name)
		}
	})
	return set
}

// submit is runSubmit with standard input as a parameter, for tests.
func submit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("submit", stderr, submitUsage)
	queueURL := fs.String("queue-url", os.Getenv("EVALSCHED_QUEUE_URL"), "the intake queue `URL` (default $EVALSCHED_QUEUE_URL)")
	dryRun := fs.Bool("dry-run", false, "check and split, print the parts, send nothing")
	def := batchmsg.DefaultConfig()
	tiers := fs.Int("tiers", def.Tiers, "the deployment's number of tiers `N`: a tier must be 0..N-1")
	bf := addBatchFlags(fs)
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
	batchSet := batchFlagsSet(fs)

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
		h, err := bf.header(batchSet)
		if err != nil {
			return usageErr("%v", err)
		}
		var errs []string
		b, errs = batchmsg.FromLines(data, batchmsg.Lines{Name: name, Fields: h, StratumField: *bf.stratumField, FieldNames: flagOf, MaxErrors: maxShown}, cfg)
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

// header builds the batch's fields from the flags (set: the batch flags
// given); the rules on their values are Parse's to check, on every part.
func (f batchFlags) header(set []string) (batchmsg.Fields, error) {
	var missing []string
	for _, r := range []struct{ flag, v string }{{"--account", *f.account}, {"--project", *f.project}, {"--batch", *f.batch}} {
		if r.v == "" {
			missing = append(missing, r.flag)
		}
	}
	if missing != nil {
		return batchmsg.Fields{}, fmt.Errorf("JSON Lines of jobs need the batch's %s", strings.Join(missing, ", "))
	}
	h := batchmsg.Fields{Version: batchmsg.Version, Account: *f.account, Project: *f.project, Batch: *f.batch,
		Model: *f.model, TaskDefinition: *f.taskDefinition, MaxAttempts: *f.maxAttempts}
	if *f.tier != "" {
		n, err := strconv.Atoi(*f.tier)
		if err != nil {
			return batchmsg.Fields{}, fmt.Errorf("--tier: %q is not an integer", *f.tier)
		}
		h.Tier = &n
	}
	if *f.timeout != "" {
		s, err := seconds(*f.timeout)
		if err != nil {
			return batchmsg.Fields{}, fmt.Errorf("--timeout: %v", err)
		}
		h.TimeoutSeconds = s
	}
	given := func(flag string) bool { return slices.Contains(set, flag) }
	switch {
	case given("--moe") != given("--confidence"):
		return batchmsg.Fields{}, errors.New("a sampled batch needs both --moe and --confidence")
	case given("--moe"):
		h.Sampling = &batchmsg.SamplingField{MOE: *f.moe, Confidence: *f.confidence}
		if given("--min-per-stratum") {
			if *f.minPerStratum < 1 {
				return batchmsg.Fields{}, fmt.Errorf("--min-per-stratum: %d is below 1", *f.minPerStratum)
			}
			h.Sampling.MinPerStratum = *f.minPerStratum
		}
	case given("--min-per-stratum") || given("--stratum-field"):
		return batchmsg.Fields{}, errors.New("--min-per-stratum and --stratum-field apply to a sampled batch: give --moe and --confidence")
	}
	return h, nil
}

// seconds reads "3600" or "1h": whole seconds.
func seconds(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d%time.Second != 0 {
		return 0, fmt.Errorf("%q is not whole seconds (3600) or a duration (1h)", s)
	}
	return int(d / time.Second), nil
}

// flagOf names the flag that sets a message field, for its errors.
var flagOf = map[string]string{
	"account": "--account", "project": "--project", "batch": "--batch", "model": "--model", "tier": "--tier",
	"task_definition": "--task-definition", "timeout_seconds": "--timeout", "max_attempts": "--max-attempts",
	"sampling.moe": "--moe", "sampling.confidence": "--confidence", "sampling.min_per_stratum": "--min-per-stratum",
}

func printErrors(w io.Writer, errs []string) {
	for i, s := range errs {
		if i == maxShown {
			fmt.Fprintf(w, "… and more; fix these first\n")
			break
		}
		fmt.Fprintln(w, s)
	}
}
