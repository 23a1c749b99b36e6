package batchmsg

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// The contract's limits (docs/batch-format.md, version 1).
const (
	Version          = 1       // the only version this package reads
	MaxMessageBytes  = 1 << 20 // SQS's limit on a message body: 1 MiB
	MaxNameLen       = 128     // account, project, batch, model, key
	MaxJobs          = 10_000  // per message
	MaxParts         = 10_000  // parts of one batch
	MaxAttempts      = job.MaxAttemptNumber
	MinTimeout       = 60     // seconds
	MaxTimeout       = 86_400 // seconds: one day
	MaxOverrideChars = 8_192  // ECS's limit on a task's container overrides
	maxFamilyLen     = 255    // ECS task definition family
)

// Config carries the deployment's settings the contract refers to. A zero
// Tiers or DefaultMaxAttempts takes its default; DefaultTier 0 is tier 0.
type Config struct {
	Tiers                 int    // tier must be 0..Tiers-1 (default 3)
	DefaultTier           int    // the tier of a batch that names none (2 in DefaultConfig)
	DefaultTaskDefinition string // used when a message names none
	DefaultMaxAttempts    int    // used when a message has no max_attempts (default 3)
	// EnvAllow, when not nil, is the deployment's env allowlist: a job's
	// env may hold only these names, or names with a prefix given as
	// "PREFIX_*" (EVALSCHED_ENV_ALLOW). The env policy's refusals
	// (DeniedEnv) apply either way.
	EnvAllow []string
}

// DefaultConfig returns the settings of a deployment that changed nothing.
func DefaultConfig() Config {
	return Config{Tiers: 3, DefaultTier: 2, DefaultMaxAttempts: 3}
}

func (c Config) withDefaults() Config {
	c.Tiers = cmp.Or(c.Tiers, 3)
	c.DefaultMaxAttempts = cmp.Or(c.DefaultMaxAttempts, 3)
	return c
}

// Validate reports the settings that break the contract's own rules; Parse
// refuses to judge messages against such a configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Tiers < 1 {
		errs = append(errs, fmt.Errorf("tiers: %d is less than 1", c.Tiers))
	} else if c.DefaultTier < 0 || c.DefaultTier >= c.Tiers {
		errs = append(errs, fmt.Errorf("default tier: %d is outside 0..%d", c.DefaultTier, c.Tiers-1))
	}
	if c.DefaultMaxAttempts < 1 || c.DefaultMaxAttempts > MaxAttempts {
		errs = append(errs, fmt.Errorf("default max attempts: %d is outside 1..%d", c.DefaultMaxAttempts, MaxAttempts))
	}
	if c.DefaultTaskDefinition != "" && !validTaskDefinition(c.DefaultTaskDefinition) {
		errs = append(errs, fmt.Errorf("default task definition: %q %s", c.DefaultTaskDefinition, taskDefinitionRule))
	}
	if err := ValidateEnvAllow(c.EnvAllow); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Message is one batch message as Parse accepted it. TaskDefinition and
// MaxAttempts hold the Config's defaults when the message gave none, so the
// stored batch runs as judged even if the configuration changes later. Tier
// stays nil when absent: the scheduler resolves a batch's tier on every pass
// (pins, then the submitted tier, then the default).
//
// The json tags write the message back in the contract's form (Parse of
// json.Marshal(m) gives m again).
type Message struct {
	Version        int    `json:"version"`
	Account        string `json:"account"`
	Project        string `json:"project"`
	Batch          string `json:"batch"`
	Model          string `json:"model,omitempty"` // "": every job names its own
	Tier           *int   `json:"tier,omitempty"`
	TaskDefinition string `json:"task_definition,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"` // 0: none
	MaxAttempts    int    `json:"max_attempts,omitempty"`
	Part           int    `json:"part,omitempty"` // 0 with Parts 0: the batch is this one message
	Parts          int    `json:"parts,omitempty"`
	Jobs           []Job  `json:"jobs"`
	// Sampling, when present, makes the batch sampled: its jobs run in a
	// keyed random order per stratum and the rest are skipped once the pass
	// rate is known to ±moe (internal/sampling).
	Sampling *sampling.Params `json:"sampling,omitempty"`
}

// Job is one job of a message.
type Job struct {
	Key   string            `json:"key"`
	Model string            `json:"model,omitempty"` // "": the message's model
	Env   map[string]string `json:"env,omitempty"`   // nil when absent or empty
	// Stratum groups the jobs of a sampled batch (required there, an
	// error elsewhere).
	Stratum string `json:"stratum,omitempty"`
}

// ID returns the batch's identity, account/project/batch.
func (m Message) ID() string { return m.Account + "/" + m.Project + "/" + m.Batch }

// Spec returns the batch as the store takes it: Tier -1 when the message
// names none, MaxAttempts 3 when a hand-built Message has none, a sampled
// batch's jobs in sampling.Rank order.
func (m Message) Spec() job.BatchSpec {
	tier := -1
	if m.Tier != nil {
		tier = *m.Tier
	}
	jobs := make([]job.JobSpec, len(m.Jobs))
	for i, j := range m.Jobs {
		jobs[i] = job.JobSpec{Key: j.Key, Model: j.Model, Env: j.Env, Stratum: j.Stratum}
	}
	if m.Sampling != nil {
		// Both stores release a sampled batch's jobs by stratum in rank
		// order, whatever their positions; positions in rank order too
		// keep the queue's own order (a cancel's, a stop's walk) free of
		// the submitter's (often sorted by subject or difficulty).
		id := m.ID()
		slices.SortStableFunc(jobs, func(a, b job.JobSpec) int {
			return cmp.Compare(sampling.Rank(id, a.Key), sampling.Rank(id, b.Key))
		})
	}
	return job.BatchSpec{
		Account: m.Account, Project: m.Project, Batch: m.Batch, Model: m.Model,
		Tier: tier, MaxAttempts: cmp.Or(m.MaxAttempts, 3), TaskDefinition: m.TaskDefinition,
		TimeoutSeconds: m.TimeoutSeconds, Part: m.Part, Parts: m.Parts, Jobs: jobs, Sampling: m.Sampling,
	}
}

// summaryModels is how many models Summary names before "+N more".
const summaryModels = 5

// Summary describes the message in one line:
//
//	acme/search-evals/2026-11-29-sweep-17: 2 jobs, models gpt-5.5 (1), claude-opus-4.8 (1), tier 2, part 1 of 4
//	acme/evals/mmlu-1201: 2 jobs, model gpt-5.5 (2), default tier, sampled to ±0.015 at 99%
//
// Models are listed by job count, most first, ties in order of first
// appearance; a message without a tier says "default tier".
func (m Message) Summary() string {
	type count struct {
		model string
		n     int
	}
	var counts []count
	index := map[string]int{}
	for _, j := range m.Jobs {
		mdl := cmp.Or(j.Model, m.Model)
		i, ok := index[mdl]
		if !ok {
			i = len(counts)
			index[mdl] = i
			counts = append(counts, count{model: mdl})
		}
		counts[i].n++
	}
	// A stable sort keeps first appearance among equal counts.
	slices.SortStableFunc(counts, func(a, b count) int { return cmp.Compare(b.n, a.n) })

	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d job%s", m.ID(), len(m.Jobs), plural(len(m.Jobs)))
	for i, c := range counts {
		switch {
		case i == summaryModels:
			fmt.Fprintf(&b, ", +%d more", len(counts)-i)
		case i > summaryModels:
		case i == 0:
			fmt.Fprintf(&b, ", model%s %s (%d)", plural(len(counts)), c.model, c.n)
		default:
			fmt.Fprintf(&b, ", %s (%d)", c.model, c.n)
		}
	}
	if m.Tier != nil {
		fmt.Fprintf(&b, ", tier %d", *m.Tier)
	} else {
		b.WriteString(", default tier")
	}
	if m.Parts > 0 {
		fmt.Fprintf(&b, ", part %d of %d", m.Part, m.Parts)
	}
	if m.Sampling != nil {
		fmt.Fprintf(&b, ", sampled to ±%g at %g%%", m.Sampling.MOE, m.Sampling.Confidence*100)
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// jobIDLen is the length of job.JobID's ids.
const jobIDLen = 32

// attemptLen is the length of the longest EVALSCHED_ATTEMPT value, "10".
const attemptLen = 2

// submittedLen is the length of EVALSCHED_SUBMITTED_AT's value,
// "2026-11-29T12:00:00Z".
const submittedLen = 20

// OverrideSize returns the size, in characters, of the environment list the
// launcher sends for job j in RunTask's containerOverrides, written as JSON:
//
//	[{"name":"N1","value":"V1"},{"name":"N2","value":"V2"},…]
//
//	size = 2 + (n−1) + Σ (22 + esc(name) + esc(value))   over the n entries
//
// 2 for the brackets, n−1 commas, and per entry the 22 characters of
// {"name":"","value":""}. The entries are the job's env plus the six the
// launcher adds: EVALSCHED_JOB_ID (32 characters), EVALSCHED_BATCH
// (account/project/batch), EVALSCHED_MODEL (the job's model, else the
// message's), EVALSCHED_ATTEMPT (counted as "10", its longest),
// EVALSCHED_SUBMITTED_AT (RFC 3339 in UTC, 20 characters) and
// EVALSCHED_RESULT_TOKEN (resulttoken.Len characters).
//
// esc(s) is the length of s between the quotes as encoding/json writes it:
// one per byte of printable ASCII and of UTF-8 (bytes, not characters, so
// multi-byte text is over-counted); 2 for \" \\ \b \f \n \r \t; 6 for other
// control characters, for < > & U+2028 U+2029 (HTML-safe escaping) and for
// each invalid byte (\ufffd). Counting the longer escapes and bytes keeps the
// check on the safe side of the 8,192 characters ECS allows: a message the
// intake accepts is never refused by RunTask for its overrides. The rest of
// the override (container name, the JSON around the list) is the launcher's
// own and not counted here.
func OverrideSize(m Message, j Job) int {
	const entry = len(`{"name":"","value":""}`) // 22
	n := len(j.Env) + 6
	size := 2 + (n - 1) + n*entry
	for name, value := range j.Env {
		size += escLen(name) + escLen(value)
	}
	size += len(sandboxenv.JobID) + jobIDLen
	size += len(sandboxenv.Batch) + escLen(m.Account) + 1 + escLen(m.Project) + 1 + escLen(m.Batch)
	size += len(sandboxenv.Model) + escLen(cmp.Or(j.Model, m.Model))
	size += len(sandboxenv.Attempt) + attemptLen
	size += len(sandboxenv.SubmittedAt) + submittedLen
	size += len(sandboxenv.ResultToken) + resulttoken.Len
	return size
}

// escLen is the length of s inside a JSON string as encoding/json's Marshal
// writes it (with HTML escaping).
func escLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
