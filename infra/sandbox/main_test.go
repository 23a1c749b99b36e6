package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/sandboxkit"
)

// TestMain lets the test binary stand in for the sandbox binary: run as
// "agent" it is the agent (run starts it so, through selfAgent); as
// "printenv" or "crash", an agent that replies with its environment and its
// stdin, or exits 3 without a reply.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 {
		switch os.Args[1] {
		case agentArg:
			os.Exit(agent(context.Background(), os.Getenv, os.Stdin, os.Stdout, nil))
		case "printenv":
			in, _ := io.ReadAll(os.Stdin)
			fmt.Fprintf(os.Stdout, "a line before the reply\n")
			os.Exit(reply(os.Stdout, agentReply{Answer: fmt.Sprintf("UID=%d\n%s\n%s", os.Getuid(), strings.Join(os.Environ(), "\n"), in)}, 0))
		case "crash":
			fmt.Fprintln(os.Stdout, "half a line")
			os.Exit(3)
		}
	}
	os.Exit(m.Run())
}

// testAgent is an agent command of the test binary in the given role, run
// as the test's user: as root, run would start it as nobody, who cannot
// reach the test binary (TestAgentRunsAsNobody does that).
func testAgent(role string) func(context.Context) (*exec.Cmd, error) {
	return func(ctx context.Context) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, os.Args[0], role)
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		return cmd, nil
	}
}

// gateway is a fake LLM gateway on 127.0.0.1 that answers an arithmetic
// question as a reasoning model streams: a few reasoning tokens, then the
// answer, token by token in small flushed writes; wrong makes it answer
// wrong, status makes it fail every call with that status.
func gateway(t *testing.T, wrong bool, status int) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	numbers := regexp.MustCompile(`(\d+) (\S) (\d+)`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if status != 0 {
			http.Error(w, `{"error":{"message":"provider down"}}`, status)
			return
		}
		var req sandboxkit.ChatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		m := numbers.FindStringSubmatch(req.Messages[0].Content)
		if m == nil {
			http.Error(w, "not an arithmetic question", http.StatusBadRequest)
			return
		}
		var a, b int
		fmt.Sscan(m[1], &a)
		fmt.Sscan(m[3], &b)
		answer := map[string]int{"+": a + b, "×": a * b, "/": a / b, "−": a - b}[m[2]]
		if wrong {
			answer++
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(field, tok string) {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{%q:%q}}]}\n\n", field, tok)
			w.(http.Flusher).Flush()
		}
		for _, tok := range []string{"Let", " me", " add."} {
			send("reasoning_content", tok)
		}
		for _, tok := range []string{"The answer is ", fmt.Sprint(answer), "."} {
			send("content", tok)
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":6,\"completion_tokens_details\":{\"reasoning_tokens\":3}}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

const jobID = "0123456789abcdef0123456789abcdef"

// env is a job's environment: the launcher's variables, the item (its
// question and answer) and the gateway.
func env(gatewayURL string, extra ...string) func(string) string {
	m := map[string]string{
		"EVALSCHED_JOB_ID": jobID, "EVALSCHED_BATCH": "acme/search/b1", "EVALSCHED_MODEL": "gpt-5.5",
		"EVALSCHED_ATTEMPT": "1", "GATEWAY_URL": gatewayURL,
		"EVAL_PROMPT": "What is 9 × 8? Reply with the number only.", "EVAL_ANSWER": "72",
		"GATEWAY_MAX_WAIT": "1ms", // no retry waits: a failing provider ends the call at once
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) string { return m[k] }
}

// lastLine decodes the result line, which must be the last of the output,
// and returns it raw too.
func lastLine(t *testing.T, out *bytes.Buffer) (sandboxkit.LogLine, string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	raw := lines[len(lines)-1]
	var l sandboxkit.LogLine
	if err := json.Unmarshal([]byte(raw), &l); err != nil || l.Version != 1 {
		t.Fatalf("the last line %q is not a result line (%v)", raw, err)
	}
	return l, raw
}

// The example end to end: the grader reads the job's item, starts the
// agent (the test binary as "sandbox agent"), which asks a real SSE server
// through the kit; the grader grades the agent's answer and reports. A
// wrong answer is reported exactly as a right one, with exit 0; a job
// without a verdict carries no score.
func TestSandbox(t *testing.T) {
	cases := []struct {
		name        string
		wrong       bool
		status      int
		env         []string
		agent       string
		wantCode    int
		wantOutcome sandboxkit.Outcome
		wantScore   string // the line's "score" field, "" when absent
		wantError   string
	}{
		{name: "the right answer", wantCode: 0, wantOutcome: sandboxkit.Pass, wantScore: `"score":1`},
		{name: "a wrong answer: judged, so exit 0", wrong: true, wantCode: 0, wantOutcome: sandboxkit.Fail, wantScore: `"score":0`},
		{name: "another item", env: []string{"EVAL_PROMPT", "What is 1000 − 1?", "EVAL_ANSWER", "999"}, wantCode: 0, wantOutcome: sandboxkit.Pass, wantScore: `"score":1`},
		{name: "the provider fails", status: 503, wantCode: 75, wantError: "HTTP 503"},
		{name: "the gateway rejects the request", status: 400, wantCode: 1, wantError: "HTTP 400"},
		{name: "the agent crashes", agent: "crash", wantCode: 1, wantError: "agent: exit status 3"},
		{name: "no item", env: []string{"EVAL_ANSWER", ""}, wantCode: 1, wantError: "EVAL_ANSWER: required"},
		{name: "a bad setting", env: []string{"GATEWAY_RPM", "many"}, wantCode: 1, wantError: `GATEWAY_RPM: "many"`},
		{name: "no job", env: []string{"EVALSCHED_JOB_ID", ""}, wantCode: 1, wantError: "EVALSCHED_JOB_ID: required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := gateway(t, c.wrong, c.status)
			d := deps{agent: testAgent(agentArg)}
			if c.agent != "" {
				d.agent = testAgent(c.agent)
			}
			var out bytes.Buffer
			code := run(context.Background(), env(srv.URL, c.env...), &out, d)
			if code != c.wantCode {
				t.Errorf("exit code %d, want %d\n%s", code, c.wantCode, out.String())
			}
			l, raw := lastLine(t, &out)
			if l.Outcome != c.wantOutcome || l.ExitCode != code || !strings.Contains(l.Error, c.wantError) {
				t.Errorf("result line outcome %q exit %d error %q; want %q, %d, containing %q", l.Outcome, l.ExitCode, l.Error, c.wantOutcome, code, c.wantError)
			}
			if score := regexp.MustCompile(`"score":[^,}]*`).FindString(raw); score != c.wantScore {
				t.Errorf("result line's score %q, want %q: %s", score, c.wantScore, raw)
			}
			if c.wantOutcome != sandboxkit.NoVerdict && (l.Latency.TTFT.Count != 1 || l.Calls.Succeeded != 1) {
				t.Errorf("latency %+v calls %+v, want the agent's one call", l.Latency.TTFT, l.Calls)
			}
		})
	}
}

// The agent gets the question and the gateway's settings, nothing else:
// not the expected answer, the result queue or token, nor the task role's
// credentials.
func TestAgentSeesOnlyTheGatewaySettings(t *testing.T) {
	getenv := env("http://127.0.0.1:9",
		"GATEWAY_API_KEY", "sk-gw", "EVALSCHED_RESULT_QUEUE_URL", "http://q", "EVALSCHED_RESULT_TOKEN", "tok-secret",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/guid", "AWS_ACCESS_KEY_ID", "AKIA")
	r, err := runAgent(context.Background(), deps{agent: testAgent("printenv")}, getenv,
		agentRequest{Model: "gpt-5.5", Prompt: getenv("EVAL_PROMPT")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	seen := r.Answer
	for _, want := range []string{"GATEWAY_URL=http://127.0.0.1:9", "GATEWAY_API_KEY=sk-gw", "GATEWAY_MAX_WAIT=1ms", "What is 9 × 8?"} {
		if !strings.Contains(seen, want) {
			t.Errorf("the agent did not get %q:\n%s", want, seen)
		}
	}
	for _, secret := range []string{"72", "tok-secret", "http://q", "/v2/credentials", "AKIA", "EVALSCHED_JOB_ID"} {
		if strings.Contains(seen, secret) {
			t.Errorf("the agent saw %q:\n%s", secret, seen)
		}
	}
}

// A grader running as root starts the agent as nobody (65534), so the
// agent cannot read what only root may; as another user it cannot change
// users, and the agent runs as that user (the non-dumpable grader still
// hides its environment).
func TestAgentRunsAsNobody(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: only a grader running as root can start the agent as another user")
	}
	// A copy of the test binary nobody can run: the build's is in a 0700 directory.
	dir, err := os.MkdirTemp("", "sandbox-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := dir + "/sandbox"
	if err := os.WriteFile(exe, bin, 0o755); err != nil || os.Chmod(dir, 0o755) != nil {
		t.Fatal(err)
	}
	agent := func(ctx context.Context) (*exec.Cmd, error) { return exec.CommandContext(ctx, exe, "printenv"), nil }
	r, err := runAgent(context.Background(), deps{agent: agent}, env("http://127.0.0.1:9"), agentRequest{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Answer, "UID=65534\n") {
		t.Errorf("the agent ran as %q, want UID=65534", strings.SplitN(r.Answer, "\n", 2)[0])
	}
}

// The verdict reaches a results queue (fauxqs) as the scheduler's result
// message, and the log line still ends the output.
func TestSandboxSendsTheVerdict(t *testing.T) {
	ctx := context.Background()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(localservers.SQS(t)),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("results")})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := gateway(t, false, 0)
	var out bytes.Buffer
	const token = "tok-of-this-attempt-0123456789ab" // 32 base64url characters, as the launcher sets
	code := run(ctx, env(srv.URL, "EVALSCHED_RESULT_QUEUE_URL", aws.ToString(q.QueueUrl), "EVALSCHED_RESULT_TOKEN", token), &out,
		deps{sqs: func(context.Context) (sandboxkit.SQSSender, error) { return client, nil }, agent: testAgent(agentArg)})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	if l, _ := lastLine(t, &out); l.Outcome != sandboxkit.Pass || len(l.ReportErrors) != 0 {
		t.Errorf("result line %+v, want pass with no report errors", l)
	}
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("received %v, %v; want one message", got, err)
	}
	want := `{"version":1,"job_id":"` + jobID + `","attempt":1,"outcome":"pass","score":1,"result_token":"` + token + `"}`
	if body := aws.ToString(got.Messages[0].Body); body != want {
		t.Errorf("message %s, want %s", body, want)
	}
}
