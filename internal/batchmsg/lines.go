package batchmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/evalsched/evalsched/internal/cliout"
)

// This file turns what a submitter has into checked messages ready to send
// (`evalsched submit`): a batch message as it is, or JSON Lines of jobs
// with the batch's fields given apart, split into parts. Every part is
// checked with Parse, as the intake will, and every broken rule is named in
// the file's terms: "FILE:LINE: field: rule".

// Fields are a message's fields but for part, parts and jobs: the batch's
// fields of a file of JSON Lines. Their rules are Parse's to check, on every
// part.
type Fields struct {
	Version        int            `json:"version"`
	Account        string         `json:"account"`
	Project        string         `json:"project"`
	Batch          string         `json:"batch"`
	Model          string         `json:"model,omitempty"`
	Tier           *int           `json:"tier,omitempty"`
	TaskDefinition string         `json:"task_definition,omitempty"`
	TimeoutSeconds int            `json:"timeout_seconds,omitempty"`
	MaxAttempts    int            `json:"max_attempts,omitempty"`
	Sampling       *SamplingField `json:"sampling,omitempty"`
}

// SamplingField is the batch's "sampling" object (min_per_stratum and
// window absent: the contract's defaults).
type SamplingField struct {
	MOE           float64 `json:"moe"`
	Confidence    float64 `json:"confidence"`
	MinPerStratum int     `json:"min_per_stratum,omitempty"`
	Window        int     `json:"window,omitempty"`
}

// Outgoing is a checked batch, ready to send one part per message.
type Outgoing struct {
	ID    string // account/project/batch
	Jobs  int
	Parts []OutgoingPart
}

// OutgoingPart is one message's body and the jobs in it.
type OutgoingPart struct {
	Body []byte
	Jobs int
}

// Lines is how FromLines reads a file of JSON Lines of jobs.
type Lines struct {
	Name   string // the file's name, first in each error
	Fields Fields
	// StratumField, if set, names each line's stratum: a top-level field,
	// moved into "stratum", or env.NAME, copied (the env keeps it).
	StratumField string
	// FieldNames renames a batch field in errors: the name the submitter
	// gave it ("tier" → "--tier"); absent, the field's own.
	FieldNames map[string]string
	// MaxErrors stops the check of further parts once more errors than it
	// are found (0: no limit).
	MaxErrors int
}

// IsMessage tells a batch message from JSON Lines of jobs: JSON Lines when
// the first line is a whole JSON object with neither "version" nor "jobs",
// or when the name ends in .jsonl or .ndjson and the first line is not a
// whole message.
func IsMessage(data []byte, name string) bool {
	first := data
	for len(first) > 0 {
		var line []byte
		line, first, _ = bytes.Cut(first, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) > 0 {
			first = line
			break
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(first, &obj); err == nil {
		_, version := obj["version"]
		_, jobs := obj["jobs"]
		return version || jobs
	}
	ext := strings.ToLower(filepath.Ext(name))
	return ext != ".jsonl" && ext != ".ndjson"
}

// FromMessage checks a batch message; it is sent as it is, never split.
func FromMessage(data []byte, name string, cfg Config) (*Outgoing, []string) {
	m, err := Parse(data, cfg)
	if err != nil {
		var out []string
		for _, e := range Errors(err) {
			out = append(out, fmt.Sprintf("%s: %s", name, e))
		}
		if len(data) > MaxMessageBytes {
			out = append(out, fmt.Sprintf("%s: a batch larger than one message goes as JSON Lines of jobs with the batch's fields as flags: it is split into parts", name))
		}
		if out == nil {
			out = []string{fmt.Sprintf("%s: %v", name, err)}
		}
		return nil, out
	}
	return &Outgoing{ID: m.ID(), Jobs: len(m.Jobs), Parts: []OutgoingPart{{Body: data, Jobs: len(m.Jobs)}}}, nil
}

// lineJob is one line of a JSON Lines file.
type lineJob struct {
	line int
	raw  []byte
}

// FromLines reads JSON Lines of jobs, packs them into parts under 1 MiB and
// checks every part with Parse, naming the line of each broken rule.
func FromLines(data []byte, l Lines, cfg Config) (*Outgoing, []string) {
	errs := lineErrors{name: l.Name, fieldNames: l.FieldNames}
	fields, err := json.Marshal(l.Fields)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", l.Name, err)}
	}
	jobs := readLines(data, l.StratumField, MaxJobBytes(fields), &errs)
	if len(jobs) == 0 && errs.list == nil {
		errs.add(0, "", "no jobs")
	}

	// Parts: as many jobs as fit in a message (Split).
	raws := make([][]byte, len(jobs))
	for i, j := range jobs {
		raws[i] = j.raw
	}
	parts, err := Split(fields, raws)
	var pe *PartsError
	switch {
	case errors.As(err, &pe):
		errs.add(0, "", "the batch needs %s parts, more than the contract's %s: split it into several batches",
			cliout.Commas(pe.Parts), cliout.Commas(pe.Max))
		return nil, errs.list
	case err != nil:
		errs.add(0, "", "%v", err)
		return nil, errs.list
	}
	b := checkParts(parts, jobs, l, cfg, &errs)
	if errs.list != nil {
		return nil, errs.list
	}
	return b, nil
}

// readLines reads the jobs: one JSON object per non-blank line. A broken
// line is reported and left out, so the others are still checked.
func readLines(data []byte, stratumField string, maxJob int, errs *lineErrors) []lineJob {
	var jobs []lineJob
	for n, rest := 1, data; len(rest) > 0; n++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			errs.add(n, "", "invalid JSON: %v", err)
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			errs.add(n, "", "must be a JSON object (a job), not %s", clipBytes(line))
			continue
		}
		if stratumField != "" {
			var err error
			if line, err = withStratum(line, obj, stratumField); err != nil {
				errs.add(n, stratumField, "%v", err)
				continue
			}
		}
		if len(line) > maxJob {
			errs.add(n, "", "a job of %s bytes does not fit in a message (at most %s with the batch's fields)",
				cliout.Commas(len(line)), cliout.Commas(maxJob))
			continue
		}
		jobs = append(jobs, lineJob{line: n, raw: line})
	}
	return jobs
}

// checkParts checks every part as the intake will, and keys across parts.
func checkParts(parts []Part, jobs []lineJob, l Lines, cfg Config, errs *lineErrors) *Outgoing {
	h := l.Fields
	b := &Outgoing{ID: h.Account + "/" + h.Project + "/" + h.Batch, Jobs: len(jobs)}
	keys := map[string]int{} // key → line
	for _, p := range parts {
		b.Parts = append(b.Parts, OutgoingPart{Body: p.Body, Jobs: p.To - p.From})
		m, err := Parse(p.Body, cfg)
		if perrs := Errors(err); perrs != nil {
			for _, e := range perrs {
				errs.fromParse(e, jobs[p.From:p.To])
			}
		} else if err != nil {
			errs.add(0, "", "%v", err)
		}
		for k, j := range m.Jobs { // none when the part is invalid
			line := jobs[p.From+k].line
			if first, dup := keys[j.Key]; dup {
				errs.add(line, "key", "%s duplicates line %d", strconv.Quote(j.Key), first)
			} else {
				keys[j.Key] = line
			}
		}
		if l.MaxErrors > 0 && len(errs.list) > l.MaxErrors {
			break
		}
	}
	return b
}

// withStratum rewrites a job's line with its stratum taken from field: a
// top-level field is moved into "stratum" (the contract knows no other
// job field), env.NAME is copied (the job's env keeps it). A string is
// taken as it is, a number as written; the rules on the name are Parse's.
func withStratum(line []byte, obj map[string]any, field string) ([]byte, error) {
	var v any
	var ok bool
	if name, inEnv := strings.CutPrefix(field, "env."); inEnv {
		env, _ := obj["env"].(map[string]any)
		v, ok = env[name]
	} else {
		v, ok = obj[field]
	}
	if !ok {
		return nil, errors.New("missing: --stratum-field names each job's stratum")
	}
	var stratum string
	switch x := v.(type) {
	case string:
		stratum = x
	case float64:
		stratum = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return nil, fmt.Errorf("must be a string or a number (the job's stratum), not %s", clipBytes(mustJSON(v)))
	}
	if _, has := obj["stratum"]; has && field != "stratum" {
		return nil, errors.New(`the line has its own "stratum" too: one or the other`)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(field, "env.") {
		delete(raw, field)
	}
	raw["stratum"] = mustJSON(stratum)
	return json.Marshal(raw)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// lineErrors collects "FILE:LINE: field: rule" lines, each once, in line
// order (the file's own errors, line 0, first) whichever check found them
// first.
type lineErrors struct {
	name       string
	fieldNames map[string]string
	list       []string
	lines      []int // list[i]'s line
	seen       map[string]bool
}

func (e *lineErrors) add(line int, field, format string, a ...any) {
	var b strings.Builder
	b.WriteString(e.name)
	if line > 0 {
		fmt.Fprintf(&b, ":%d", line)
	}
	b.WriteString(": ")
	if field != "" {
		b.WriteString(field + ": ")
	}
	fmt.Fprintf(&b, format, a...)
	s := b.String()
	if e.seen[s] {
		return
	}
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	e.seen[s] = true
	i := len(e.lines)
	for i > 0 && e.lines[i-1] > line {
		i--
	}
	e.list, e.lines = slices.Insert(e.list, i, s), slices.Insert(e.lines, i, line)
}

var (
	jobField = regexp.MustCompile(`^jobs\[(\d+)\]\.?(.*)$`)
	jobRef   = regexp.MustCompile(`jobs\[(\d+)\](\.key)?`)
)

// fromParse translates an error of Parse on a part into the file's terms:
// jobs[k] is the line of the part's k-th job, a batch field its name.
func (e *lineErrors) fromParse(pe *Error, jobs []lineJob) {
	lineOf := func(k string) int {
		i, _ := strconv.Atoi(k)
		if i < len(jobs) {
			return jobs[i].line
		}
		return 0
	}
	rule := jobRef.ReplaceAllStringFunc(pe.Rule, func(ref string) string {
		return fmt.Sprintf("line %d", lineOf(jobRef.FindStringSubmatch(ref)[1]))
	})
	if m := jobField.FindStringSubmatch(pe.Field); m != nil {
		e.add(lineOf(m[1]), m[2], "%s", rule)
		return
	}
	field := pe.Field
	if f, ok := e.fieldNames[field]; ok {
		field = f
	}
	e.add(0, field, "%s", rule)
}

func clipBytes(b []byte) []byte {
	if len(b) > 40 {
		return append(b[:40:40], "..."...)
	}
	return b
}
