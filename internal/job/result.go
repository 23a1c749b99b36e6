package job

import (
	"errors"
	"time"

	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/sampling"
)

// ErrUnknownJob is returned for a job id the store has never seen.
var ErrUnknownJob = errors.New("unknown job")

// ErrWrongToken refuses a result that names the job's current attempt
// but not its result token: a sandbox speaking for a job not its own.
var ErrWrongToken = errors.New("result_token does not match the job's attempt")

// Result is a job's verdict as its sandbox reported it (internal/resultmsg).
type Result struct {
	Attempt int
	Pass    bool
	Score   *float64
	At      time.Time
	// Token is the sender's result token (RecordResult's credential). It is
	// never kept with the verdict: JobResult's is empty.
	Token resulttoken.Token
}

// SampledStratum is one stratum's counts and its own estimate.
type SampledStratum struct {
	sampling.Stratum
	Estimate sampling.Estimate
}

// SampledBatch is what status and why show of a sampled batch.
type SampledBatch struct {
	Batch    string // account/project/batch
	Params   sampling.Params
	Estimate sampling.Estimate
	Strata   []SampledStratum // by name
	Stopped  bool
	Reason   string // why the rest was skipped, when it was
}
