package sandboxkit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// The variables the launcher (internal/ecslauncher) sets on the sandbox
// container, beside the job's own env from its batch message; package
// sandboxenv defines them.
const (
	EnvJobID          = sandboxenv.JobID
	EnvBatch          = sandboxenv.Batch // account/project/batch
	EnvModel          = sandboxenv.Model
	EnvAttempt        = sandboxenv.Attempt // 1, 2, …: a job runs again after an infrastructure stop
	EnvSubmittedAt    = sandboxenv.SubmittedAt
	EnvResultToken    = sandboxenv.ResultToken    // the result message's credential: never print it
	EnvResultQueueURL = sandboxenv.ResultQueueURL // where SQSReporter sends; the task definition sets it
)

// Job is what the scheduler tells a sandbox about the job it runs.
type Job struct {
	ID          string
	Account     string
	Project     string
	Batch       string
	Model       string
	Attempt     int
	SubmittedAt time.Time // zero if the launcher did not set it
	// ResultToken is the attempt's result token (EVALSCHED_RESULT_TOKEN):
	// SQSReporter sends it with the verdict, and the scheduler records a
	// verdict only with it. Keep it from the code under evaluation and out
	// of logs; LogLineReporter never writes it.
	ResultToken string
}

// JobFromEnv reads the job from the EVALSCHED_* variables (pass os.Getenv).
// The values are data: never run one as a command. Every missing or malformed
// variable is named in the error. A harness that runs the code it grades
// should unset EVALSCHED_RESULT_TOKEN (os.Unsetenv) after this, before
// starting that code, so it is not inherited (SECURITY.md).
func JobFromEnv(getenv func(string) string) (Job, error) {
	var j Job
	var problems []string
	bad := func(name, format string, args ...any) {
		problems = append(problems, name+": "+fmt.Sprintf(format, args...))
	}
	if j.ID = getenv(EnvJobID); j.ID == "" {
		bad(EnvJobID, "required (the scheduler sets it)")
	}
	if j.Model = getenv(EnvModel); j.Model == "" {
		bad(EnvModel, "required (the scheduler sets it)")
	}
	if b := getenv(EnvBatch); b != "" {
		parts := strings.Split(b, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			bad(EnvBatch, "%q is not account/project/batch", b)
		} else {
			j.Account, j.Project, j.Batch = parts[0], parts[1], parts[2]
		}
	} else {
		bad(EnvBatch, "required (the scheduler sets it)")
	}
	if a := getenv(EnvAttempt); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			bad(EnvAttempt, "%q is not an integer ≥ 1", a)
		}
		j.Attempt = n
	} else {
		bad(EnvAttempt, "required (the scheduler sets it)")
	}
	// Not required here: a sandbox that sends no verdict needs no token;
	// NewResultMessage requires it.
	j.ResultToken = getenv(EnvResultToken)
	if s := getenv(EnvSubmittedAt); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad(EnvSubmittedAt, "%q is not an RFC 3339 time", s)
		}
		j.SubmittedAt = t
	}
	if len(problems) > 0 {
		return Job{}, fmt.Errorf("the job's environment: %s", strings.Join(problems, "; "))
	}
	return j, nil
}
