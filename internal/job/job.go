package job

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/evalsched/evalsched/internal/sampling"
)

// State is a job's place in its lifecycle:
// WAITING → CLAIMED → LAUNCHED → RUNNING → SUCCEEDED | FAILED, with
// CANCELLED (an operator) and SKIPPED (a sampled batch's stop) as the other
// ends, and a retry back to WAITING at the next attempt.
type State string

// The job states.
const (
	Waiting   State = "WAITING"
	Claimed   State = "CLAIMED"
	Launched  State = "LAUNCHED"
	Running   State = "RUNNING"
	Succeeded State = "SUCCEEDED"
	Failed    State = "FAILED"
	Cancelled State = "CANCELLED"
	// Skipped is the end of a sampled batch's job that never ran: the
	// batch's stop rule held first (the job's reason says with what
	// estimate).
	Skipped State = "SKIPPED"
)

// Starting reports whether the job holds a slot of its model without a
// running task yet (claimed or launched).
func (s State) Starting() bool { return s == Claimed || s == Launched }

// HoldsSlot reports whether the job holds a slot of its model: claimed,
// launched or running.
func (s State) HoldsSlot() bool { return s.Starting() || s == Running }

// Ended reports whether the state is an end: no event moves the job again.
func (s State) Ended() bool {
	switch s {
	case Succeeded, Failed, Cancelled, Skipped:
		return true
	}
	return false
}

// OperatorCancelReason is the reason a job an operator cancelled ends with
// (evalsched cancel; a stopped task whose STOPPED event carries no reason
// of its own).
const OperatorCancelReason = "cancelled by an operator"

// DefaultMaxAttempts is a batch's max attempts when it gives none.
const DefaultMaxAttempts = 3

// MaxAttemptNumber is the highest attempt a job runs under: a batch's
// max_attempts is at most it, and results messages (resultmsg.MaxAttempts)
// and the sandbox kit accept attempts up to it. A yield raises a job's max
// attempts by one but never past it, so a job yielded near it spends an
// attempt after all, and one at it is not yielded (scheduler.YieldPick).
const MaxAttemptNumber = 10

// Exit is how a task stopped.
type Exit struct {
	Code           int
	ProviderError  bool // the job failed on provider errors (429/5xx): the breaker counts it
	Infrastructure bool // the task never ran the job to an end (capacity, spot, image pull)
	// Cancelled: an operator stopped the task (evalsched cancel
	// --stop-running): the job ends CANCELLED, and neither its exit nor
	// the breaker counts it — the provider did nothing wrong.
	Cancelled bool
	// Yielded: the scheduler stopped the task before its job could run,
	// or just as it began (its provider has too many of the model's jobs
	// now: taskevent.YieldReason). The job did nothing wrong and the
	// provider was not asked, so the job waits again at its next attempt
	// (the attempt number names the task: a relaunch needs a new one)
	// and the attempt is not spent: its max attempts rise by one, so a
	// job yielded any number of times still has all its MaxAttempts for
	// real failures. Neither the exit nor the breaker counts it.
	Yielded bool
	Reason  string
}

// BatchSpec is one batch as the intake function hands it over.
type BatchSpec struct {
	Account, Project, Batch string
	Model                   string // jobs without a model of their own run this one
	Tier                    int    // < 0: none given
	MaxAttempts             int    // 0: DefaultMaxAttempts
	TaskDefinition          string
	TimeoutSeconds          int
	// Part of Parts: a large batch arrives over several messages; the batch
	// records which parts arrived (0, 0: a batch of one message).
	Part, Parts int
	Jobs        []JobSpec
	Sampling    *sampling.Params // nil: every job runs, oldest first
}

// JobSpec is one job of a batch.
type JobSpec struct {
	Key   string
	Model string // "": the batch's model
	Env   map[string]string
	// Stratum: the job's stratum in a sampled batch.
	Stratum string
}

// Terms are what every message of a batch must agree on. The first message
// stored sets them; a later one that differs would change how jobs already
// waiting or running are run, so it is refused whole.
type Terms struct {
	Tier           int // < 0: none given (the default tier, resolved every pass)
	TaskDefinition string
	TimeoutSeconds int
	MaxAttempts    int
	Parts          int             // 0: a batch of messages without parts
	Sampling       sampling.Params // zero: not sampled
}

// Terms returns the batch's terms as a message gives them, with the store's
// defaults applied (MaxAttempts 3, any negative tier -1).
func (b BatchSpec) Terms() Terms {
	return Terms{
		Tier: max(b.Tier, -1), TaskDefinition: b.TaskDefinition, TimeoutSeconds: b.TimeoutSeconds,
		MaxAttempts: cmp.Or(b.MaxAttempts, DefaultMaxAttempts), Parts: b.Parts, Sampling: b.sampling(),
	}
}

// sampling is the batch's sampling, zero when it is not sampled.
func (b BatchSpec) sampling() sampling.Params {
	if b.Sampling == nil {
		return sampling.Params{}
	}
	return *b.Sampling
}

// PartSum is a digest of a part's jobs (keys, models, envs, in order): a
// part sent again must be the same part. 16 bytes of SHA-256, hex.
func (b BatchSpec) PartSum() string {
	h := sha256.New()
	for _, j := range b.Jobs {
		fmt.Fprintf(h, "%q %q", j.Key, cmp.Or(j.Model, b.Model))
		for _, k := range slices.Sorted(maps.Keys(j.Env)) {
			fmt.Fprintf(h, " %q=%q", k, j.Env[k])
		}
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
