package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/evalsched/evalsched/sandboxkit"
)

// agentRequest is what the grader gives the agent on its stdin.
type agentRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
}

// agentReply is the agent's last stdout line: its final answer (empty with
// an error), and what its calls did.
type agentReply struct {
	Answer  string                    `json:"answer"`
	Error   string                    `json:"error,omitempty"`
	Latency sandboxkit.LatencySummary `json:"latency"`
	Calls   sandboxkit.Stats          `json:"calls"`
}

// agent is the model-driven part: it asks the model the question through
// the gateway and writes its answer as the last line of stdout. It logs to
// stderr. It exits 0 with an answer, 75 when the provider failed, 1 on its
// own failure. It holds nothing the grade depends on.
func agent(ctx context.Context, getenv func(string) string, stdin io.Reader, stdout io.Writer, clock sandboxkit.Clock) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	var req agentRequest
	if err := json.NewDecoder(io.LimitReader(stdin, maxAgentOutput)).Decode(&req); err != nil {
		return reply(stdout, agentReply{Error: fmt.Sprintf("read the request: %v", err)}, 1)
	}
	client, err := newClient(getenv, clock)
	if err != nil {
		return reply(stdout, agentReply{Error: err.Error()}, 1)
	}
	log.Info("agent asks", "model", req.Model)
	r, err := client.Chat(ctx, sandboxkit.ChatRequest{Model: req.Model, MaxTokens: 256,
		Messages: []sandboxkit.Message{{Role: "user", Content: req.Prompt}}})
	out := agentReply{Latency: client.Latency(), Calls: client.Stats()}
	if err != nil {
		out.Error = err.Error()
		return reply(stdout, out, sandboxkit.ExitCode(err))
	}
	defer r.Release()
	out.Answer = r.Content
	return reply(stdout, out, 0)
}

func reply(stdout io.Writer, r agentReply, code int) int {
	b, _ := json.Marshal(r)
	fmt.Fprintf(stdout, "%s\n", b)
	return code
}

func newClient(getenv func(string) string, clock sandboxkit.Clock) (*sandboxkit.Client, error) {
	rpm := 600
	if n, err := strconv.Atoi(getenv("GATEWAY_RPM")); err == nil && n > 0 {
		rpm = n
	}
	limiter, err := sandboxkit.NewLimiter(rpm, time.Minute, clock)
	if err != nil {
		return nil, err
	}
	maxWait, _ := time.ParseDuration(getenv("GATEWAY_MAX_WAIT")) // checked by the grader; 0 takes the default
	return sandboxkit.NewClient(sandboxkit.Config{
		GatewayURL: getenv("GATEWAY_URL"),
		APIKey:     getenv("GATEWAY_API_KEY"),
		Limiter:    limiter,
		Retry:      sandboxkit.RetryPolicy{MaxWait: max(maxWait, 0)},
		Clock:      clock,
	})
}
