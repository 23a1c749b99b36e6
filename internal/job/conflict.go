package job

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/evalsched/evalsched/internal/sampling"
)

// ErrConflict is the cause of every *ConflictError: a message disagrees
// with what its batch already holds. It is the message's fault, so the
// intake sends it to the dead-letter queue with the reasons; nothing of it
// is stored and the stored jobs stay as they were.
var ErrConflict = errors.New("conflicts with the stored batch")

// ConflictError lists how a message disagrees with its stored batch, each
// reason "field: rule" with the message's field named as the contract
// names it (docs/batch-format.md): tier, task_definition, timeout_seconds,
// max_attempts, part, parts, sampling (sampling.moe, sampling.confidence,
// sampling.min_per_stratum), jobs[i].model, jobs[i].env, jobs[i].stratum.
type ConflictError struct {
	Batch   string   // account/project/batch
	Reasons []string // at most maxReasons, the last then saying how many more
}

func (e *ConflictError) Error() string {
	return "batch " + e.Batch + " conflicts with what is stored: " + e.Reason()
}

// Reason joins the reasons as the dead-letter queue's reason attribute
// takes them: "field: rule; field: rule".
func (e *ConflictError) Reason() string { return strings.Join(e.Reasons, "; ") }

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// maxReasons bounds a ConflictError's reasons: a resubmission that changed
// the env of 20,000 jobs is told so by ten and a count.
const maxReasons = 10

// Conflicts gathers the reasons a message disagrees with its batch.
type Conflicts struct {
	reasons []string
	more    int
}

func (c *Conflicts) add(format string, a ...any) {
	if len(c.reasons) < maxReasons-1 {
		c.reasons = append(c.reasons, fmt.Sprintf(format, a...))
		return
	}
	c.more++
}

// Terms adds the ways b disagrees with the terms its batch was stored
// with; sum is the digest stored for b's part ("" if none was).
func (c *Conflicts) Terms(stored Terms, sum string, b BatchSpec) {
	t := b.Terms()
	if t.Tier != stored.Tier {
		c.add("tier: %s, but the batch was stored with %s", tierText(t.Tier), tierText(stored.Tier))
	}
	if t.TaskDefinition != stored.TaskDefinition {
		c.add("task_definition: %q, but the batch was stored with %q", t.TaskDefinition, stored.TaskDefinition)
	}
	if t.TimeoutSeconds != stored.TimeoutSeconds {
		c.add("timeout_seconds: %d, but the batch was stored with %d (0: none)", t.TimeoutSeconds, stored.TimeoutSeconds)
	}
	if t.MaxAttempts != stored.MaxAttempts {
		c.add("max_attempts: %d, but the batch was stored with %d", t.MaxAttempts, stored.MaxAttempts)
	}
	c.sampling(t.Sampling, stored.Sampling)
	switch {
	case t.Parts == stored.Parts:
		if sum != "" && sum != b.PartSum() {
			c.add("part: part %d of this batch was stored with other jobs; a part sent again must be the same", b.Part)
		}
	case stored.Parts == 0:
		c.add("parts: %d, but the batch was stored from messages without part and parts", t.Parts)
	case t.Parts == 0:
		c.add("parts: missing, but the batch was stored in %d parts; a message without part and parts cannot join it", stored.Parts)
	default:
		c.add("parts: %d, but the batch was stored in %d parts", t.Parts, stored.Parts)
	}
}

// sampling adds how a message's sampling disagrees with its batch's: a
// part cannot turn a full batch into a sampled one, nor the reverse, nor
// change the stop rule the first part set (the strata's counts would be
// judged by two rules).
func (c *Conflicts) sampling(got, stored sampling.Params) {
	none := sampling.Params{}
	switch {
	case got == stored:
	case stored == none:
		c.add("sampling: %s, but the batch was stored without sampling", samplingText(got))
	case got == none:
		c.add("sampling: missing, but the batch was stored with %s", samplingText(stored))
	default:
		if got.MOE != stored.MOE {
			c.add("sampling.moe: %v, but the batch was stored with %v", got.MOE, stored.MOE)
		}
		if got.Confidence != stored.Confidence {
			c.add("sampling.confidence: %v, but the batch was stored with %v", got.Confidence, stored.Confidence)
		}
		if got.MinPerStratum != stored.MinPerStratum {
			c.add("sampling.min_per_stratum: %d, but the batch was stored with %d", got.MinPerStratum, stored.MinPerStratum)
		}
		if got.Window != stored.Window {
			c.add("sampling.window: %d, but the batch was stored with %d", got.Window, stored.Window)
		}
	}
}

// Job adds how job i of b disagrees with the stored job of its key, which
// runs model with env in stratum ("" outside a sampled batch). A job
// counts in one stratum's size, whatever part repeats it: another stratum
// would weigh it twice, so it is a conflict too.
func (c *Conflicts) Job(b BatchSpec, i int, model string, env map[string]string, stratum string) {
	j := b.Jobs[i]
	if m := cmp.Or(j.Model, b.Model); m != model {
		c.add("jobs[%d].model: %q, but the stored job %q runs %q", i, m, j.Key, model)
	}
	if j.Stratum != stratum {
		c.add("jobs[%d].stratum: %q, but the stored job %q is in stratum %q", i, j.Stratum, j.Key, stratum)
	}
	if !maps.Equal(j.Env, env) {
		all := map[string]bool{}
		for k := range j.Env {
			all[k] = true
		}
		for k := range env {
			all[k] = true
		}
		var names []string
		for _, k := range slices.Sorted(maps.Keys(all)) {
			v, ok := j.Env[k]
			w, had := env[k]
			if v != w || ok != had {
				names = append(names, k)
			}
		}
		shown := names[:min(len(names), 3)]
		more := ""
		if len(names) > len(shown) {
			more = " and " + strconv.Itoa(len(names)-len(shown)) + " more"
		}
		c.add("jobs[%d].env: differs from the stored job %q in %s%s", i, j.Key, strings.Join(shown, ", "), more)
	}
}

// Err returns the conflict of the batch's message, nil when it agrees.
func (c *Conflicts) Err(b BatchSpec) error {
	if len(c.reasons) == 0 {
		return nil
	}
	reasons := slices.Clone(c.reasons)
	if c.more > 0 {
		reasons = append(reasons, fmt.Sprintf("and %d more", c.more))
	}
	return &ConflictError{Batch: b.Account + "/" + b.Project + "/" + b.Batch, Reasons: reasons}
}

func samplingText(p sampling.Params) string {
	return fmt.Sprintf("moe %v, confidence %v, min_per_stratum %d", p.MOE, p.Confidence, p.MinPerStratum)
}

func tierText(t int) string {
	if t < 0 {
		return "none (the default tier)"
	}
	return strconv.Itoa(t)
}
