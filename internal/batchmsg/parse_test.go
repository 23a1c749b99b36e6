package batchmsg

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
)

var cfg3 = DefaultConfig()

func readDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata/%s/*.json: %v", dir, err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(filepath.Base(p), ".json")] = data
	}
	return files
}

func TestParseGood(t *testing.T) {
	for name, data := range readDir(t, "good") {
		t.Run(name, func(t *testing.T) {
			m, err := Parse(data, cfg3)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m.Version != 1 || len(m.Jobs) == 0 {
				t.Errorf("got version %d, %d jobs; want version 1 and jobs", m.Version, len(m.Jobs))
			}
		})
	}
}

func TestParseReadmeExample(t *testing.T) {
	data, err := os.ReadFile("testdata/good/readme-example.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data, cfg3)
	if err != nil {
		t.Fatal(err)
	}
	tier := 2
	want := Message{
		Version: 1, Account: "acme", Project: "search-evals", Batch: "2026-11-29-sweep-17",
		Model: "gpt-5.5", Tier: &tier, TaskDefinition: "eval-sandbox:7", TimeoutSeconds: 3600,
		MaxAttempts: 3, Part: 1, Parts: 4,
		Jobs: []Job{
			{Key: "task-000123", Env: map[string]string{"TASK_ID": "000123", "SPLIT": "test"}},
			{Key: "task-000124", Model: "claude-opus-4.8", Env: map[string]string{"TASK_ID": "000124"}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %+v\nwant    %+v", got, want)
	}
	wantSummary := "acme/search-evals/2026-11-29-sweep-17: 2 jobs, models gpt-5.5 (1), claude-opus-4.8 (1), tier 2, part 1 of 4"
	if s := got.Summary(); s != wantSummary {
		t.Errorf("Summary = %q\nwant      %q", s, wantSummary)
	}
}

// badCases names, for each file of testdata/bad, the field its one broken
// rule is reported on and a part of the rule's text.
var badCases = map[string]struct{ field, rule string }{
	"version-missing":                 {"version", "required"},
	"version-null":                    {"version", "required"},
	"version-2":                       {"version", "2 is not a supported version (only 1)"},
	"version-float":                   {"version", "1.0 is not an integer"},
	"version-exponent":                {"version", "1e0 is not an integer"},
	"version-string":                  {"version", "must be an integer, not a string"},
	"account-missing":                 {"account", "required"},
	"account-null":                    {"account", "required"},
	"account-bad-chars":               {"account", `"acme corp" has characters outside A-Z a-z 0-9 . _ : / -`},
	"account-not-string":              {"account", "must be a string, not a number"},
	"project-empty":                   {"project", "must be 1..128 characters, has 0"},
	"batch-too-long":                  {"batch", "must be 1..128 characters, has 129"},
	"batch-non-ascii":                 {"batch", "has characters outside"},
	"model-missing":                   {"model", "required unless every job names one (jobs[0] names none)"},
	"model-bad-chars":                 {"model", `"gpt 5" has characters outside`},
	"job-model-bad-chars":             {"jobs[1].model", `"m@2" has characters outside`},
	"tier-fraction":                   {"tier", "1.5 is not an integer"},
	"tier-string":                     {"tier", "must be an integer, not a string"},
	"tier-negative":                   {"tier", "-1 is outside 0..2"},
	"tier-too-high":                   {"tier", "3 is outside 0..2"},
	"tier-bool":                       {"tier", "must be an integer, not a boolean"},
	"task-definition-revision-zero":   {"task_definition", `"eval-sandbox:0" must be family[:revision]`},
	"task-definition-revision-empty":  {"task_definition", "must be family[:revision]"},
	"task-definition-bad-family":      {"task_definition", "must be family[:revision]"},
	"task-definition-arn":             {"task_definition", "must be family[:revision]"},
	"task-definition-family-too-long": {"task_definition", "must be family[:revision]"},
	"task-definition-empty":           {"task_definition", "must be family[:revision]"},
	"timeout-too-short":               {"timeout_seconds", "59 is outside 60..86400"},
	"timeout-too-long":                {"timeout_seconds", "86401 is outside 60..86400"},
	"timeout-float":                   {"timeout_seconds", "3600.0 is not an integer"},
	"max-attempts-zero":               {"max_attempts", "0 is outside 1..10"},
	"max-attempts-too-many":           {"max_attempts", "11 is outside 1..10"},
	"part-without-parts":              {"parts", "required with part"},
	"parts-without-part":              {"part", "required with parts"},
	"part-greater-than-parts":         {"parts", "part 5 is greater than parts 4"},
	"part-zero":                       {"part", "0 is outside 1..10000"},
	"parts-too-many":                  {"parts", "10001 is outside 1..10000"},
	"jobs-missing":                    {"jobs", "required"},
	"jobs-null":                       {"jobs", "required"},
	"jobs-empty":                      {"jobs", "must have 1..10000 jobs, has 0"},
	"jobs-not-array":                  {"jobs", "must be an array, not an object"},
	"jobs-too-many":                   {"jobs", "must have 1..10000 jobs, has more"},
	"job-not-object":                  {"jobs[1]", "must be an object, not a string"},
	"job-key-missing":                 {"jobs[0].key", "required"},
	"job-key-null":                    {"jobs[0].key", "required"},
	"job-key-duplicate":               {"jobs[1].key", `"a" duplicates jobs[0].key`},
	"job-key-bad-chars":               {"jobs[0].key", `"a b" has characters outside A-Z a-z 0-9 . _ : / -`},
	"job-key-too-long":                {"jobs[0].key", "must be 1..128 characters, has 129"},
	"env-not-object":                  {"jobs[0].env", "must be an object, not an array"},
	"env-name-lowercase":              {"jobs[0].env", `name "aws_key" must match [A-Z_][A-Z0-9_]*`},
	"env-name-aws-prefix":             {"jobs[0].env.AWS_REGION", `refused by the env policy (AWS_*: the AWS SDKs' credentials, endpoints and CA bundle)`},
	"env-name-ecs-prefix":             {"jobs[0].env.ECS_CONTAINER_METADATA_URI", `refused by the env policy (ECS_*: the ECS agent's and container metadata's)`},
	"env-name-leading-digit":          {"jobs[0].env", `name "1A" must match`},
	"env-name-empty":                  {"jobs[0].env", `name "" must match`},
	"env-value-number":                {"jobs[0].env.TASK_ID", "must be a string, not a number"},
	"env-value-null":                  {"jobs[0].env.TASK_ID", "must be a string, not null"},
	"env-value-object":                {"jobs[0].env.TASK_ID", "must be a string, not an object"},
	"env-too-large":                   {"jobs[1].env", "more than ECS's limit of 8192"},
	"env-too-large-escapes":           {"jobs[0].env", "more than ECS's limit of 8192"},
	"unknown-field":                   {"message", `unknown field "tiers"`},
	"unknown-field-case":              {"message", `unknown field "Account"`},
	"unknown-field-job":               {"jobs[2]", `unknown field "evn"`},
	"duplicate-field":                 {"message", `duplicate field "account"`},
	"duplicate-field-job":             {"jobs[0]", `duplicate field "key"`},
	"duplicate-env-name":              {"jobs[0].env", `duplicate name "A"`},
	"trailing-data":                   {"message", "trailing data after the object"},
	"trailing-garbage":                {"message", "trailing data after the object"},
	"not-object":                      {"message", "must be a JSON object, not an array"},
	"empty":                           {"message", "empty"},
	"syntax-error":                    {"jobs[0]", "invalid JSON at byte"},
	"truncated":                       {"jobs[0].env", "invalid JSON"},
	"invalid-utf8":                    {"message", "invalid UTF-8 at byte"},
}

func TestParseBad(t *testing.T) {
	files := readDir(t, "bad")
	for name := range badCases {
		if _, ok := files[name]; !ok {
			t.Errorf("badCases has %q, testdata/bad has no %s.json", name, name)
		}
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			want, ok := badCases[name]
			if !ok {
				t.Fatalf("testdata/bad/%s.json has no entry in badCases", name)
			}
			_, err := Parse(data, cfg3)
			errs := Errors(err)
			if len(errs) != 1 {
				t.Fatalf("Parse: got %d errors %v, want one on %s", len(errs), err, want.field)
			}
			if errs[0].Field != want.field || !strings.Contains(errs[0].Rule, want.rule) {
				t.Errorf("Parse: got %q, want field %q, rule containing %q", err, want.field, want.rule)
			}
		})
	}
}

// msg builds a valid message as a map, for cases too large for a file or
// with generated content.
func msg(jobs int) map[string]any {
	js := make([]any, jobs)
	for i := range js {
		js[i] = map[string]any{"key": fmt.Sprintf("task-%06d", i), "env": map[string]any{"TASK_ID": fmt.Sprintf("%06d", i)}}
	}
	return map[string]any{"version": 1, "account": "acme", "project": "search-evals", "batch": "b1", "model": "gpt-5.5", "jobs": js}
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseTooLarge(t *testing.T) {
	m := msg(1)
	m["jobs"].([]any)[0].(map[string]any)["env"] = map[string]any{"PAD": strings.Repeat("x", MaxMessageBytes)}
	_, err := Parse(marshal(t, m), cfg3)
	errs := Errors(err)
	if len(errs) != 1 || errs[0].Field != "message" || !strings.Contains(errs[0].Rule, "1 MiB") {
		t.Errorf("Parse of %d bytes: got %v, want one error on message about 1 MiB", MaxMessageBytes+100, err)
	}

	// Just at the limit it is read (and fails only on the overrides).
	data := marshal(t, msg(1))
	data = append(data[:len(data)-1], []byte(`                `)...)
	pad := MaxMessageBytes - len(data) - 1
	data = append(data, strings.Repeat(" ", pad)+"}"...)
	if len(data) != MaxMessageBytes {
		t.Fatalf("built %d bytes", len(data))
	}
	if _, err := Parse(data, cfg3); err != nil {
		t.Errorf("Parse of exactly 1 MiB: %v", err)
	}
}

func TestParseSeveralErrors(t *testing.T) {
	data := []byte(`{"version":1,"account":"a b","project":"p","batch":"b","tier":9,
		"jobs":[{"key":"k","evn":{}},{"key":"k"}]}`)
	_, err := Parse(data, cfg3)
	var got []string
	for _, e := range Errors(err) {
		got = append(got, e.Error())
	}
	want := []string{
		`account: "a b" has characters outside A-Z a-z 0-9 . _ : / -`,
		`tier: 9 is outside 0..2`,
		`jobs[0]: unknown field "evn"`,
		`jobs[1].key: "k" duplicates jobs[0].key`,
		`model: required unless every job names one (jobs[0] names none)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\ngot  %q\nwant %q", got, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Field != "account" {
		t.Errorf("errors.As: got %v, want the first *Error", e)
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("Error() = %q, want the lines joined", err.Error())
	}
}

func TestParseStopsAtTenErrors(t *testing.T) {
	var jobs []string
	for range 50 {
		jobs = append(jobs, `{"key":"a b"}`)
	}
	data := []byte(`{"version":1,"account":"a","project":"p","batch":"b","model":"m","jobs":[` + strings.Join(jobs, ",") + `]}`)
	_, err := Parse(data, cfg3)
	errs := Errors(err)
	if len(errs) != maxErrors {
		t.Fatalf("got %d errors, want %d", len(errs), maxErrors)
	}
	if errs[9].Field != "jobs[9].key" {
		t.Errorf("10th error on %q, want jobs[9].key", errs[9].Field)
	}
}

func TestParseOtherVersionReportsOnlyIt(t *testing.T) {
	data := []byte(`{"version":2,"account":"acme","project":"p","batch":"b","priority":"high","jobs":[{"key":"k","image":"x"}]}`)
	_, err := Parse(data, cfg3)
	errs := Errors(err)
	if len(errs) != 1 || errs[0].Field != "version" {
		t.Errorf("got %v, want only the version error", err)
	}
}

func TestParseDefaults(t *testing.T) {
	data := []byte(`{"version":1,"account":"a","project":"p","batch":"b","model":"m","jobs":[{"key":"k","env":{}}]}`)
	cfg := Config{Tiers: 5, DefaultTier: 4, DefaultTaskDefinition: "eval-sandbox", DefaultMaxAttempts: 5}
	m, err := Parse(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tier != nil || m.TaskDefinition != "eval-sandbox" || m.MaxAttempts != 5 || m.Jobs[0].Env != nil {
		t.Errorf("got tier %v, task definition %q, max attempts %d, env %v; want nil, eval-sandbox, 5, nil",
			m.Tier, m.TaskDefinition, m.MaxAttempts, m.Jobs[0].Env)
	}
	if _, err := Parse([]byte(`{"version":1,"account":"a","project":"p","batch":"b","model":"m","tier":4,"jobs":[{"key":"k"}]}`), cfg); err != nil {
		t.Errorf("tier 4 of 5 tiers: %v", err)
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"default", DefaultConfig(), true},
		{"default tier outside", Config{Tiers: 3, DefaultTier: 3}, false},
		{"negative tiers", Config{Tiers: -1}, false},
		{"max attempts 11", Config{DefaultMaxAttempts: 11}, false},
		{"task definition arn", Config{DefaultTaskDefinition: "arn:aws:ecs:x"}, false},
		{"task definition", Config{DefaultTaskDefinition: "eval-sandbox:3"}, true},
	}
	data, _ := os.ReadFile("testdata/good/minimal.json")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			_, perr := Parse(data, tc.cfg)
			if (perr == nil) != tc.ok {
				t.Errorf("Parse = %v, want ok %v", perr, tc.ok)
			}
			if var_ := (*Error)(nil); perr != nil && errors.As(perr, &var_) {
				t.Errorf("Parse with a bad config returned *Error %v: it would dead-letter good messages", perr)
			}
		})
	}
}

// envList is the list OverrideSize measures, built literally.
func envList(m Message, j Job) []map[string]string {
	var list []map[string]string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range j.Env {
			if !yield(k) {
				return
			}
		}
	}) {
		list = append(list, map[string]string{"name": name, "value": j.Env[name]})
	}
	model := j.Model
	if model == "" {
		model = m.Model
	}
	return append(list,
		map[string]string{"name": "EVALSCHED_JOB_ID", "value": job.JobID(m.Account, m.Project, m.Batch, j.Key)},
		map[string]string{"name": "EVALSCHED_BATCH", "value": m.ID()},
		map[string]string{"name": "EVALSCHED_MODEL", "value": model},
		map[string]string{"name": "EVALSCHED_ATTEMPT", "value": "10"},
		map[string]string{"name": "EVALSCHED_SUBMITTED_AT", "value": "2026-11-29T12:00:00Z"},
		map[string]string{"name": "EVALSCHED_RESULT_TOKEN", "value": resulttoken.New().Reveal()},
	)
}

// marshaledSize is OverrideSize computed by encoding/json (keys "name" and
// "value" in that order, as a struct would write them).
func marshaledSize(t testing.TB, m Message, j Job) int {
	type entry struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	var list []entry
	for _, e := range envList(m, j) {
		list = append(list, entry{e["name"], e["value"]})
	}
	return len(marshal(t, list))
}

func TestOverrideSize(t *testing.T) {
	m := Message{Account: "acme", Project: "search-evals", Batch: "b1", Model: "gpt-5.5"}
	tests := []struct {
		name string
		job  Job
	}{
		{"no env", Job{Key: "k"}},
		{"own model", Job{Key: "k", Model: "claude-opus-4.8"}},
		{"ascii", Job{Key: "k", Env: map[string]string{"A": "1", "SPLIT": "test"}}},
		{"escapes", Job{Key: "k", Env: map[string]string{"Q": "\"\\\n\r\t\b\f\x01\x1f"}}},
		{"html", Job{Key: "k", Env: map[string]string{"H": "<a href='x'>&amp;</a>"}}},
		{"unicode", Job{Key: "k", Env: map[string]string{"U": "café 日本 🚀 \u2028\u2029"}}},
		{"invalid utf-8", Job{Key: "k", Env: map[string]string{"B": "a\xffb\xc3"}}},
		{"empty value", Job{Key: "k", Env: map[string]string{"E": ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := OverrideSize(m, tc.job), marshaledSize(t, m, tc.job); got != want {
				t.Errorf("OverrideSize = %d, want %d (the JSON's length)", got, want)
			}
		})
	}
}

func TestOverrideLimit(t *testing.T) {
	m := Message{Version: 1, Account: "acme", Project: "search-evals", Batch: "b1", Model: "gpt-5.5", MaxAttempts: 3}
	base := OverrideSize(m, Job{Key: "k", Env: map[string]string{"PROMPT": ""}})
	for _, extra := range []int{0, 1} {
		m.Jobs = []Job{{Key: "k", Env: map[string]string{"PROMPT": strings.Repeat("x", MaxOverrideChars-base+extra)}}}
		if n := OverrideSize(m, m.Jobs[0]); n != MaxOverrideChars+extra {
			t.Fatalf("built a job of %d characters, want %d", n, MaxOverrideChars+extra)
		}
		_, err := Parse(marshal(t, m), cfg3)
		switch errs := Errors(err); {
		case extra == 0 && err != nil:
			t.Errorf("overrides of exactly %d characters: %v", MaxOverrideChars, err)
		case extra == 1 && (len(errs) != 1 || errs[0].Field != "jobs[0].env"):
			t.Errorf("overrides of %d characters: got %v, want one error on jobs[0].env", MaxOverrideChars+1, err)
		}
	}
}

func TestJobIDLen(t *testing.T) {
	if n := len(job.JobID("a", "p", "b", "k")); n != jobIDLen {
		t.Errorf("job.JobID is %d characters; OverrideSize counts %d", n, jobIDLen)
	}
}

func TestSpec(t *testing.T) {
	tier := 0
	m := Message{
		Version: 1, Account: "a", Project: "p", Batch: "b", Model: "m", Tier: &tier,
		TaskDefinition: "td:1", TimeoutSeconds: 600, MaxAttempts: 5,
		Jobs: []Job{{Key: "k1", Env: map[string]string{"X": "1"}}, {Key: "k2", Model: "m2"}},
	}
	want := job.BatchSpec{
		Account: "a", Project: "p", Batch: "b", Model: "m", Tier: 0, MaxAttempts: 5,
		TaskDefinition: "td:1", TimeoutSeconds: 600,
		Jobs: []job.JobSpec{{Key: "k1", Env: map[string]string{"X": "1"}}, {Key: "k2", Model: "m2"}},
	}
	if got := m.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("Spec() = %+v\nwant     %+v", got, want)
	}
	m.Tier, m.MaxAttempts = nil, 0
	if got := m.Spec(); got.Tier != -1 || got.MaxAttempts != 3 {
		t.Errorf("Spec() without tier and attempts: tier %d, max attempts %d; want -1, 3", got.Tier, got.MaxAttempts)
	}
}

func TestSummary(t *testing.T) {
	job := func(key, model string) Job { return Job{Key: key, Model: model} }
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"no jobs", Message{Account: "a", Project: "p", Batch: "b"}, "a/p/b: 0 jobs, default tier"},
		{"one job default tier", Message{Account: "a", Project: "p", Batch: "b", Model: "m", Jobs: []Job{job("k", "")}},
			"a/p/b: 1 job, model m (1), default tier"},
		{"most jobs first", Message{Account: "a", Project: "p", Batch: "b", Model: "m", Parts: 2, Part: 2,
			Jobs: []Job{job("1", "x"), job("2", ""), job("3", ""), job("4", "y")}},
			"a/p/b: 4 jobs, models m (2), x (1), y (1), default tier, part 2 of 2"},
		{"many models", Message{Account: "a", Project: "p", Batch: "b",
			Jobs: []Job{job("1", "m1"), job("2", "m2"), job("3", "m3"), job("4", "m4"), job("5", "m5"), job("6", "m6"), job("7", "m7")}},
			"a/p/b: 7 jobs, models m1 (1), m2 (1), m3 (1), m4 (1), m5 (1), +2 more, default tier"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Summary(); got != tc.want {
				t.Errorf("Summary() = %q\nwant        %q", got, tc.want)
			}
		})
	}
}

// bigMessage is a message of n jobs of about 104 bytes each: 10,000 of them
// come within 1% of SQS's 1 MiB.
func bigMessage(t testing.TB, n int) []byte {
	m := msg(n)
	for i, j := range m["jobs"].([]any) {
		j.(map[string]any)["env"].(map[string]any)["SPLIT"] = "test"
		j.(map[string]any)["env"].(map[string]any)["SEED"] = fmt.Sprintf("%08d", i*7919)
		j.(map[string]any)["env"].(map[string]any)["RUN"] = fmt.Sprintf("sweep-%07d", i)
	}
	data := marshal(t, m)
	if len(data) > MaxMessageBytes {
		t.Fatalf("built %d bytes, more than 1 MiB", len(data))
	}
	return data
}

// TestParseMemory checks that reading stays linear: a 10,000-job message
// allocates a small multiple of its size (most of it the env maps it returns), and ten times the jobs allocate
// about ten times as much.
func TestParseMemory(t *testing.T) {
	alloc := func(data []byte) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := Parse(data, cfg3); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, big := bigMessage(t, 1000), bigMessage(t, 10_000)
	a1, a10 := alloc(small), alloc(big)
	if a10 > 16*uint64(len(big)) {
		t.Errorf("a %d-byte message allocated %d bytes, more than 16× its size", len(big), a10)
	}
	if a10 > 15*a1 {
		t.Errorf("10× the jobs allocated %.1f× as much (%d vs %d bytes): not linear", float64(a10)/float64(a1), a10, a1)
	}
	t.Logf("%d bytes, 10,000 jobs: %d bytes allocated (%.1f×)", len(big), a10, float64(a10)/float64(len(big)))
}

func BenchmarkParse(b *testing.B) {
	data := bigMessage(b, 10_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, cfg3); err != nil {
			b.Fatal(err)
		}
	}
}
