package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/batchmsg"
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

// submit is runSubmit with standard input as a parameter, for tests.
func submit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), submitUsage)
		fs.PrintDefaults()
	}
	queueURL := fs.String("queue-url", os.Getenv("EVALSCHED_QUEUE_URL"), "the intake queue `URL` (default $EVALSCHED_QUEUE_URL)")
	dryRun := fs.Bool("dry-run", false, "check and split, print the parts, send nothing")
	def := batchmsg.DefaultConfig()
	tiers := fs.Int("tiers", def.Tiers, "the deployment's number of tiers `N`: a tier must be 0..N-1")
	bf := batchFlags{
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
	envAllow := envAllowFlag(fs)
	// Flags may follow the file too: parse up to each argument in turn.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
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
	cfg := batchmsg.Config{Tiers: *tiers, DefaultTier: min(def.DefaultTier, *tiers-1), DefaultMaxAttempts: def.DefaultMaxAttempts, EnvAllow: envAllow.list()}
	var batchSet []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "account", "project", "batch", "model", "tier", "task-definition", "timeout", "max-attempts",
			"moe", "confidence", "min-per-stratum", "stratum-field":
			batchSet = append(batchSet, "--"+f.Name)
		}
	})

	name, in := files[0], stdin
	if name == "-" {
		name = "<stdin>"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return failed("%v", err)
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return failed("read %s: %v", name, err)
	}

	// 1. Check and split.
	var b *outgoing
	if isMessage(data, name) {
		if len(batchSet) > 0 {
			return usageErr("%s is a batch message, which names its own fields: %s apply to JSON Lines of jobs", name, strings.Join(batchSet, ", "))
		}
		var errs []string
		b, errs = fromMessage(data, name, cfg)
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
		b, errs = fromLines(data, name, h, *bf.stratumField, cfg)
		if errs != nil {
			printErrors(stderr, errs)
			return exitFailed
		}
	}
	if *dryRun {
		for i, p := range b.parts {
			fmt.Fprintf(stdout, "part %d of %d: %s jobs, %s bytes\n", i+1, len(b.parts), commas(p.jobs), commas(len(p.body)))
		}
		fmt.Fprintf(stdout, "would send %s: %s jobs in %s (dry run: nothing sent)\n", b.id, commas(b.jobs), count(len(b.parts), "part"))
		return exitOK
	}

	// 2. Send.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	awsCfg, err := loadAWS(ctx)
	if err != nil {
		return failed("AWS configuration: %v", err)
	}
	if awsCfg.Region == "" {
		return failed("no AWS region: set AWS_REGION, or a region in your AWS profile")
	}
	client := sqs.NewFromConfig(awsCfg)
	prog := &sendProgress{w: stderr, on: isTerminal(stderr), id: b.id, parts: len(b.parts), jobs: b.jobs}
	for i, p := range b.parts {
		prog.draw(i)
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(*queueURL), MessageBody: aws.String(string(p.body))})
		if err != nil {
			prog.clear()
			fmt.Fprintf(stderr, "evalsched submit: send part %d of %d to %s: %v\n", i+1, len(b.parts), *queueURL, err)
			return failed("%s of %s were sent (%s jobs); sending %s again is safe: the intake stores each job once",
				commas(i), count(len(b.parts), "part"), commas(prog.sentJobs), name)
		}
		prog.sentJobs += p.jobs
	}
	prog.draw(len(b.parts))
	prog.clear()
	fmt.Fprintf(stdout, "sent %s: %s jobs in %s to %s\n", b.id, commas(b.jobs), count(len(b.parts), "part"), *queueURL)
	fmt.Fprintln(stdout, sentNote)
	return exitOK
}

// sentNote follows the sent line: the queue took the message, the intake
// has yet to judge it against the batch as stored (a resubmission with a
// changed field is refused there, asynchronously).
const sentNote = "the intake stores it, or puts it in the dead-letter queue with the reason if it conflicts with the batch as stored (a changed env, tier, …, or parts that do not fit): evalsched dlq"

// outgoing is a checked batch, ready to send.
type outgoing struct {
	id    string // account/project/batch
	jobs  int
	parts []part
}

type part struct {
	body []byte
	jobs int
}

// isMessage tells a batch message from JSON Lines of jobs: JSON Lines when
// the first line is a whole JSON object with neither "version" nor "jobs",
// or when the name ends in .jsonl or .ndjson and the first line is not a
// whole message.
func isMessage(data []byte, name string) bool {
	first := data
	for len(first) > 0 {
		var line []byte
		line, first, _ = bytes.Cut(first, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) > 0 {
			first = line
			break
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(first, &obj); err == nil {
		_, version := obj["version"]
		_, jobs := obj["jobs"]
		return version || jobs
	}
	ext := strings.ToLower(filepath.Ext(name))
	return ext != ".jsonl" && ext != ".ndjson"
}

// fromMessage checks a batch message; it is sent as it is.
func fromMessage(data []byte, name string, cfg batchmsg.Config) (*outgoing, []string) {
	m, err := batchmsg.Parse(data, cfg)
	if err != nil {
		var out []string
		for _, e := range batchmsg.Errors(err) {
			out = append(out, fmt.Sprintf("%s: %s", name, e))
		}
		if len(data) > batchmsg.MaxMessageBytes {
			out = append(out, fmt.Sprintf("%s: a batch larger than one message goes as JSON Lines of jobs with the batch's fields as flags: it is split into parts", name))
		}
		if out == nil {
			out = []string{fmt.Sprintf("%s: %v", name, err)}
		}
		return nil, out
	}
	return &outgoing{id: m.ID(), jobs: len(m.Jobs), parts: []part{{body: data, jobs: len(m.Jobs)}}}, nil
}

// header is a message's fields but for part, parts and jobs.
type header struct {
	Version        int             `json:"version"`
	Account        string          `json:"account"`
	Project        string          `json:"project"`
	Batch          string          `json:"batch"`
	Model          string          `json:"model,omitempty"`
	Tier           *int            `json:"tier,omitempty"`
	TaskDefinition string          `json:"task_definition,omitempty"`
	TimeoutSeconds int             `json:"timeout_seconds,omitempty"`
	MaxAttempts    int             `json:"max_attempts,omitempty"`
	Sampling       *samplingHeader `json:"sampling,omitempty"`
}

// samplingHeader is the batch's "sampling" object (min_per_stratum absent:
// the contract's default).
type samplingHeader struct {
	MOE           float64 `json:"moe"`
	Confidence    float64 `json:"confidence"`
	MinPerStratum int     `json:"min_per_stratum,omitempty"`
}

// header builds the batch's fields from the flags (set: the batch flags
// given); the rules on their values are Parse's to check, on every part.
func (f batchFlags) header(set []string) (header, error) {
	var missing []string
	for _, r := range []struct{ flag, v string }{{"--account", *f.account}, {"--project", *f.project}, {"--batch", *f.batch}} {
		if r.v == "" {
			missing = append(missing, r.flag)
		}
	}
	if missing != nil {
		return header{}, fmt.Errorf("JSON Lines of jobs need the batch's %s", strings.Join(missing, ", "))
	}
	h := header{Version: batchmsg.Version, Account: *f.account, Project: *f.project, Batch: *f.batch,
		Model: *f.model, TaskDefinition: *f.taskDefinition, MaxAttempts: *f.maxAttempts}
	if *f.tier != "" {
		n, err := strconv.Atoi(*f.tier)
		if err != nil {
			return header{}, fmt.Errorf("--tier: %q is not an integer", *f.tier)
		}
		h.Tier = &n
	}
	if *f.timeout != "" {
		s, err := seconds(*f.timeout)
		if err != nil {
			return header{}, fmt.Errorf("--timeout: %v", err)
		}
		h.TimeoutSeconds = s
	}
	given := func(flag string) bool { return slices.Contains(set, flag) }
	switch {
	case given("--moe") != given("--confidence"):
		return header{}, errors.New("a sampled batch needs both --moe and --confidence")
	case given("--moe"):
		h.Sampling = &samplingHeader{MOE: *f.moe, Confidence: *f.confidence}
		if given("--min-per-stratum") {
			if *f.minPerStratum < 1 {
				return header{}, fmt.Errorf("--min-per-stratum: %d is below 1", *f.minPerStratum)
			}
			h.Sampling.MinPerStratum = *f.minPerStratum
		}
	case given("--min-per-stratum") || given("--stratum-field"):
		return header{}, errors.New("--min-per-stratum and --stratum-field apply to a sampled batch: give --moe and --confidence")
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

// job is one line of a JSON Lines file.
type job struct {
	line int
	raw  []byte
}

// fromLines reads JSON Lines of jobs, packs them into parts under 1 MiB and
// checks every part with Parse, naming the line of each broken rule.
func fromLines(data []byte, name string, h header, stratumField string, cfg batchmsg.Config) (*outgoing, []string) {
	errs := lineErrors{name: name}
	fields, err := json.Marshal(h)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", name, err)}
	}
	maxJob := batchmsg.MaxJobBytes(fields)

	// 1. Jobs: one JSON object per non-blank line. A broken line is
	// reported and left out, so the others are still checked.
	var jobs []job
	for n, rest := 1, data; len(rest) > 0; n++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			errs.add(n, "", "invalid JSON: %v", err)
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			errs.add(n, "", "must be a JSON object (a job), not %s", clipBytes(line))
			continue
		}
		if stratumField != "" {
			var err error
			if line, err = withStratum(line, obj, stratumField); err != nil {
				errs.add(n, stratumField, "%v", err)
				continue
			}
		}
		if len(line) > maxJob {
			errs.add(n, "", "a job of %s bytes does not fit in a message (at most %s with the batch's fields)",
				commas(len(line)), commas(maxJob))
			continue
		}
		jobs = append(jobs, job{line: n, raw: line})
	}
	if len(jobs) == 0 && errs.list == nil {
		errs.add(0, "", "no jobs")
	}

	// 2. Parts: as many jobs as fit in a message (batchmsg.Split).
	raws := make([][]byte, len(jobs))
	for i, j := range jobs {
		raws[i] = j.raw
	}
	parts, err := batchmsg.Split(fields, raws)
	var pe *batchmsg.PartsError
	switch {
	case errors.As(err, &pe):
		errs.add(0, "", "the batch needs %s parts, more than the contract's %s: split it into several batches",
			commas(pe.Parts), commas(pe.Max))
		return nil, errs.list
	case err != nil:
		errs.add(0, "", "%v", err)
		return nil, errs.list
	}

	// 3. Check every part as the intake will, and keys across parts.
	b := &outgoing{id: h.Account + "/" + h.Project + "/" + h.Batch, jobs: len(jobs)}
	keys := map[string]int{} // key → line
	for _, p := range parts {
		b.parts = append(b.parts, part{body: p.Body, jobs: p.To - p.From})
		m, err := batchmsg.Parse(p.Body, cfg)
		if perrs := batchmsg.Errors(err); perrs != nil {
			for _, e := range perrs {
				errs.fromParse(e, jobs[p.From:p.To])
			}
		} else if err != nil {
			errs.add(0, "", "%v", err)
		}
		for k, j := range m.Jobs { // none when the part is invalid
			line := jobs[p.From+k].line
			if first, dup := keys[j.Key]; dup {
				errs.add(line, "key", "%s duplicates line %d", strconv.Quote(j.Key), first)
			} else {
				keys[j.Key] = line
			}
		}
		if len(errs.list) > maxShown {
			break
		}
	}
	if errs.list != nil {
		return nil, errs.list
	}
	return b, nil
}

// withStratum rewrites a job's line with its stratum taken from field: a
// top-level field is moved into "stratum" (the contract knows no other
// job field), env.NAME is copied (the job's env keeps it). A string is
// taken as it is, a number as written; the rules on the name are Parse's.
func withStratum(line []byte, obj map[string]any, field string) ([]byte, error) {
	var v any
	var ok bool
	if name, inEnv := strings.CutPrefix(field, "env."); inEnv {
		env, _ := obj["env"].(map[string]any)
		v, ok = env[name]
	} else {
		v, ok = obj[field]
	}
	if !ok {
		return nil, errors.New("missing: --stratum-field names each job's stratum")
	}
	var stratum string
	switch x := v.(type) {
	case string:
		stratum = x
	case float64:
		stratum = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return nil, fmt.Errorf("must be a string or a number (the job's stratum), not %s", clipBytes(mustJSON(v)))
	}
	if _, has := obj["stratum"]; has && field != "stratum" {
		return nil, errors.New(`the line has its own "stratum" too: one or the other`)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(field, "env.") {
		delete(raw, field)
	}
	raw["stratum"] = mustJSON(stratum)
	return json.Marshal(raw)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// lineErrors collects "FILE:LINE: field: rule" lines, each once, in line
// order (the file's own errors, line 0, first) whichever check found them
// first.
type lineErrors struct {
	name  string
	list  []string
	lines []int // list[i]'s line
	seen  map[string]bool
}

func (e *lineErrors) add(line int, field, format string, a ...any) {
	var b strings.Builder
	b.WriteString(e.name)
	if line > 0 {
		fmt.Fprintf(&b, ":%d", line)
	}
	b.WriteString(": ")
	if field != "" {
		b.WriteString(field + ": ")
	}
	fmt.Fprintf(&b, format, a...)
	s := b.String()
	if e.seen[s] {
		return
	}
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	e.seen[s] = true
	i := len(e.lines)
	for i > 0 && e.lines[i-1] > line {
		i--
	}
	e.list, e.lines = slices.Insert(e.list, i, s), slices.Insert(e.lines, i, line)
}

var (
	jobField = regexp.MustCompile(`^jobs\[(\d+)\]\.?(.*)$`)
	jobRef   = regexp.MustCompile(`jobs\[(\d+)\](\.key)?`)
)

// flagOf names the flag that sets a message field.
var flagOf = map[string]string{
	"account": "--account", "project": "--project", "batch": "--batch", "model": "--model", "tier": "--tier",
	"task_definition": "--task-definition", "timeout_seconds": "--timeout", "max_attempts": "--max-attempts",
	"sampling.moe": "--moe", "sampling.confidence": "--confidence", "sampling.min_per_stratum": "--min-per-stratum",
}

// fromParse translates an error of Parse on a part into the file's terms:
// jobs[k] is the line of the part's k-th job, a batch field its flag.
func (e *lineErrors) fromParse(pe *batchmsg.Error, jobs []job) {
	lineOf := func(k string) int {
		i, _ := strconv.Atoi(k)
		if i < len(jobs) {
			return jobs[i].line
		}
		return 0
	}
	rule := jobRef.ReplaceAllStringFunc(pe.Rule, func(ref string) string {
		return fmt.Sprintf("line %d", lineOf(jobRef.FindStringSubmatch(ref)[1]))
	})
	if m := jobField.FindStringSubmatch(pe.Field); m != nil {
		e.add(lineOf(m[1]), m[2], "%s", rule)
		return
	}
	field := pe.Field
	if f, ok := flagOf[field]; ok {
		field = f
	}
	e.add(0, field, "%s", rule)
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

func clipBytes(b []byte) []byte {
	if len(b) > 40 {
		return append(b[:40:40], "..."...)
	}
	return b
}

// sendProgress draws "parts sent / total, jobs" on a terminal, at most ten
// times a second.
type sendProgress struct {
	w           io.Writer
	on          bool
	id          string
	parts, jobs int
	sentJobs    int
	drawn       bool
	last        time.Time
}

const barWidth = 24

func (p *sendProgress) draw(sent int) {
	if !p.on {
		return
	}
	now := time.Now()
	if sent > 0 && sent < p.parts && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	fill := barWidth * sent / max(p.parts, 1)
	fmt.Fprintf(p.w, "\r\033[Ksending %s [%s%s] %s/%s parts, %s/%s jobs", p.id,
		strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill),
		commas(sent), commas(p.parts), commas(p.sentJobs), commas(p.jobs))
	p.drawn = true
}

func (p *sendProgress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// commas writes n with thousands separators: 10,000.
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// count writes "1 part", "11 parts".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return commas(n) + " " + noun + "s"
}
