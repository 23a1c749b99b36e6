package batchmsg

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// envMessage is a valid message whose one job has env.
func envMessage(t testing.TB, env map[string]string) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"version": 1, "account": "acme", "project": "p", "batch": "b", "model": "gpt",
		"jobs": []any{map[string]any{"key": "k", "env": env}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// example is a name a rule refuses: the name itself, or one with its prefix.
func example(r EnvRule) string {
	if r.Prefix {
		return r.Name + "X"
	}
	return r.Name
}

// TestEnvPolicyRefusesEveryListedName: each rule of DeniedEnv refuses its
// name (a prefix rule, a name with the prefix), naming the field
// jobs[0].env.<NAME> and the rule; with an allowlist that names it too.
func TestEnvPolicyRefusesEveryListedName(t *testing.T) {
	for _, r := range DeniedEnv {
		name := example(r)
		for _, allow := range [][]string{nil, {"TASK_ID", name}, {"TASK_ID", r.Name + "*"}} {
			cfg := cfg3
			cfg.EnvAllow = allow
			_, err := Parse(envMessage(t, map[string]string{"TASK_ID": "1", name: "x"}), cfg)
			errs := Errors(err)
			want := fmt.Sprintf("refused by the env policy (%s: %s)", r.Pattern(), r.Why)
			if len(errs) != 1 || errs[0].Field != "jobs[0].env."+name || errs[0].Rule != want {
				t.Errorf("%s, allowlist %v: got %v, want jobs[0].env.%s: %s", name, allow, err, name, want)
			}
		}
	}
}

// The issue's message: four names with effects, four reasons, each naming
// its field.
func TestEnvPolicyOnTheIssuesExample(t *testing.T) {
	_, err := Parse(envMessage(t, map[string]string{
		"EVALSCHED_JOB_ID": "other-job", "PATH": "/evil", "LD_PRELOAD": "/x.so", "HTTPS_PROXY": "http://evil:1",
		"BASH_ENV": "$(echo PWNED >&2)", "TASK_ID": "000123",
	}), cfg3)
	got := map[string]string{}
	for _, e := range Errors(err) {
		got[e.Field] = e.Rule
	}
	for field, rule := range map[string]string{
		"jobs[0].env.EVALSCHED_JOB_ID": "EVALSCHED_*", "jobs[0].env.PATH": "PATH:", "jobs[0].env.LD_PRELOAD": "LD_*",
		"jobs[0].env.HTTPS_PROXY": "a proxy", "jobs[0].env.BASH_ENV": "the shell's startup",
	} {
		if !strings.Contains(got[field], rule) {
			t.Errorf("%s: got %q, want a rule with %q", field, got[field], rule)
		}
	}
	if len(got) != 5 {
		t.Errorf("got %d errors %v, want 5 (TASK_ID is data)", len(got), got)
	}
}

// Names that carry data pass: near misses of the listed names among them.
func TestEnvPolicyPassesData(t *testing.T) {
	env := map[string]string{}
	for _, n := range []string{"TASK_ID", "SPLIT", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "HOMEWORK", "PATH_SUFFIX", "MY_PATH",
		"LD", "ENVIRONMENT", "GOAL", "NODE_ENV", "GITHUB_REF", "EVALSCHED", "AWS", "PROXY", "SSL_MODE"} {
		env[n] = "x"
	}
	if _, err := Parse(envMessage(t, env), cfg3); err != nil {
		t.Fatalf("Parse refused data: %v", err)
	}
}

// TestEnvAllowlist: with an allowlist only the names and prefixes it gives
// pass; the rest are refused naming the field and the list.
func TestEnvAllowlist(t *testing.T) {
	cfg := cfg3
	cfg.EnvAllow = []string{"TASK_ID", "EVAL_*"}
	if _, err := Parse(envMessage(t, map[string]string{"TASK_ID": "1", "EVAL_SPLIT": "test", "EVAL_": "x"}), cfg); err != nil {
		t.Fatalf("allowed names refused: %v", err)
	}
	_, err := Parse(envMessage(t, map[string]string{"TASK_ID": "1", "TASK_IDS": "2", "SPLIT": "test"}), cfg)
	errs := Errors(err)
	if len(errs) != 2 || errs[0].Field != "jobs[0].env.SPLIT" || errs[1].Field != "jobs[0].env.TASK_IDS" ||
		errs[0].Rule != "not in the deployment's env allowlist (TASK_ID, EVAL_*)" {
		t.Errorf("got %v; want SPLIT and TASK_IDS refused by the allowlist", err)
	}
	// An empty allowlist (set, no entries) allows nothing.
	cfg.EnvAllow = []string{}
	if _, err := Parse(envMessage(t, map[string]string{"TASK_ID": "1"}), cfg); err == nil {
		t.Error("an empty allowlist let TASK_ID through")
	}
}

func TestEnvAllowlistEntries(t *testing.T) {
	for _, bad := range [][]string{{"task_id"}, {"*"}, {"A*B"}, {"TASK ID"}, {"1A"}, {""}} {
		cfg := cfg3
		cfg.EnvAllow = bad
		if err := cfg.Validate(); err == nil {
			t.Errorf("allowlist %q accepted", bad)
		}
	}
	cfg := cfg3
	cfg.EnvAllow = []string{"TASK_ID", "EVAL_*", "X*"}
	if err := cfg.Validate(); err != nil {
		t.Errorf("allowlist %v: %v", cfg.EnvAllow, err)
	}
}

// FuzzEnvPolicy: whatever name and allowlist, Parse accepts a job's env
// name only if it keeps the character rule, no rule of DeniedEnv refuses
// it, and the allowlist (when set) has it; and it refuses a name with an
// *Error naming the field and a rule.
func FuzzEnvPolicy(f *testing.F) {
	for _, r := range DeniedEnv {
		f.Add(example(r), "")
	}
	f.Add("TASK_ID", "TASK_*")
	f.Add("LD_PRELOAD", "LD_*,TASK_ID")
	f.Add("PATH", "PATH")
	f.Add("path", "")
	f.Add("BASH_FUNC_x%%", "")
	f.Fuzz(func(t *testing.T, name, allow string) {
		cfg := cfg3
		if allow != "" {
			cfg.EnvAllow = strings.Split(allow, ",")
			if cfg.Validate() != nil {
				return
			}
		}
		data := envMessage(t, map[string]string{name: "v"})
		_, err := Parse(data, cfg)
		_, denied := deniedEnv(name)
		ok := validEnvName(name) && !denied && (cfg.EnvAllow == nil || EnvAllowed(name, cfg.EnvAllow))
		switch {
		case ok && err != nil:
			t.Fatalf("%q (allowlist %q) refused: %v", name, allow, err)
		case !ok && err == nil:
			t.Fatalf("%q (allowlist %q) accepted", name, allow)
		case err != nil:
			for _, e := range Errors(err) {
				if !strings.HasPrefix(e.Field, "jobs[0].env") || e.Rule == "" {
					t.Fatalf("%q: error %#v names no env field and rule", name, e)
				}
			}
		}
		// No name a rule refuses is accepted, whatever its case-sensitive spelling.
		if err == nil && (strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "EVALSCHED_") || name == "PATH") {
			t.Fatalf("%q accepted", name)
		}
	})
}

// envPolicyTable renders DeniedEnv as docs/env-policy.md shows it: one
// row per reason, its names in the list's order.
func envPolicyTable() string {
	var b strings.Builder
	b.WriteString("| refused names | why |\n|---|---|\n")
	var whys []string
	names := map[string][]string{}
	for _, r := range DeniedEnv {
		if _, seen := names[r.Why]; !seen {
			whys = append(whys, r.Why)
		}
		names[r.Why] = append(names[r.Why], "`"+r.Pattern()+"`")
	}
	for _, w := range whys {
		fmt.Fprintf(&b, "| %s | %s |\n", strings.Join(names[w], " "), w)
	}
	return b.String()
}

// TestEnvPolicyDoc: docs/env-policy.md lists exactly DeniedEnv, between
// its markers.
func TestEnvPolicyDoc(t *testing.T) {
	data, err := os.ReadFile("../../docs/env-policy.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- env-policy:begin (internal/batchmsg.DeniedEnv; its test checks this table) -->\n", "<!-- env-policy:end -->"
	_, rest, ok1 := strings.Cut(string(data), begin)
	table, _, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("docs/env-policy.md lacks the markers %q … %q", begin, end)
	}
	if want := envPolicyTable(); table != want {
		t.Errorf("docs/env-policy.md's table is not DeniedEnv's; want:\n%s", want)
	}
}
