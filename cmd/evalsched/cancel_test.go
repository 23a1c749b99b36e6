package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/devstack"
	"github.com/evalsched/evalsched/internal/dynamostore"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// waitingOf counts the jobs of a batch still WAITING.
func waitingOf(t *testing.T, st *dynamostore.Store, account, project, batch string, keys ...string) int {
	t.Helper()
	n := 0
	for _, k := range keys {
		j, ok, err := st.Job(context.Background(), domain.JobID(account, project, batch, k))
		if err != nil || !ok {
			t.Fatalf("job %s: %v %v", k, ok, err)
		}
		if j.State == domain.Waiting {
			n++
		}
	}
	return n
}

// TestCancelChecksBeforeWriting: a cancel whose --stop-running cannot be
// done refuses before it cancels anything.
func TestCancelChecksBeforeWriting(t *testing.T) {
	st := withTables(t)
	t.Setenv("EVALSCHED_CLUSTER", "")
	_, stderr, code := cli(t, "cancel", "lab/bulk/big", "--stop-running")
	if code != exitUsage || !strings.Contains(stderr, "--stop-running needs --cluster") || !strings.Contains(stderr, "nothing was cancelled") {
		t.Errorf("no cluster: got %d %q", code, stderr)
	}
	// The tables are local (withTables sets AWS_ENDPOINT_URL_DYNAMODB) and
	// ECS is not: the real ECS must not be called for local tasks.
	t.Setenv("AWS_ENDPOINT_URL_ECS", "")
	_, stderr, code = cli(t, "cancel", "lab/bulk/big", "--stop-running", "--cluster", "sandbox")
	if code != exitUsage || !strings.Contains(stderr, "AWS_ENDPOINT_URL_ECS") {
		t.Errorf("local tables, real ECS: got %d %q", code, stderr)
	}
	if n := waitingOf(t, st, "lab", "bulk", "big", "a", "b", "c"); n != 3 {
		t.Errorf("after refused cancels %d of 3 jobs wait, want all 3", n)
	}
	// An unknown scope: one message, on stderr, and a failure.
	if out, stderr, code := cli(t, "cancel", "nosuch/thing"); code != exitFailed || out != "" ||
		stderr != "evalsched cancel: nosuch/thing has no batches (evalsched batches lists them); nothing was cancelled\n" {
		t.Errorf("cancel of an unknown scope: got %d, stdout %q, stderr %q", code, out, stderr)
	}
	if out, stderr, code := cli(t, "cancel", "nosuch/thing", "--json"); code != exitFailed || stderr == "" || !strings.Contains(out, `"error"`) {
		t.Errorf("cancel --json of an unknown scope: got %d, stdout %q, stderr %q", code, out, stderr)
	}
	// --json: one object, no progress bar.
	out, stderr, code := cli(t, "cancel", "lab/bulk/big", "--json")
	var res struct {
		Scope     string `json:"scope"`
		Cancelled int    `json:"cancelled"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || res.Cancelled != 3 || res.Scope != "lab/bulk/big" || stderr != "" {
		t.Errorf("cancel --json: got %d %q %q", code, out, stderr)
	}
}

// TestCancelStopsLocalTasks runs local mode, takes the exports it prints as
// an operator would, and stops its running tasks with cancel
// --stop-running: the local world's ECS endpoint answers, and the jobs end
// CANCELLED.
func TestCancelStopsLocalTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local mode for several seconds")
	}
	ddb, sqsURL := localservers.DynamoDB(t), localservers.SQS(t)
	ctx, cancel := context.WithCancel(context.Background())
	// Run writes out alone until Ready, which reads what it printed.
	var out bytes.Buffer
	type started struct{ queueURL, printed string }
	ready, done := make(chan started, 1), make(chan error, 1)
	go func() {
		done <- devstack.Run(ctx, devstack.Options{
			DynamoDB: ddb, SQS: sqsURL, Prefix: "stop-", Speed: 20, Interval: time.Second, Out: &out,
			// Jobs that run for minutes: they are running when cancelled.
			Models: []devstack.Model{{Name: "gpt-5.5", Concurrency: 4, Call: 20 * time.Second, Think: 10 * time.Second, Calls: 100, Start: 2 * time.Second}},
			Ready:  func(u string) { ready <- started{u, out.String()} },
		})
	}()
	var local started
	select {
	case local = <-ready:
	case err := <-done:
		t.Fatalf("local mode ended before it was ready: %v", err)
	}
	defer func() { cancel(); <-done }()
	queueURL := local.queueURL
	for _, line := range strings.Split(local.printed, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
		}
	}
	if !strings.Contains(local.printed, "AWS_ENDPOINT_URL_ECS=http://127.0.0.1:") {
		t.Fatalf("local mode exports no loopback ECS endpoint:\n%s", local.printed)
	}

	// Submitted as an operator would, with the exports.
	var keys []string
	var jobs []map[string]any
	for i := range 6 {
		keys = append(keys, fmt.Sprint(i))
		jobs = append(jobs, map[string]any{"key": keys[i]})
	}
	file := filepath.Join(t.TempDir(), "batch.json")
	body, _ := json.Marshal(map[string]any{"version": 1, "account": "dev", "project": "try", "batch": "b1", "model": "gpt-5.5", "jobs": jobs})
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := cli(t, "submit", file, "--queue-url", queueURL); code != exitOK {
		t.Fatalf("submit: %d %s", code, stderr)
	}
	client, err := dynamostore.LocalClient(ctx, ddb)
	if err != nil {
		t.Fatal(err)
	}
	st := dynamostore.New(client, dynamostore.DefaultTables("stop-"), scheduler.ModelConfig{})
	states := func() map[domain.State]int {
		n := map[domain.State]int{}
		for _, k := range keys {
			if j, ok, err := st.Job(ctx, domain.JobID("dev", "try", "b1", k)); err == nil && ok {
				n[j.State]++
			}
		}
		return n
	}
	for deadline := time.Now().Add(60 * time.Second); states()[domain.Running] == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no job running after 60 s: %v", states())
		}
	}
	stdout, stderr, code := cli(t, "cancel", "dev/try/b1", "--stop-running")
	if code != exitOK || !strings.Contains(stdout, "stopped ") {
		t.Fatalf("cancel --stop-running: %d %q %q", code, stdout, stderr)
	}
	// Every job ends CANCELLED: the waiting ones by the cancel, the
	// launched ones by the stop, and none runs on in the world to succeed.
	time.Sleep(2 * time.Second)
	if got := states(); got[domain.Cancelled] != len(keys) {
		t.Errorf("after cancel --stop-running: %v, want all %d CANCELLED\n%s", got, len(keys), stdout)
	}
}

// TestCancelProgress: the bar counts jobs against the scope's total
// (cliout.Line draws it only on a terminal).
func TestCancelProgress(t *testing.T) {
	if got, want := cancelling("lab", 0, 19518), "cancelling lab [........................] 0/19,518 jobs"; got != want {
		t.Errorf("start: %q, want %q", got, want)
	}
	if got, want := cancelling("lab", 19518, 19518), "cancelling lab [########################] 19,518/19,518 jobs"; got != want {
		t.Errorf("end: %q, want %q", got, want)
	}
}
