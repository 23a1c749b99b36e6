package batchmsg

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxErrors is how many *Error Parse collects before it stops reading: enough
// to fix a message in one round, few enough for a dead-letter reason.
const maxErrors = 10

// Parse reads one batch message and checks it against every rule of the
// contract (docs/batch-format.md, version 1):
//
//   - the message is at most 1 MiB of UTF-8 JSON: one object, nothing after it;
//   - every object has only the contract's fields, each at most once; an env
//     name appears at most once;
//   - a required field that is null is missing; an optional one that is null
//     is absent;
//   - integers are JSON integers: 1.0, 1e0 and "1" are not;
//   - every field's own rule (see the table in docs/batch-format.md).
//
// It returns the first *Error, or an errors.Join of up to 10 of them in the
// order found (use Errors to list them), or, for a version other than 1, only
// that one: the other fields are then not this version's to judge. It returns
// a plain error, never an *Error, when cfg itself is invalid. Job keys are
// checked for uniqueness within the message; a key repeated in another part
// of the batch is the store's to report as a conflict.
//
// Parse reads the message token by token in one pass: time and memory are
// linear in its size.
func Parse(data []byte, cfg Config) (Message, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return Message{}, fmt.Errorf("config: %w", err)
	}
	whole := loc{}
	switch {
	case len(data) > MaxMessageBytes:
		return Message{}, whole.error("larger than SQS's limit of 1 MiB (%d bytes)", MaxMessageBytes)
	case len(bytes.Trim(data, jsonSpace)) == 0:
		return Message{}, whole.error("empty")
	}
	if i := invalidUTF8(data); i >= 0 {
		return Message{}, whole.error("invalid UTF-8 at byte %d", i)
	}
	p := parser{cfg: cfg, lex: lexer{data: data}, noModel: -1}
	m, err := p.message()
	switch {
	case err == nil && p.versionErr != nil:
		return Message{}, p.versionErr
	case len(p.errs) == 1:
		return Message{}, p.errs[0]
	case len(p.errs) > 1:
		return Message{}, errors.Join(p.errs...)
	}
	return m, nil
}

const jsonSpace = " \t\r\n"

// invalidUTF8 returns the offset of the first byte that is not UTF-8, or -1.
// encoding/json would quietly turn it into U+FFFD.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// state is what a field's value turned out to be.
type state uint8

const (
	absent state = iota // missing or null
	bad                 // present and breaking a rule (reported)
	good
)

// errStop ends the reading: the JSON is broken, or maxErrors were found.
var errStop = errors.New("stop")

// loc is a field's path, built only when an error names it: prefix is the
// path of the object holding the field ("" at the top), name its name.
type loc struct{ prefix, name string }

func (l loc) String() string {
	switch {
	case l.prefix == "" && l.name == "":
		return "message"
	case l.prefix == "":
		return l.name
	case l.name == "":
		return l.prefix
	}
	return l.prefix + "." + l.name
}

func (l loc) field(name string) loc { return loc{prefix: l.String(), name: name} }

func (l loc) error(format string, args ...any) *Error {
	return &Error{Field: l.String(), Rule: fmt.Sprintf(format, args...)}
}

type parser struct {
	cfg        Config
	lex        lexer
	errs       []error
	versionErr *Error
	noModel    int  // index of the first job naming no model, -1 if none
	sampled    bool // the message has a sampling object, valid or not
}

// fail records a broken rule; it returns errStop once maxErrors are recorded.
func (p *parser) fail(at loc, format string, args ...any) error {
	if len(p.errs) >= maxErrors {
		return errStop
	}
	p.errs = append(p.errs, at.error(format, args...))
	if len(p.errs) >= maxErrors {
		return errStop
	}
	return nil
}

// next reads one token; broken JSON is recorded against at and stops.
func (p *parser) next(at loc) (token, error) {
	t, err := p.lex.next()
	if err == nil {
		return t, nil
	}
	if len(p.errs) < maxErrors {
		p.errs = append(p.errs, at.error("%s", err.Error()))
	}
	return token{}, errStop
}

// skip consumes the rest of a value whose first token t was read.
func (p *parser) skip(at loc, t token) error {
	if t.kind != tBeginObject && t.kind != tBeginArray {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := p.next(at)
		if err != nil {
			return err
		}
		switch t.kind {
		case tBeginObject, tBeginArray:
			depth++
		case tEndObject, tEndArray:
			depth--
		}
	}
	return nil
}

// skipValue consumes a value not yet started.
func (p *parser) skipValue(at loc) error {
	t, err := p.next(at)
	if err != nil {
		return err
	}
	return p.skip(at, t)
}

// kind names a value's type by its first token.
func kind(t token) string {
	switch t.kind {
	case tNull:
		return "null"
	case tBeginObject:
		return "an object"
	case tBeginArray:
		return "an array"
	case tTrue, tFalse:
		return "a boolean"
	case tString:
		return "a string"
	case tNumber:
		return "a number"
	}
	return "nothing"
}

// wrongType reports a value of the wrong JSON type and consumes its rest.
func (p *parser) wrongType(at loc, t token, want string) error {
	if err := p.fail(at, "must be %s, not %s", want, kind(t)); err != nil {
		return err
	}
	return p.skip(at, t)
}

// object reads the members of an object whose '{' was read, calling member
// with each name; member must consume the value.
func (p *parser) object(at loc, member func(name string) error) error {
	for {
		t, err := p.next(at)
		if err != nil {
			return err
		}
		if t.kind == tEndObject {
			return nil
		}
		if err := member(t.text); err != nil { // the lexer returns only names here
			return err
		}
	}
}

// known checks a member name against an object's fields: unknown and
// repeated names are reported and their values skipped (ok false).
func (p *parser) known(at loc, fields []string, seen *uint32, name string) (ok bool, err error) {
	i := slices.Index(fields, name)
	switch {
	case i < 0:
		err = p.fail(at, "unknown field %s", show(name))
	case *seen&(1<<i) != 0:
		err = p.fail(at, "duplicate field %s", show(name))
	default:
		*seen |= 1 << i
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, p.skipValue(at)
}

func (p *parser) str(at loc) (string, state, error) {
	t, err := p.next(at)
	if err != nil {
		return "", bad, err
	}
	switch t.kind {
	case tString:
		return t.text, good, nil
	case tNull:
		return "", absent, nil
	}
	return "", bad, p.wrongType(at, t, "a string")
}

// name reads an account, project, batch, model or key.
func (p *parser) name(at loc) (string, state, error) {
	s, st, err := p.str(at)
	if st != good {
		return s, st, err
	}
	if rule := nameRule(s); rule != "" {
		return s, bad, p.fail(at, "%s", rule)
	}
	return s, good, nil
}

// integer reads a JSON integer: no fraction, no exponent. A value beyond
// int64 reads as the nearest int64, which every range check rejects.
func (p *parser) integer(at loc) (n int64, text string, st state, err error) {
	t, err := p.next(at)
	if err != nil {
		return 0, "", bad, err
	}
	switch t.kind {
	case tNull:
		return 0, "", absent, nil
	case tNumber:
		text = t.text
		if strings.ContainsAny(text, ".eE") {
			return 0, text, bad, p.fail(at, "%s is not an integer", clip(text))
		}
		n, _ = strconv.ParseInt(text, 10, 64)
		return n, text, good, nil
	}
	return 0, "", bad, p.wrongType(at, t, "an integer")
}

func (p *parser) intIn(at loc, lo, hi int) (int, state, error) {
	n, text, st, err := p.integer(at)
	if st != good {
		return 0, st, err
	}
	if n < int64(lo) || n > int64(hi) {
		return 0, bad, p.fail(at, "%s is outside %d..%d", clip(text), lo, hi)
	}
	return int(n), good, nil
}

var messageFields = []string{
	"version", "account", "project", "batch", "model", "tier", "task_definition",
	"timeout_seconds", "max_attempts", "part", "parts", "jobs", "sampling",
}

func (p *parser) message() (Message, error) {
	whole := loc{}
	t, err := p.next(whole)
	if err != nil {
		return Message{}, err
	}
	if t.kind != tBeginObject {
		p.fail(whole, "must be a JSON object, not %s", kind(t))
		return Message{}, errStop
	}
	var (
		m                                       Message
		seen                                    uint32
		version, account, project, batch, model state
		part, parts, jobs                       state
	)
	err = p.object(whole, func(name string) error {
		if ok, err := p.known(whole, messageFields, &seen, name); !ok {
			return err
		}
		at := loc{name: name}
		var err error
		switch name {
		case "version":
			var n int64
			var text string
			n, text, version, err = p.integer(at)
			if version == good && n != Version {
				version = bad
				p.versionErr = at.error("%s is not a supported version (only %d)", clip(text), Version)
				err = p.fail(at, "%s", p.versionErr.Rule)
			}
			m.Version = int(n)
		case "account":
			m.Account, account, err = p.name(at)
		case "project":
			m.Project, project, err = p.name(at)
		case "batch":
			m.Batch, batch, err = p.name(at)
		case "model":
			m.Model, model, err = p.name(at)
		case "tier":
			var n int
			var st state
			if n, st, err = p.intIn(at, 0, p.cfg.Tiers-1); st == good {
				m.Tier = &n
			}
		case "task_definition":
			var st state
			m.TaskDefinition, st, err = p.str(at)
			if st == good && !validTaskDefinition(m.TaskDefinition) {
				err = p.fail(at, "%s %s", show(m.TaskDefinition), taskDefinitionRule)
			}
		case "timeout_seconds":
			m.TimeoutSeconds, _, err = p.intIn(at, MinTimeout, MaxTimeout)
		case "max_attempts":
			m.MaxAttempts, _, err = p.intIn(at, 1, MaxAttempts)
		case "part":
			m.Part, part, err = p.intIn(at, 1, MaxParts)
		case "parts":
			m.Parts, parts, err = p.intIn(at, 1, MaxParts)
		case "jobs":
			m.Jobs, jobs, err = p.jobs(at)
		case "sampling":
			m.Sampling, err = p.sampling(at)
		}
		return err
	})
	if err != nil {
		return Message{}, err
	}
	if rest := bytes.TrimLeft(p.lex.data[p.lex.pos:], jsonSpace); len(rest) > 0 {
		p.fail(whole, "trailing data after the object at byte %d", len(p.lex.data)-len(rest))
		return Message{}, errStop
	}

	// Rules across fields, in the contract's order.
	for _, f := range []struct {
		name string
		st   state
	}{{"version", version}, {"account", account}, {"project", project}, {"batch", batch}, {"jobs", jobs}} {
		if f.st == absent {
			if err := p.fail(loc{name: f.name}, "required"); err != nil {
				return Message{}, err
			}
		}
	}
	if model == absent && p.noModel >= 0 {
		if err := p.fail(loc{name: "model"}, "required unless every job names one (jobs[%d] names none)", p.noModel); err != nil {
			return Message{}, err
		}
	}
	var err2 error
	switch {
	case part == good && parts == absent:
		err2 = p.fail(loc{name: "parts"}, "required with part")
	case part == absent && parts == good:
		err2 = p.fail(loc{name: "part"}, "required with parts")
	case part == good && parts == good && m.Part > m.Parts:
		err2 = p.fail(loc{name: "parts"}, "part %d is greater than parts %d", m.Part, m.Parts)
	}
	if err2 != nil {
		return Message{}, err2
	}
	if jobs == good && len(m.Jobs) == 0 {
		if err := p.fail(loc{name: "jobs"}, "must have 1..%d jobs, has 0", MaxJobs); err != nil {
			return Message{}, err
		}
	}
	for i, j := range m.Jobs {
		if n := OverrideSize(m, j); n > MaxOverrideChars {
			at := loc{prefix: jobPath(i), name: "env"}
			if err := p.fail(at, "container overrides would be %d characters, more than ECS's limit of %d", n, MaxOverrideChars); err != nil {
				return Message{}, err
			}
		}
	}
	if err := p.sampledJobs(m); err != nil {
		return Message{}, err
	}
	if len(p.errs) > 0 {
		return Message{}, nil
	}

	if m.TaskDefinition == "" {
		m.TaskDefinition = p.cfg.DefaultTaskDefinition
	}
	if m.MaxAttempts == 0 {
		m.MaxAttempts = p.cfg.DefaultMaxAttempts
	}
	return m, nil
}

func jobPath(i int) string { return "jobs[" + strconv.Itoa(i) + "]" }

// jobs reads the jobs array. Jobs past MaxJobs are reported once and
// skipped, not kept.
func (p *parser) jobs(at loc) ([]Job, state, error) {
	t, err := p.next(at)
	if err != nil {
		return nil, bad, err
	}
	switch t.kind {
	case tNull:
		return nil, absent, nil
	case tBeginArray:
	default:
		return nil, bad, p.wrongType(at, t, "an array")
	}
	var jobs []Job
	keys := map[string]int{} // key → index of the job with it
	st := good
	for i := 0; ; i++ {
		t, err := p.next(at)
		if err != nil {
			return nil, bad, err
		}
		if t.kind == tEndArray {
			return jobs, st, nil
		}
		if i >= MaxJobs {
			if i == MaxJobs {
				st = bad
				if err := p.fail(at, "must have 1..%d jobs, has more", MaxJobs); err != nil {
					return nil, bad, err
				}
			}
			if err := p.skip(at, t); err != nil {
				return nil, bad, err
			}
			continue
		}
		jp := loc{name: jobPath(i)}
		if t.kind != tBeginObject {
			jobs = append(jobs, Job{}) // keeps jobs[i] at index i
			if err := p.wrongType(jp, t, "an object"); err != nil {
				return nil, bad, err
			}
			continue
		}
		j, err := p.job(jp, i, keys)
		if err != nil {
			return nil, bad, err
		}
		jobs = append(jobs, j)
	}
}

var jobFields = []string{"key", "model", "env", "stratum"}

func (p *parser) job(at loc, i int, keys map[string]int) (Job, error) {
	var (
		j          Job
		seen       uint32
		key, model state
	)
	err := p.object(at, func(name string) error {
		if ok, err := p.known(at, jobFields, &seen, name); !ok {
			return err
		}
		f := at.field(name)
		var err error
		switch name {
		case "key":
			j.Key, key, err = p.name(f)
			if key == good {
				if first, dup := keys[j.Key]; dup {
					key = bad
					err = p.fail(f, "%s duplicates jobs[%d].key", show(j.Key), first)
				} else {
					keys[j.Key] = i
				}
			}
		case "model":
			j.Model, model, err = p.name(f)
		case "env":
			j.Env, err = p.env(f)
		case "stratum":
			j.Stratum, _, err = p.name(f)
		}
		return err
	})
	if err != nil {
		return Job{}, err
	}
	if key == absent {
		if err := p.fail(at.field("key"), "required"); err != nil {
			return Job{}, err
		}
	}
	if model == absent && p.noModel < 0 {
		p.noModel = i
	}
	return j, nil
}

const envNameRule = "must match [A-Z_][A-Z0-9_]* and not start with AWS_ or ECS_"

// openObject reads the '{' of an optional object: absent for null, bad
// (reported) for another type.
func (p *parser) openObject(at loc) (state, error) {
	t, err := p.next(at)
	if err != nil {
		return bad, err
	}
	switch t.kind {
	case tNull:
		return absent, nil
	case tBeginObject:
		return good, nil
	}
	return bad, p.wrongType(at, t, "an object")
}

// env reads a job's environment; an empty one is nil.
func (p *parser) env(at loc) (map[string]string, error) {
	if st, err := p.openObject(at); st != good {
		return nil, err
	}
	var env map[string]string
	prefix := at.String()
	err := p.object(at, func(name string) error {
		_, dup := env[name]
		switch {
		case !validEnvName(name):
			if err := p.fail(at, "name %s %s", show(name), envNameRule); err != nil {
				return err
			}
			return p.skipValue(at)
		case dup:
			if err := p.fail(at, "duplicate name %s", show(name)); err != nil {
				return err
			}
			return p.skipValue(at)
		}
		v := loc{prefix: prefix, name: name}
		s, st, err := p.str(v)
		switch st {
		case good:
			if env == nil {
				env = map[string]string{}
			}
			env[name] = s
		case absent:
			err = p.fail(v, "must be a string, not null")
		}
		return err
	})
	return env, err
}

// nameChar marks the bytes of the contract's character rule for names.
var nameChar = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/-") {
		t[c] = true
	}
	return t
}()

// NameChar reports whether c may appear in an account, project, batch,
// model or job key name (the depth bridge maps gateway names onto it).
func NameChar(c byte) bool { return nameChar[c] }

// NameRule returns the rule s breaks as a name, or "" (see nameRule).
func NameRule(s string) string { return nameRule(s) }

// nameRule returns the rule s breaks as an account, project, batch, model or
// job key, or "".
func nameRule(s string) string {
	for i := 0; i < len(s); i++ {
		if !nameChar[s[i]] {
			return show(s) + " has characters outside A-Z a-z 0-9 . _ : / -"
		}
	}
	if len(s) == 0 || len(s) > MaxNameLen {
		return fmt.Sprintf("must be 1..%d characters, has %d", MaxNameLen, len(s))
	}
	return ""
}

func validEnvName(s string) bool {
	if s == "" || strings.HasPrefix(s, "AWS_") || strings.HasPrefix(s, "ECS_") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

const taskDefinitionRule = "must be family[:revision]: a family of 1..255 A-Z a-z 0-9 - _, a revision a positive integer"

// validTaskDefinition reports whether s is an ECS task definition family,
// optionally with a revision: "eval-sandbox" or "eval-sandbox:7".
func validTaskDefinition(s string) bool {
	family, rev, hasRev := strings.Cut(s, ":")
	if len(family) == 0 || len(family) > maxFamilyLen {
		return false
	}
	for i := 0; i < len(family); i++ {
		c := family[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	if !hasRev {
		return true
	}
	for i := 0; i < len(rev); i++ {
		if rev[i] < '0' || rev[i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(rev, 10, 32) // ECS revisions are 32-bit
	return err == nil && n >= 1
}

// showMax is how much of a value an error quotes.
const showMax = 40

// show quotes a value for an error, cut to showMax characters.
func show(s string) string {
	n := 0
	for i := range s {
		if n == showMax {
			return strconv.Quote(s[:i]) + "..."
		}
		n++
	}
	return strconv.Quote(s)
}

// clip cuts a number's text for an error.
func clip(s string) string {
	if len(s) > showMax {
		return s[:showMax] + "..."
	}
	return s
}
