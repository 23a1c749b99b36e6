package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	goodMessage = `{"version": 1, "account": "acme", "project": "search-evals", "batch": "2026-11-29-sweep-17",
		"model": "gpt-5.5", "tier": 2, "part": 1, "parts": 4,
		"jobs": [{"key": "task-000123", "env": {"TASK_ID": "000123"}},
		         {"key": "task-000124", "model": "claude-opus-4.8"}]}`
	goodSummary = "acme/search-evals/2026-11-29-sweep-17: 2 jobs, models gpt-5.5 (1), claude-opus-4.8 (1), tier 2, part 1 of 4\n"
	badMessage  = `{"version": 1, "account": "acme corp", "project": "p", "batch": "b", "model": "m",
		"jobs": [{"key": "k", "evn": {}}]}`
	tier4Message = `{"version": 1, "account": "a", "project": "p", "batch": "b", "model": "m", "tier": 4, "jobs": [{"key": "k"}]}`
	// issueMessage is issue 44's: env names with effects.
	issueMessage = `{"version": 1, "account": "a", "project": "p", "batch": "b", "model": "m", "jobs": [{"key": "k",
		"env": {"EVALSCHED_JOB_ID": "other-job", "PATH": "/evil", "LD_PRELOAD": "/x.so", "HTTPS_PROXY": "http://evil:1", "TASK_ID": "1"}}]}`
	pathMessage = `{"version": 1, "account": "a", "project": "p", "batch": "b", "model": "m", "jobs": [{"key": "k", "env": {"TASK_ID": "1", "PATH": "/evil"}}]}`
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad, tier4 := file("good.json", goodMessage), file("bad.json", badMessage), file("tier4.json", tier4Message)

	tests := []struct {
		name       string
		args       []string
		stdin      string
		code       int
		stdout     string // exact
		stderr     string // contained
		stderrNone bool
	}{
		{name: "good", args: []string{good}, code: 0, stdout: goodSummary, stderrNone: true},
		{name: "bad", args: []string{bad}, code: 1,
			stderr: bad + `: account: "acme corp" has characters outside A-Z a-z 0-9 . _ : / -` + "\n" +
				bad + `: jobs[0]: unknown field "evn"` + "\n"},
		{name: "stdin good", args: []string{"-"}, stdin: goodMessage, code: 0, stdout: goodSummary, stderrNone: true},
		{name: "stdin bad", args: []string{"-"}, stdin: `{"version": 2}`, code: 1,
			stderr: "<stdin>: version: 2 is not a supported version (only 1)\n"},
		{name: "stdin empty", args: []string{"-"}, code: 1, stderr: "<stdin>: message: empty\n"},
		{name: "stdin too large", args: []string{"-"}, stdin: strings.Repeat(" ", 2<<20), code: 1,
			stderr: "<stdin>: message: larger than SQS's limit of 1 MiB"},
		{name: "tier outside default tiers", args: []string{tier4}, code: 1, stderr: "tier: 4 is outside 0..2"},
		{name: "tier inside --tiers 5", args: []string{"--tiers", "5", tier4}, code: 0,
			stdout: "a/p/b: 1 job, model m (1), tier 4\n", stderrNone: true},
		{name: "flags after the file", args: []string{tier4, "--tiers=5", "--default-tier", "4"}, code: 0,
			stdout: "a/p/b: 1 job, model m (1), tier 4\n", stderrNone: true},
		{name: "missing file", args: []string{filepath.Join(dir, "nope.json")}, code: 1, stderr: "no such file"},
		{name: "no file", args: nil, code: 2, stderr: "want one FILE"},
		{name: "two files", args: []string{good, bad}, code: 2, stderr: "want one FILE"},
		{name: "unknown flag", args: []string{"--tier", "3", good}, code: 2, stderr: "flag provided but not defined"},
		{name: "tiers 0", args: []string{"--tiers", "0", good}, code: 2, stderr: "--tiers must be at least 1"},
		{name: "default tier outside", args: []string{"--default-tier", "3", good}, code: 2, stderr: "default tier: 3 is outside 0..2"},
		{name: "help", args: []string{"-h"}, code: 0, stderr: "usage: evalsched validate"},
		// The env policy, as the intake applies it (docs/env-policy.md).
		{name: "env policy", args: []string{"-"}, stdin: issueMessage, code: 1,
			stderr: "<stdin>: jobs[0].env.EVALSCHED_JOB_ID: refused by the env policy (EVALSCHED_*: the scheduler's own protocol (the launcher sets these))\n" +
				"<stdin>: jobs[0].env.PATH: refused by the env policy (PATH: where commands are found)\n" +
				"<stdin>: jobs[0].env.LD_PRELOAD: refused by the env policy (LD_*: the dynamic loader: changes what code a process loads)\n" +
				"<stdin>: jobs[0].env.HTTPS_PROXY: refused by the env policy (HTTPS_PROXY: a proxy: routes the container's traffic, the gateway's key with it, through another host)\n"},
		{name: "env allowlist", args: []string{"--env-allow", "SPLIT,EVAL_*", good}, code: 1,
			stderr: good + ": jobs[0].env.TASK_ID: not in the deployment's env allowlist (SPLIT, EVAL_*)\n"},
		{name: "env allowlist passes", args: []string{"--env-allow", "TASK_*", good}, code: 0, stdout: goodSummary, stderrNone: true},
		{name: "env allowlist refuses no less", args: []string{"--env-allow", "TASK_ID,PATH", "-"}, stdin: pathMessage, code: 1,
			stderr: "<stdin>: jobs[0].env.PATH: refused by the env policy (PATH: where commands are found)\n"},
		{name: "env allowlist malformed", args: []string{"--env-allow", "task_id", good}, code: 2, stderr: `env allowlist: "task_id" must be a name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := validate(tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if stdout.String() != tc.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tc.stdout)
			}
			switch {
			case tc.stderrNone && stderr.Len() > 0:
				t.Errorf("stderr %q, want none", stderr.String())
			case !strings.Contains(stderr.String(), tc.stderr):
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.stderr)
			}
		})
	}
}

func TestValidateIsDispatched(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "good.json")
	if err := os.WriteFile(p, []byte(goodMessage), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", p}, &stdout, &stderr); code != 0 || stdout.String() != goodSummary {
		t.Errorf("run validate: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
