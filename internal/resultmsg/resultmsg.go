package resultmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/evalsched/evalsched/internal/resulttoken"
)

// Version is the only version Parse reads.
const Version = 1

// MaxAttempts is the batch contract's bound on a job's attempts.
const MaxAttempts = 10

// maxBytes bounds a message: the fields fit in a few hundred bytes.
const maxBytes = 4096

// Message is one result as Parse accepted it.
type Message struct {
	Version int
	JobID   string
	Attempt int
	Pass    bool // outcome "pass"; "fail" is false
	Score   *float64
	// Token is the attempt's result token (EVALSCHED_RESULT_TOKEN), the
	// sender's credential: the store records the verdict only if it is
	// the one drawn when the attempt was claimed.
	Token resulttoken.Token
}

// Outcome is the message's outcome field: "pass" or "fail".
func (m Message) Outcome() string {
	if m.Pass {
		return "pass"
	}
	return "fail"
}

// MarshalJSON writes the message in its wire form (Parse of it gives m).
func (m Message) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Version int      `json:"version"`
		JobID   string   `json:"job_id"`
		Attempt int      `json:"attempt"`
		Outcome string   `json:"outcome"`
		Score   *float64 `json:"score,omitempty"`
		Token   string   `json:"result_token"`
	}{m.Version, m.JobID, m.Attempt, m.Outcome(), m.Score, m.Token.Reveal()})
}

// Error is a broken rule of the message: invalid, never worth a retry.
type Error struct {
	Field string // "message" for the whole
	Rule  string
}

func (e *Error) Error() string { return e.Field + ": " + e.Rule }

var fields = []string{"version", "job_id", "attempt", "outcome", "score", "result_token"}

// Parse reads one result message; an error is an *Error, or several
// joined, each naming the field and its rule.
func Parse(data []byte) (Message, error) {
	whole := func(format string, args ...any) error {
		return &Error{Field: "message", Rule: fmt.Sprintf(format, args...)}
	}
	if len(data) > maxBytes {
		return Message{}, whole("larger than %d bytes", maxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Message{}, whole("must be a JSON object")
	}
	var (
		m    Message
		errs []error
		seen = map[string]bool{}
	)
	fail := func(field, format string, args ...any) {
		errs = append(errs, &Error{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Message{}, whole("not JSON: %v", err)
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Message{}, whole("not JSON: %v", err)
		}
		switch {
		case !slices.Contains(fields, name):
			fail("message", "unknown field %q", name)
			continue
		case seen[name]:
			fail(name, "repeated")
			continue
		}
		seen[name] = true
		if string(raw) == "null" {
			seen[name] = false
			continue
		}
		switch name {
		case "version":
			n, ok := integer(raw)
			if !ok || n != Version {
				fail(name, "%s is not a supported version (only %d)", raw, Version)
			}
			m.Version = int(n)
		case "job_id":
			var s string
			if json.Unmarshal(raw, &s) != nil || !validJobID(s) {
				fail(name, "%s must be 32 lowercase hex characters", clip(raw))
			}
			m.JobID = s
		case "attempt":
			n, ok := integer(raw)
			if !ok || n < 1 || n > MaxAttempts {
				fail(name, "%s must be an integer in 1..%d", clip(raw), MaxAttempts)
			}
			m.Attempt = int(n)
		case "outcome":
			var s string
			_ = json.Unmarshal(raw, &s)
			switch s {
			case "pass":
				m.Pass = true
			case "fail":
			default:
				fail(name, `%s must be "pass" or "fail"`, clip(raw))
			}
		case "result_token":
			// Never quoted back: a reason goes to the dead-letter queue.
			var s string
			if json.Unmarshal(raw, &s) != nil || !resulttoken.Valid(s) {
				fail(name, "must be the %d base64url characters of EVALSCHED_RESULT_TOKEN", resulttoken.Len)
			}
			m.Token = resulttoken.Token(s)
		case "score":
			var f float64
			if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				fail(name, "%s must be a number", clip(raw))
			} else {
				m.Score = &f
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return Message{}, whole("not JSON: %v", err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return Message{}, whole("trailing data after the object")
	}
	for _, f := range []string{"version", "job_id", "attempt", "outcome", "result_token"} {
		if !seen[f] {
			fail(f, "required")
		}
	}
	if len(errs) > 0 {
		return Message{}, errors.Join(errs...)
	}
	return m, nil
}

// integer reads a JSON integer: 1.0, 1e0 and "1" are not.
func integer(raw json.RawMessage) (int64, bool) {
	if strings.ContainsAny(string(raw), `.eE"`) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// validJobID: job.JobID's form, 32 lowercase hex characters.
func validJobID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// clip quotes at most 40 bytes of a value for an error.
func clip(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}
