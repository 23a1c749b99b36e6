package sandboxkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/evalsched/evalsched/internal/localservers"
)

var testJob = Job{ID: "0123456789abcdef0123456789abcdef", Account: "acme", Project: "search", Batch: "b1", Model: "gpt-5.5", Attempt: 2,
	ResultToken: "sandboxkit-test-result-token-001"}

func TestLogLineReporter(t *testing.T) {
	score := 0.75
	l := NewLatency()
	l.Record(120_000_000, 120_000_000, 15_000_000) // 120 ms, 120 ms, 15 ms
	r := Result{Job: testJob, Outcome: Pass, Score: &score, Latency: l.Summary(), Stats: Stats{Calls: 1, Succeeded: 1, Requests: 2, Overloaded: 1}}
	var out bytes.Buffer
	out.WriteString("earlier output\n")
	code, err := Finish(context.Background(), r, failing{}, LogLineReporter{W: &out})
	if code != ExitSucceeded || err == nil {
		t.Fatalf("Finish = %d, %v; want 0 and the failing reporter's error", code, err)
	}
	if strings.Contains(out.String(), testJob.ResultToken) {
		t.Errorf("the log line shows the result token: %s", out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("the last line is not JSON: %v", err)
	}
	checks := map[string]any{
		"evalsched_result": 1.0, "job_id": testJob.ID, "attempt": 2.0, "batch": "acme/search/b1",
		"model": "gpt-5.5", "outcome": "pass", "score": 0.75, "exit_code": 0.0, "error": "",
	}
	for k, want := range checks {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	ttft := got["latency"].(map[string]any)["ttft"].(map[string]any)
	if ttft["count"] != 1.0 || ttft["p50_ms"].(float64) < 119.9 || ttft["p50_ms"].(float64) > 120.1 {
		t.Errorf("latency.ttft %v, want count 1 and p50 120 ms", ttft)
	}
	if got["calls"].(map[string]any)["overloaded"] != 1.0 {
		t.Errorf("calls %v, want overloaded 1", got["calls"])
	}
	if errs, _ := got["report_errors"].([]any); len(errs) != 1 || !strings.Contains(errs[0].(string), "queue unreachable") {
		t.Errorf("report_errors %v, want the failing reporter's error", got["report_errors"])
	}
}

func TestLogLineOfAFailedJob(t *testing.T) {
	var out bytes.Buffer
	zero := 0.0 // the score of the answers counted before the error: not a verdict
	r := NewResult(testJob, Pass, &zero, &ProviderError{Status: 503, Attempts: 5, Err: errors.New("HTTP 503")}, nil)
	code, err := Finish(context.Background(), r, LogLineReporter{W: &out})
	if code != ExitProviderFailed || err != nil {
		t.Fatalf("Finish = %d, %v; want %d, nil", code, err, ExitProviderFailed)
	}
	var got LogLine
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Outcome != NoVerdict || got.ExitCode != 75 || !strings.Contains(got.Error, "HTTP 503") {
		t.Errorf("got %+v; want no verdict, exit 75, the error", got)
	}
	if got.Score != nil || strings.Contains(out.String(), `"score"`) {
		t.Errorf("a result without a verdict logs a score: %s", out.String())
	}
}

type failing struct{}

func (failing) Report(context.Context, Result) error { return errors.New("queue unreachable") }

func TestNewResultMessageRejects(t *testing.T) {
	nan := 0.0
	nan = nan / nan
	bad := Result{Job: Job{ID: "ABC", Attempt: 11, ResultToken: "a-secret-cut-short"}, Outcome: "maybe", Score: &nan}
	_, err := NewResultMessage(bad)
	if err != nil && strings.Contains(err.Error(), bad.Job.ResultToken) {
		t.Errorf("error %v shows the token", err)
	}
	for _, want := range []string{"job_id:", "attempt: 11 is outside 1..10", `outcome: "maybe"`, "score: must be a finite number", "result_token: must be the 32 base64url characters the scheduler set in EVALSCHED_RESULT_TOKEN"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

// SQSReporter against fauxqs: the message on the queue is version 1 of the
// result message, exactly.
func TestSQSReporter(t *testing.T) {
	ctx := context.Background()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(localservers.SQS(t)),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	for _, name := range []string{"results", "results.fifo"} {
		t.Run(name, func(t *testing.T) {
			in := &sqs.CreateQueueInput{QueueName: aws.String(name)}
			if strings.HasSuffix(name, ".fifo") {
				in.Attributes = map[string]string{"FifoQueue": "true"}
			}
			q, err := client.CreateQueue(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			rep := SQSReporter{Client: client, QueueURL: aws.ToString(q.QueueUrl)}
			score := 0.5
			pass := Result{Job: testJob, Outcome: Fail, Score: &score}
			// A second send of the same attempt (a retried send) and a job
			// without a verdict, which sends nothing.
			for _, r := range []Result{pass, pass, NewResult(testJob, NoVerdict, nil, errors.New("boom"), nil)} {
				if err := rep.Report(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			want := `{"version":1,"job_id":"0123456789abcdef0123456789abcdef","attempt":2,"outcome":"fail","score":0.5,"result_token":"sandboxkit-test-result-token-001"}`
			wantN := 2 // a standard queue keeps both sends; the consumer ignores the duplicate
			if strings.HasSuffix(name, ".fifo") {
				wantN = 1 // the deduplication id drops the second
			}
			if len(out.Messages) != wantN {
				t.Fatalf("%d messages on the queue, want %d", len(out.Messages), wantN)
			}
			for _, m := range out.Messages {
				if got := aws.ToString(m.Body); got != want {
					t.Errorf("message %s, want %s", got, want)
				}
			}
		})
	}
}
