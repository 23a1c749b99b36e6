package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/evalsched/evalsched/internal/localaws"
	"github.com/evalsched/evalsched/sandboxkit"
)

// gateway is a fake LLM gateway on 127.0.0.1 that streams its answer to each
// arithmetic question token by token, in small flushed writes; wrong makes it
// answer wrong, status makes it fail every call with that status.
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
		var a, b int
		fmt.Sscan(m[1], &a)
		fmt.Sscan(m[3], &b)
		answer := map[string]int{"+": a + b, "×": a * b, "/": a / b, "−": a - b}[m[2]]
		if wrong {
			answer++
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, tok := range []string{"The answer is ", fmt.Sprint(answer), "."} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", tok)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

const jobID = "0123456789abcdef0123456789abcdef"

func env(gatewayURL string, extra ...string) func(string) string {
	m := map[string]string{
		"EVALSCHED_JOB_ID": jobID, "EVALSCHED_BATCH": "acme/search/b1", "EVALSCHED_MODEL": "gpt-5.5",
		"EVALSCHED_ATTEMPT": "1", "GATEWAY_URL": gatewayURL,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) string { return m[k] }
}

// noWait is a clock whose waits return at once, so a test of the retries
// does not sleep through the backoff.
type noWait struct{}

func (noWait) Now() time.Time                                   { return time.Now() }
func (noWait) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// lastLine decodes the result line, which must be the last of the output.
func lastLine(t *testing.T, out *bytes.Buffer) sandboxkit.LogLine {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var l sandboxkit.LogLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &l); err != nil || l.Version != 1 {
		t.Fatalf("the last line %q is not a result line (%v)", lines[len(lines)-1], err)
	}
	return l
}

func TestSandbox(t *testing.T) {
	cases := []struct {
		name        string
		wrong       bool
		status      int
		env         []string
		wantCode    int
		wantOutcome sandboxkit.Outcome
		wantError   string
	}{
		{name: "every answer right", wantCode: 0, wantOutcome: sandboxkit.Pass},
		{name: "every answer wrong: judged, so exit 0", wrong: true, wantCode: 0, wantOutcome: sandboxkit.Fail},
		{name: "the provider fails", status: 503, wantCode: 75, wantError: "breaker open"}, // five 503s in a row trip it
		{name: "the gateway rejects the request", status: 400, wantCode: 1, wantError: "HTTP 400"},
		{name: "a bad setting", env: []string{"EVAL_CONCURRENCY", "many"}, wantCode: 1, wantError: `EVAL_CONCURRENCY: "many"`},
		{name: "no job", env: []string{"EVALSCHED_JOB_ID", ""}, wantCode: 1, wantError: "EVALSCHED_JOB_ID: required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := gateway(t, c.wrong, c.status)
			var out bytes.Buffer
			code := run(context.Background(), env(srv.URL, c.env...), &out, deps{clock: noWait{}})
			if code != c.wantCode {
				t.Errorf("exit code %d, want %d\n%s", code, c.wantCode, out.String())
			}
			l := lastLine(t, &out)
			if l.Outcome != c.wantOutcome || l.ExitCode != code || !strings.Contains(l.Error, c.wantError) {
				t.Errorf("result line outcome %q exit %d error %q; want %q, %d, containing %q", l.Outcome, l.ExitCode, l.Error, c.wantOutcome, code, c.wantError)
			}
			if c.wantOutcome != sandboxkit.NoVerdict && l.Latency.TTFT.Count != int64(len(questions)) {
				t.Errorf("TTFT histogram holds %d calls, want %d", l.Latency.TTFT.Count, len(questions))
			}
		})
	}
}

// The verdict reaches a results queue (fauxqs) as the scheduler's result
// message, and the log line still ends the output.
func TestSandboxSendsTheVerdict(t *testing.T) {
	ctx := context.Background()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(localaws.SQS(t)),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("results")})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := gateway(t, false, 0)
	var out bytes.Buffer
	code := run(ctx, env(srv.URL, "EVALSCHED_RESULT_QUEUE_URL", aws.ToString(q.QueueUrl)), &out,
		deps{sqs: func(context.Context) (sandboxkit.SQSSender, error) { return client, nil }})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	if l := lastLine(t, &out); l.Outcome != sandboxkit.Pass || len(l.ReportErrors) != 0 {
		t.Errorf("result line %+v, want pass with no report errors", l)
	}
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("received %v, %v; want one message", got, err)
	}
	want := `{"version":1,"job_id":"` + jobID + `","attempt":1,"outcome":"pass","score":1}`
	if body := aws.ToString(got.Messages[0].Body); body != want {
		t.Errorf("message %s, want %s", body, want)
	}
}
