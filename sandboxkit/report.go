package sandboxkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Outcome is the eval's verdict on the model's answers.
type Outcome string

const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	// NoVerdict: the job could not judge (a provider failure, its own error);
	// the exit code says why, and no result message is sent.
	NoVerdict Outcome = ""
)

// Result is what a job reports at its end.
type Result struct {
	Job      Job
	Outcome  Outcome
	Score    *float64 // optional, e.g. the share of questions answered right
	ExitCode int      // ExitCode(err) of the job's error
	Err      error    // the job's error; nil on success
	Latency  LatencySummary
	Stats    Stats

	reportErrs []string // reporters that failed before the current one
}

// NewResult is the result of a job that ended with err (nil: it judged the
// answers and outcome is its verdict). A job that ended with an error has no
// verdict and no score: a score of 0 would read as a judged failure.
func NewResult(job Job, outcome Outcome, score *float64, err error, c *Client) Result {
	r := Result{Job: job, Outcome: outcome, Score: score, ExitCode: ExitCode(err), Err: err}
	if err != nil || outcome == NoVerdict {
		r.Outcome, r.Score = NoVerdict, nil
	}
	if c != nil {
		r.Latency, r.Stats = c.Latency(), c.Stats()
	}
	return r
}

// Reporter sends a job's result somewhere the scheduler or its operator
// reads it.
type Reporter interface {
	Report(ctx context.Context, r Result) error
}

// Finish hands r to each reporter in order and returns the exit code the
// sandbox should end with. A reporter's failure does not change the exit code
// (the job's work is done; a failed send is not the model's fault nor the
// job's): it is passed to the later reporters, so put LogLineReporter last
// and the last log line says what was lost. The errors are returned joined.
func Finish(ctx context.Context, r Result, reporters ...Reporter) (int, error) {
	var errs []error
	for _, rep := range reporters {
		if err := rep.Report(ctx, r); err != nil {
			errs = append(errs, err)
			r.reportErrs = append(r.reportErrs, err.Error())
		}
	}
	return r.ExitCode, errors.Join(errs...)
}

// LogLine is the JSON object LogLineReporter writes, one line:
//
//	{"evalsched_result":1,"job_id":"…","attempt":1,"batch":"acme/search/b1","model":"gpt-5.5",
//	 "outcome":"pass","score":0.83,"exit_code":0,"error":"",
//	 "latency":{"ttft":{"count":40,"p50_ms":…,"p90_ms":…,"p99_ms":…,"max_ms":…,"mean_ms":…},"time_to_answer":{…},"tpot":{…}},
//	 "calls":{"calls":40,"succeeded":40,"requests":43,"overloaded":3,"breaker_refusals":0},
//	 "report_errors":["send result: …"]}
//
// "evalsched_result" (the shape's version) marks the line for a CloudWatch
// Logs subscription filter or Logs Insights: { $.evalsched_result = 1 }.
// "outcome" is "" when the job could not judge; "score" and "report_errors"
// are left out when empty.
type LogLine struct {
	Version      int            `json:"evalsched_result"`
	JobID        string         `json:"job_id"`
	Attempt      int            `json:"attempt"`
	Batch        string         `json:"batch"`
	Model        string         `json:"model"`
	Outcome      Outcome        `json:"outcome"`
	Score        *float64       `json:"score,omitempty"`
	ExitCode     int            `json:"exit_code"`
	Error        string         `json:"error"`
	Latency      LatencySummary `json:"latency"`
	Calls        Stats          `json:"calls"`
	ReportErrors []string       `json:"report_errors,omitempty"`
}

// LogLineReporter writes the result as one JSON line (LogLine) to W,
// normally stdout, which the awslogs driver sends to CloudWatch Logs.
type LogLineReporter struct{ W io.Writer }

func (l LogLineReporter) Report(_ context.Context, r Result) error {
	line := LogLine{
		Version: 1, JobID: r.Job.ID, Attempt: r.Job.Attempt, Model: r.Job.Model,
		Outcome: r.Outcome, Score: finite(r.Score), ExitCode: r.ExitCode,
		Latency: r.Latency, Calls: r.Stats, ReportErrors: r.reportErrs,
	}
	if r.Job.Account != "" {
		line.Batch = r.Job.Account + "/" + r.Job.Project + "/" + r.Job.Batch
	}
	if r.Err != nil {
		line.Error = r.Err.Error()
	}
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encode the result line: %w", err)
	}
	if _, err := l.W.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write the result line: %w", err)
	}
	return nil
}

// finite drops a NaN or infinite score, which JSON cannot carry.
func finite(s *float64) *float64 {
	if s == nil || math.IsNaN(*s) || math.IsInf(*s, 0) {
		return nil
	}
	return s
}

// ResultMessage is version 1 of the result message the scheduler's results
// queue takes (internal/resultmsg on the scheduler's side; unknown fields are
// rejected there, so the latency summary stays in the log line):
//
//	{"version":1,"job_id":"<32 lowercase hex>","attempt":2,"outcome":"pass","score":0.83}
type ResultMessage struct {
	Version int      `json:"version"`
	JobID   string   `json:"job_id"`
	Attempt int      `json:"attempt"`
	Outcome Outcome  `json:"outcome"`
	Score   *float64 `json:"score,omitempty"`
}

var jobIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// NewResultMessage checks what the results queue's consumer would reject,
// so a sandbox learns it from the error here rather than from a dead-letter
// queue it cannot read.
func NewResultMessage(r Result) (ResultMessage, error) {
	var problems []string
	if !jobIDPattern.MatchString(r.Job.ID) {
		problems = append(problems, fmt.Sprintf("job_id: %q must be 32 lowercase hex characters (%s)", r.Job.ID, EnvJobID))
	}
	if r.Job.Attempt < 1 || r.Job.Attempt > 10 {
		problems = append(problems, fmt.Sprintf("attempt: %d is outside 1..10", r.Job.Attempt))
	}
	if r.Outcome != Pass && r.Outcome != Fail {
		problems = append(problems, fmt.Sprintf("outcome: %q must be %q or %q", r.Outcome, Pass, Fail))
	}
	if r.Score != nil && finite(r.Score) == nil {
		problems = append(problems, "score: must be a finite number")
	}
	if len(problems) > 0 {
		return ResultMessage{}, fmt.Errorf("result message: %s", strings.Join(problems, "; "))
	}
	return ResultMessage{Version: 1, JobID: r.Job.ID, Attempt: r.Job.Attempt, Outcome: r.Outcome, Score: r.Score}, nil
}

// SQSSender is the one SQS call SQSReporter makes; *sqs.Client has it. The
// sandbox's task role may send to the results queue and nothing else.
type SQSSender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQSReporter sends the verdict to the scheduler's results queue. A result
// without a verdict (the job could not judge) sends nothing: the exit code
// carries it. A FIFO queue (".fifo") gets the job as the message group and
// job/attempt as the deduplication id, so a retried send is dropped.
type SQSReporter struct {
	Client   SQSSender
	QueueURL string
}

func (s SQSReporter) Report(ctx context.Context, r Result) error {
	if r.Outcome == NoVerdict {
		return nil
	}
	msg, err := NewResultMessage(r)
	if err != nil {
		return err
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode result message: %w", err)
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL), MessageBody: aws.String(string(body))}
	if strings.HasSuffix(s.QueueURL, ".fifo") {
		in.MessageGroupId = aws.String(msg.JobID)
		in.MessageDeduplicationId = aws.String(fmt.Sprintf("%s-%d", msg.JobID, msg.Attempt))
	}
	if _, err := s.Client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("send result of job %s attempt %d: %w", msg.JobID, msg.Attempt, err)
	}
	return nil
}
