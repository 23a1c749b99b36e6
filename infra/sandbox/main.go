// Command sandbox is an example evalsched sandbox in Go, built on the sandbox
// kit (github.com/evalsched/evalsched/sandboxkit). One job is one item of an
// eval: the job's env (its batch message's jobs[].env, docs/batch-format.md)
// carries the item's question and expected answer. The sandbox asks the
// model through the LLM gateway, grades the answer, reports the verdict and
// the calls' latency, and exits with the convention's code. Real sandboxes
// replace the agent and the grading with their harness and keep the rest.
//
// # Grading where the agent cannot reach
//
// The model-driven part (the agent) runs as a child process: this binary
// again, as "sandbox agent". The child gets the question on its stdin and an
// environment holding only the gateway's settings: not the expected answer,
// the result queue, the result token or the task role's credentials. It
// writes its final answer as its last stdout line; the parent (the grader)
// reads only that line, grades it against the answer it alone holds, and
// reports. On Linux the parent makes itself non-dumpable, so a child of the
// same user cannot read its environment or memory through /proc, and when
// it runs as root the child runs as nobody (65534). docs/sandbox.md states
// the pattern and what it does not cover.
//
//	GATEWAY_URL=http://127.0.0.1:4000 EVALSCHED_JOB_ID=0123456789abcdef0123456789abcdef \
//	EVALSCHED_BATCH=acme/search/b1 EVALSCHED_MODEL=gpt-5.5 EVALSCHED_ATTEMPT=1 \
//	EVAL_PROMPT='What is 17 + 25? Reply with the number only.' EVAL_ANSWER=42 go run ./infra/sandbox
//
// In: the EVALSCHED_* variables the launcher sets (sandboxkit.JobFromEnv),
// the item from the job's env, and the task definition's settings:
//
//	EVAL_PROMPT                  the item's question, required
//	EVAL_ANSWER                  its expected answer, required; right when the reply holds it as a whole word (any case)
//	GATEWAY_URL                  the gateway, required
//	GATEWAY_API_KEY              its key; keep it in Secrets Manager and map it in the task definition's secrets
//	GATEWAY_RPM                  calls a minute the agent may start (default 600)
//	GATEWAY_MAX_WAIT             all retry waits of one call together, a Go duration (default 2m)
//	EVALSCHED_RESULT_QUEUE_URL   the results queue; unset: the verdict goes only to the log line
//
// Out: JSON log lines on stdout, the last one the result (sandboxkit.LogLine);
// the verdict on the results queue; exit 0 (judged, right or wrong), 75 (the
// provider failed: evalsched runs the item again) or 1 (the job's own
// failure: no verdict).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/evalsched/evalsched/sandboxkit"
)

// agentArg runs the binary as the agent (the child).
const agentArg = "agent"

func main() {
	// ECS sends SIGTERM before it stops a task (Spot reclaim, a cancel): end
	// the calls and still write the result line.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == agentArg {
		os.Exit(agent(ctx, os.Getenv, os.Stdin, os.Stdout, nil))
	}
	hideSelf()
	os.Exit(run(ctx, os.Getenv, os.Stdout, deps{sqs: newSQS, agent: selfAgent}))
}

// deps are what a test replaces.
type deps struct {
	sqs func(ctx context.Context) (sandboxkit.SQSSender, error)
	// agent returns the command that runs the agent: run sets its env and
	// stdio, and its SysProcAttr unless the command has one.
	agent func(ctx context.Context) (*exec.Cmd, error)
}

func newSQS(ctx context.Context) (sandboxkit.SQSSender, error) {
	cfg, err := config.LoadDefaultConfig(ctx) // the task role; AWS_ENDPOINT_URL_SQS points it elsewhere
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return sqs.NewFromConfig(cfg), nil
}

// selfAgent runs this binary again as the agent.
func selfAgent(ctx context.Context) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the sandbox binary: %w", err)
	}
	return exec.CommandContext(ctx, exe, agentArg), nil
}

// agentEnv is everything of the environment the agent gets: the gateway's
// settings. An allowlist, so what the task or a later version adds (the
// result token, AWS_CONTAINER_CREDENTIALS_*, the item's answer) stays out.
var agentEnv = []string{"GATEWAY_URL", "GATEWAY_API_KEY", "GATEWAY_RPM", "GATEWAY_MAX_WAIT"}

// maxAgentOutput bounds what the grader reads of the agent's stdout.
const maxAgentOutput = 1 << 20

func run(ctx context.Context, getenv func(string) string, stdout io.Writer, d deps) int {
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	lastLine := sandboxkit.LogLineReporter{W: stdout}

	// 1. The job, its item and the settings.
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

	// 2. The agent answers, in its own process.
	log.Info("eval started", "job", job.ID, "attempt", job.Attempt, "model", job.Model)
	reply, err := runAgent(ctx, d, getenv, agentRequest{Model: job.Model, Prompt: getenv("EVAL_PROMPT")}, stdout)

	// 3. The grade: a wrong answer is a verdict as much as a right one.
	var result sandboxkit.Result
	if err != nil {
		log.Error("eval ended without a verdict", "error", err)
		result = sandboxkit.NewResult(job, sandboxkit.NoVerdict, nil, err, nil)
	} else {
		outcome, score := grade(reply.Answer, getenv("EVAL_ANSWER"))
		result = sandboxkit.NewResult(job, outcome, &score, nil, nil)
	}
	if reply != nil {
		result.Latency, result.Stats = reply.Latency, reply.Calls
	}

	// 4. The result, and the exit code.
	code, _ := sandboxkit.Finish(ctx, result, reporters...) // a failed send is in the result line's report_errors
	return code
}

// checkSettings names the first missing or malformed setting.
func checkSettings(getenv func(string) string) error {
	for _, name := range []string{"EVAL_PROMPT", "EVAL_ANSWER"} {
		if strings.TrimSpace(getenv(name)) == "" {
			return fmt.Errorf("%s: required (the item, from the job's env)", name)
		}
	}
	if getenv("GATEWAY_URL") == "" {
		return errors.New("GATEWAY_URL: required (the gateway's base URL)")
	}
	if v := getenv("GATEWAY_RPM"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return fmt.Errorf("GATEWAY_RPM: %q is not an integer ≥ 1", v)
		}
	}
	if v := getenv("GATEWAY_MAX_WAIT"); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("GATEWAY_MAX_WAIT: %q is not a positive duration (e.g. 2m)", v)
		}
	}
	return nil
}

// grade says whether the reply holds the expected answer as a whole word,
// in any case: score 1 or 0.
func grade(reply, want string) (sandboxkit.Outcome, float64) {
	re := regexp.MustCompile(`(?i)(^|\W)` + regexp.QuoteMeta(strings.TrimSpace(want)) + `($|\W)`)
	if re.MatchString(reply) {
		return sandboxkit.Pass, 1
	}
	return sandboxkit.Fail, 0
}

// runAgent starts the agent with the request on its stdin and the
// allowlisted env, copies its stderr (its logs) to logs, and reads its last
// stdout line. The agent's exit 75 is the provider's failure; any other
// failure, or no reply, the job's own.
func runAgent(ctx context.Context, d deps, getenv func(string) string, req agentRequest, logs io.Writer) (*agentReply, error) {
	cmd, err := d.agent(ctx)
	if err != nil {
		return nil, err
	}
	cmd.Env = []string{}
	for _, name := range agentEnv {
		if v := getenv(name); v != "" {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	in, _ := json.Marshal(req)
	cmd.Stdin = bytes.NewReader(in)
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, logs
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = agentAttr()
	}
	cmd.WaitDelay = 5 * time.Second // after ctx ends: SIGKILL, then stop waiting for its pipes
	runErr := cmd.Run()

	reply, parseErr := lastReply(out.Bytes())
	var exit *exec.ExitError
	switch {
	case runErr == nil && parseErr == nil:
		return reply, nil
	case errors.As(runErr, &exit) && exit.ExitCode() == sandboxkit.ExitProviderFailed:
		msg := "the agent's provider failed"
		if parseErr == nil && reply.Error != "" {
			msg = reply.Error
		}
		return reply, &sandboxkit.ProviderError{Err: errors.New(msg)}
	case runErr != nil:
		if parseErr == nil && reply.Error != "" {
			return reply, fmt.Errorf("agent: %w: %s", runErr, reply.Error)
		}
		return nil, fmt.Errorf("agent: %w", runErr)
	default:
		return nil, fmt.Errorf("agent: %w", parseErr)
	}
}

// lastReply decodes the agent's last stdout line.
func lastReply(out []byte) (*agentReply, error) {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), maxAgentOutput)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			last = append(last[:0], line...)
		}
	}
	if last == nil {
		return nil, errors.New("no reply line on its stdout")
	}
	var r agentReply
	if err := json.Unmarshal(last, &r); err != nil {
		return nil, fmt.Errorf("its last stdout line is not a reply: %w", err)
	}
	return &r, nil
}

// limitedBuffer keeps the first maxAgentOutput bytes written and drops the
// rest: an agent flooding its stdout cannot take the grader's memory (its
// reply line is then lost, and the job fails on its own).
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxAgentOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
