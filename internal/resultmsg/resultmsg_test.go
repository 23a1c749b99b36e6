package resultmsg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/sandboxkit"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
)

const (
	id  = "0123456789abcdef0123456789abcdef"
	tok = "resultmsg-test-result-token-0001"
	// tk is tok as a field: `,"result_token":"…"`.
	tk = `,"result_token":"` + tok + `"`
)

func TestParse(t *testing.T) {
	score := 0.83
	for _, tc := range []struct {
		name string
		in   string
		want Message
		errs []string
	}{
		{"pass with score", `{"version":1,"job_id":"` + id + `","attempt":2,"outcome":"pass","score":0.83` + tk + `}`,
			Message{Version: 1, JobID: id, Attempt: 2, Pass: true, Score: &score, Token: tok}, nil},
		{"fail, null score", `{"version":1,"job_id":"` + id + `","attempt":1,"outcome":"fail","score":null` + tk + `}` + "\n",
			Message{Version: 1, JobID: id, Attempt: 1, Token: tok}, nil},
		{"not an object", `[1]`, Message{}, []string{"message: must be a JSON object"}},
		{"trailing", `{"version":1,"job_id":"` + id + `","attempt":1,"outcome":"fail"` + tk + `} {}`, Message{}, []string{"message: trailing data after the object"}},
		{"unknown and repeated", `{"version":1,"job_id":"` + id + `","attempt":1,"attempt":1,"outcome":"fail","pass":true` + tk + `}`, Message{},
			[]string{"attempt: repeated", `message: unknown field "pass"`}},
		{"bad fields", `{"version":2,"job_id":"ABC","attempt":1.0,"outcome":"ok","score":"high"` + tk + `}`, Message{}, []string{
			"version: 2 is not a supported version (only 1)",
			`job_id: "ABC" must be 32 lowercase hex characters`,
			"attempt: 1.0 must be an integer in 1..10",
			`outcome: "ok" must be "pass" or "fail"`,
			`score: "high" must be a number`,
		}},
		{"missing", `{"job_id":null}`, Message{}, []string{"version: required", "job_id: required", "attempt: required", "outcome: required", "result_token: required"}},
		{"attempt range", `{"version":1,"job_id":"` + id + `","attempt":11,"outcome":"pass"` + tk + `}`, Message{}, []string{"attempt: 11 must be an integer in 1..10"}},
		// A bad token is never quoted back: the reason goes to the dead-letter queue.
		{"token form", `{"version":1,"job_id":"` + id + `","attempt":1,"outcome":"pass","result_token":"a-secret-one-char-short-of-32ch"}`, Message{},
			[]string{"result_token: must be the 32 base64url characters of EVALSCHED_RESULT_TOKEN"}},
		{"token not a string", `{"version":1,"job_id":"` + id + `","attempt":1,"outcome":"pass","result_token":12345}`, Message{},
			[]string{"result_token: must be the 32 base64url characters of EVALSCHED_RESULT_TOKEN"}},
		{"token missing", `{"version":1,"job_id":"` + id + `","attempt":1,"outcome":"pass"}`, Message{}, []string{"result_token: required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			var msgs []string
			for _, e := range unjoin(err) {
				var pe *Error
				if !errors.As(e, &pe) {
					t.Errorf("error %v is not an *Error", e)
				}
				msgs = append(msgs, e.Error())
			}
			if strings.Join(msgs, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(tc.errs, "\n"))
			}
			if err == nil && !same(got, tc.want) {
				t.Errorf("Parse = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func same(a, b Message) bool {
	if (a.Score == nil) != (b.Score == nil) || a.Score != nil && *a.Score != *b.Score {
		return false
	}
	a.Score, b.Score = nil, nil
	return a == b
}

// sender keeps what SQSReporter sends.
type sender struct{ bodies []string }

func (s *sender) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.bodies = append(s.bodies, *in.MessageBody)
	return &sqs.SendMessageOutput{}, nil
}

// TestParsesTheKitsMessage: what the sandbox kit sends, this package
// reads, field for field.
func TestParsesTheKitsMessage(t *testing.T) {
	score := 0.5
	for _, outcome := range []sandboxkit.Outcome{sandboxkit.Pass, sandboxkit.Fail} {
		var s sender
		job := sandboxkit.Job{ID: id, Attempt: 3, Account: "acme", Project: "p", Batch: "b", Model: "m", ResultToken: tok}
		r := sandboxkit.NewResult(job, outcome, &score, nil, nil)
		if err := (sandboxkit.SQSReporter{Client: &s, QueueURL: "http://q"}).Report(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if len(s.bodies) != 1 {
			t.Fatalf("kit sent %d messages, want 1", len(s.bodies))
		}
		m, err := Parse([]byte(s.bodies[0]))
		if err != nil {
			t.Fatalf("Parse(%s): %v", s.bodies[0], err)
		}
		want := Message{Version: 1, JobID: id, Attempt: 3, Pass: outcome == sandboxkit.Pass, Score: &score, Token: tok}
		if !same(m, want) {
			t.Errorf("Parse(%s) = %+v, want %+v", s.bodies[0], m, want)
		}
		// And the other way: this package's form is the kit's.
		back, _ := json.Marshal(m)
		if !bytes.Equal(back, []byte(s.bodies[0])) {
			t.Errorf("Marshal = %s, the kit sent %s", back, s.bodies[0])
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"job_id":"` + id + `","attempt":2,"outcome":"pass","score":0.83` + tk + `}`))
	f.Add([]byte(`{"version":1,"job_id":"` + id + `","attempt":1,"outcome":"fail"` + tk + `}`))
	f.Add([]byte(`{"version":1,"version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			for _, e := range unjoin(err) {
				var pe *Error
				if !errors.As(e, &pe) || pe.Field == "" || pe.Rule == "" {
					t.Fatalf("error %q names no field and rule", e)
				}
			}
			return
		}
		if m.Version != 1 || !validJobID(m.JobID) || m.Attempt < 1 || m.Attempt > MaxAttempts || !resulttoken.Valid(m.Token.Reveal()) {
			t.Fatalf("accepted %+v", m)
		}
		// What Parse accepts it writes back to the same message.
		out, _ := json.Marshal(m)
		m2, err := Parse(out)
		if err != nil || !same(m, m2) {
			t.Fatalf("round trip of %s: %+v, %v", out, m2, err)
		}
	})
}

// The attempts a result may carry are the attempts a job may run under: a
// yield raises a job's max attempts, but never past job.MaxAttemptNumber.
func TestMaxAttemptsIsTheJobsLastAttemptNumber(t *testing.T) {
	if MaxAttempts != job.MaxAttemptNumber {
		t.Fatalf("resultmsg.MaxAttempts %d, job.MaxAttemptNumber %d: a job's last attempts could not report", MaxAttempts, job.MaxAttemptNumber)
	}
}
