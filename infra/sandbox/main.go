// Command sandbox is an example evalsched sandbox in Go, built on the sandbox
// kit (github.com/evalsched/evalsched/sandboxkit): it asks the model a few
// arithmetic questions through the LLM gateway, grades the answers, reports
// the verdict and its latency, and exits with the convention's code. Real
// sandboxes replace the questions and the grading with their eval harness
// and keep the rest.
//
//	GATEWAY_URL=http://127.0.0.1:4000 EVALSCHED_JOB_ID=0123456789abcdef0123456789abcdef \
//	EVALSCHED_BATCH=acme/search/b1 EVALSCHED_MODEL=gpt-5.5 EVALSCHED_ATTEMPT=1 go run ./infra/sandbox
//
// In: the EVALSCHED_* variables the launcher sets (sandboxkit.JobFromEnv),
// and from the task definition or the job's env:
//
//	GATEWAY_URL                  the gateway, required
//	GATEWAY_API_KEY              its key; keep it in Secrets Manager and map it in the task definition's secrets
//	GATEWAY_RPM                  calls a minute this sandbox may start (default 600)
//	EVAL_CONCURRENCY             questions in flight at once (default 4)
//	EVAL_PASS_SCORE              the share of right answers that passes (default 0.75)
//	EVALSCHED_RESULT_QUEUE_URL   the results queue; unset: the verdict goes only to the log line
//
// Out: JSON log lines on stdout, the last one the result (sandboxkit.LogLine);
// the verdict on the results queue; exit 0 (judged, pass or fail), 75 (the
// provider failed) or 1 (the job's own failure).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/evalsched/evalsched/sandboxkit"
)

func main() {
	// ECS sends SIGTERM before it stops a task (Spot reclaim, a cancel): end
	// the calls and still write the result line.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Getenv, os.Stdout, deps{sqs: newSQS}))
}

// deps are what a test replaces.
type deps struct {
	sqs   func(ctx context.Context) (sandboxkit.SQSSender, error)
	clock sandboxkit.Clock // nil: the wall clock
}

func newSQS(ctx context.Context) (sandboxkit.SQSSender, error) {
	cfg, err := config.LoadDefaultConfig(ctx) // the task role; AWS_ENDPOINT_URL_SQS points it elsewhere
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return sqs.NewFromConfig(cfg), nil
}

// question is one item of the example eval.
type question struct {
	prompt string
	answer string // the number the reply must contain
}

var questions = []question{
	{"What is 17 + 25? Reply with the number only.", "42"},
	{"What is 9 × 8? Reply with the number only.", "72"},
	{"What is 144 / 12? Reply with the number only.", "12"},
	{"What is 1000 − 1? Reply with the number only.", "999"},
}

func run(ctx context.Context, getenv func(string) string, stdout io.Writer, d deps) int {
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	lastLine := sandboxkit.LogLineReporter{W: stdout}

	// 1. The job and the configuration.
	job, err := sandboxkit.JobFromEnv(getenv)
	if err == nil {
		err = checkSettings(getenv)
	}
	if err != nil {
		code, _ := sandboxkit.Finish(ctx, sandboxkit.NewResult(job, sandboxkit.NoVerdict, nil, err, nil), lastLine)
		return code
	}
	reporters := []sandboxkit.Reporter{}
	if url := getenv(sandboxkit.EnvResultQueueURL); url != "" {
		client, err := d.sqs(ctx)
		if err != nil {
			log.Error("no results queue client: the verdict goes only to the log line", "error", err)
		} else {
			reporters = append(reporters, sandboxkit.SQSReporter{Client: client, QueueURL: url})
		}
	}
	reporters = append(reporters, lastLine) // last: the result is the last line

	// 2. The kit's client.
	client, err := newClient(getenv, d.clock)
	if err != nil {
		code, _ := sandboxkit.Finish(ctx, sandboxkit.NewResult(job, sandboxkit.NoVerdict, nil, err, nil), reporters...)
		return code
	}

	// 3. The eval.
	log.Info("eval started", "job", job.ID, "attempt", job.Attempt, "model", job.Model, "questions", len(questions))
	right, err := ask(ctx, client, job.Model, atoi(getenv("EVAL_CONCURRENCY"), 4))
	score := float64(right) / float64(len(questions))
	outcome := sandboxkit.Fail
	if score >= atof(getenv("EVAL_PASS_SCORE"), 0.75) {
		outcome = sandboxkit.Pass
	}
	if err != nil {
		log.Error("eval ended without a verdict", "error", err)
	}

	// 4. The result, and the exit code.
	code, rerr := sandboxkit.Finish(ctx, sandboxkit.NewResult(job, outcome, &score, err, client), reporters...)
	_ = rerr // already in the result line's report_errors
	return code
}

// checkSettings names the first malformed setting of the example.
func checkSettings(getenv func(string) string) error {
	if getenv("GATEWAY_URL") == "" {
		return fmt.Errorf("GATEWAY_URL: required (the gateway's base URL)")
	}
	for _, name := range []string{"GATEWAY_RPM", "EVAL_CONCURRENCY"} {
		if v := getenv(name); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return fmt.Errorf("%s: %q is not an integer ≥ 1", name, v)
			}
		}
	}
	if v := getenv("EVAL_PASS_SCORE"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || f > 1 {
			return fmt.Errorf("EVAL_PASS_SCORE: %q is not a number in [0, 1]", v)
		}
	}
	return nil
}

func newClient(getenv func(string) string, clock sandboxkit.Clock) (*sandboxkit.Client, error) {
	limiter, err := sandboxkit.NewLimiter(atoi(getenv("GATEWAY_RPM"), 600), time.Minute, clock)
	if err != nil {
		return nil, err
	}
	// Answers held until graded: stop starting calls at 128 MiB, resume at 64.
	memory, err := sandboxkit.NewWatermark(64<<20, 128<<20)
	if err != nil {
		return nil, err
	}
	return sandboxkit.NewClient(sandboxkit.Config{
		GatewayURL: getenv("GATEWAY_URL"),
		APIKey:     getenv("GATEWAY_API_KEY"),
		Limiter:    limiter,
		Memory:     memory,
		Clock:      clock,
	})
}

// ask puts every question with at most concurrency in flight and counts the
// right answers. The first error ends the eval: a provider failure or the
// job's own, which the caller's exit code tells apart.
func ask(ctx context.Context, c *sandboxkit.Client, model string, concurrency int) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		right int
		slots = make(chan struct{}, concurrency)
	)
	for _, q := range questions {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			r, err := c.Chat(ctx, sandboxkit.ChatRequest{Model: model, MaxTokens: 16,
				Messages: []sandboxkit.Message{{Role: "user", Content: q.prompt}}})
			if err != nil {
				cancel(err)
				return
			}
			defer r.Release() // graded: the answer's bytes go back to the watermark
			if regexp.MustCompile(`\b` + q.answer + `\b`).MatchString(r.Content) {
				mu.Lock()
				right++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return right, err
	}
	return right, nil
}

func atoi(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func atof(s string, def float64) float64 {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return def
}
