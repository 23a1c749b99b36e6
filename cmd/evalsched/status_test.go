package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/awsfake"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/localaws"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// withTables starts DynamoDB Local, creates the tables under a prefix and
// points the CLI at them through the environment, as an operator would.
func withTables(t *testing.T) *dynamostore.Store {
	t.Helper()
	ctx := context.Background()
	endpoint := localaws.DynamoDB(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("EVALSCHED_TABLE_PREFIX", "cli-")
	client, err := dynamostore.LocalClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	st := dynamostore.New(client, dynamostore.DefaultTables("cli-"), scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 4})
	if err := st.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	// The model's operator item: the CLI reads it like the pass does.
	if err := st.PutModel(ctx, scheduler.ModelConfig{Name: "gpt-5.5", Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 4}); err != nil {
		t.Fatal(err)
	}
	b := memstore.BatchSpec{Account: "acme", Project: "search", Batch: "b17", Model: "gpt-5.5", Tier: 2}
	b2 := memstore.BatchSpec{Account: "lab", Project: "bulk", Batch: "big", Model: "gpt-5.5", Tier: 2}
	for _, k := range []string{"a", "b", "c"} {
		b.Jobs = append(b.Jobs, memstore.JobSpec{Key: k})
		b2.Jobs = append(b2.Jobs, memstore.JobSpec{Key: k})
	}
	for _, spec := range []memstore.BatchSpec{b2, b} {
		if _, err := st.Submit(ctx, spec, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func cliOut(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, _, code := cli(t, args...)
	return out, code
}

func TestPinStatusWhy(t *testing.T) {
	withTables(t)

	// A bad pin is refused with the pass's own reason, and nothing is written.
	if _, stderr, code := cli(t, "pin", "account#acme", "urgent"); code != exitFailed || !strings.Contains(stderr, `"urgent"`) {
		t.Fatalf("bad tier: got code %d, %q", code, stderr)
	}
	if _, stderr, code := cli(t, "pin", "acme", "0"); code != exitFailed || !strings.Contains(stderr, "scope") {
		t.Fatalf("bad scope: got code %d, %q", code, stderr)
	}
	out, stderr, code := cli(t, "pin", "account#acme", "0", "--expires", "2h", "--note", "launch week")
	if code != exitOK || !strings.Contains(out, "pinned account#acme to tier 0") {
		t.Fatalf("pin: got %d %q %q", code, out, stderr)
	}

	out, stderr, code = cli(t, "status")
	if code != exitOK {
		t.Fatalf("status: %d %s", code, stderr)
	}
	for _, want := range []string{"gpt-5.5", "acme/search/b17", "0 (account pin)", "lab/bulk/big", "2 (submitted)", "0/3 (0%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = cli(t, "status", "--json")
	var v struct {
		Models  []modelView `json:"models"`
		Batches []batchView `json:"batches"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || len(v.Models) != 1 || v.Models[0].Waiting != 6 || v.Models[0].Limit != 4 || v.Models[0].NextAdmit != 4 {
		t.Fatalf("status --json: got %d %+v from %s", code, v, out)
	}
	for _, b := range v.Batches {
		if b.Registered != 3 || b.Waiting != 3 {
			t.Errorf("status --json: batch %s registered %d waiting %d, want 3 and 3", b.Batch, b.Registered, b.Waiting)
		}
	}
	if got := admittedOf(412, 1000); got != "412/1000 (41%)" {
		t.Errorf("admittedOf(412, 1000) = %q", got)
	}

	out, _, code = cli(t, "why", "acme/search/b17")
	if code != exitOK || !strings.Contains(out, "tier 0 (account pin)") || !strings.Contains(out, "limit 4") {
		t.Errorf("why: got %d\n%s", code, out)
	}
	jobID := scheduler.JobID("acme", "search", "b17", "a")
	out, _, code = cli(t, "why", jobID)
	if code != exitOK || !strings.Contains(out, "WAITING, attempt 1 of 3") || !strings.Contains(out, "tier 0 (account pin)") {
		t.Errorf("why JOB: got %d\n%s", code, out)
	}
	if _, stderr, code := cli(t, "why", "nobody/none/none"); code != exitFailed || !strings.Contains(stderr, "no waiting jobs") {
		t.Errorf("why unknown: got %d %q", code, stderr)
	}

	// Pause the acme project: its jobs stop being admitted; the tier stays.
	if out, _, code := cli(t, "pause", "acme/search"); code != exitOK || !strings.Contains(out, "paused acme/search") {
		t.Fatalf("pause: got %d %q", code, out)
	}
	out, _, _ = cli(t, "status")
	if !strings.Contains(out, "paused (project#acme/search)") {
		t.Errorf("status after pause:\n%s", out)
	}
	out, _, _ = cli(t, "why", "acme/search/b17")
	if !strings.Contains(out, "paused by the pin project#acme/search") {
		t.Errorf("why after pause:\n%s", out)
	}
	if _, _, code := cli(t, "resume", "acme/search"); code != exitOK {
		t.Fatal("resume failed")
	}
	if out, _ = cliOut(t, "status"); strings.Contains(out, "paused (") {
		t.Errorf("status after resume:\n%s", out)
	}
	if _, stderr, code := cli(t, "pause", "acme//x"); code != exitUsage || !strings.Contains(stderr, "empty name") {
		t.Errorf("pause of a bad scope: got %d %q", code, stderr)
	}

	// Cancel the lab account's waiting jobs.
	if out, _, code := cli(t, "cancel", "lab"); code != exitOK || !strings.Contains(out, "cancelled 3 waiting jobs of lab") {
		t.Errorf("cancel: got %d %q", code, out)
	}
	if out, _ = cliOut(t, "status"); strings.Contains(out, "lab/bulk/big") {
		t.Errorf("status after cancel still lists the cancelled batch:\n%s", out)
	}

	if out, _, code := cli(t, "pin", "--delete", "account#acme"); code != exitOK || !strings.Contains(out, "removed") {
		t.Errorf("pin --delete: got %d %q", code, out)
	}
	out, _, _ = cli(t, "status")
	if !strings.Contains(out, "2 (submitted)") || strings.Contains(out, "account pin") {
		t.Errorf("after removing the pin:\n%s", out)
	}
}

func TestCancelStopsRunningTasks(t *testing.T) {
	ctx := context.Background()
	st := withTables(t)
	fake := awsfake.NewECS()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake.URL())
	// Two of lab/bulk/big's jobs are claimed and launched on the fake.
	jobs, err := st.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: "gpt-5.5", Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "lab", Project: "bulk", Batch: "big", Model: "gpt-5.5"}, Count: 2}}}}})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v %d", err, len(jobs))
	}
	client := ecs.New(ecs.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("t", "t", ""), BaseEndpoint: aws.String(fake.URL())})
	res := ecslauncher.New(client, ecslauncher.Config{Cluster: "sandbox", Subnets: []string{"s"}, ContainerName: "sandbox", DefaultTaskDefinition: "td:1"}, nil).Launch(ctx, jobs)
	if err := st.RecordLaunches(ctx, time.Now(), res); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := cli(t, "cancel", "lab/bulk/big", "--stop-running", "--cluster", "sandbox")
	if code != exitOK || !strings.Contains(out, "cancelled 1 waiting job of") || !strings.Contains(out, "stopped 2 tasks") {
		t.Fatalf("got %d %q %q", code, out, stderr)
	}
	if fake.Calls["StopTask"] != 2 {
		t.Errorf("got %d StopTask calls, want 2", fake.Calls["StopTask"])
	}
	for _, j := range jobs {
		got, _, err := st.Job(ctx, j.ID)
		if err != nil || got.State != memstore.Cancelled || got.Reason != "cancelled by an operator" {
			t.Errorf("job %s: got %s %q %v, want CANCELLED, cancelled by an operator", j.Key, got.State, got.Reason, err)
		}
	}
	// The slots are free and the breaker counts nothing: the provider did
	// nothing wrong.
	snap, err := st.Snapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Models {
		if m.Running+m.Starting != 0 || m.Outcomes.OK+m.Outcomes.ProviderFailed != 0 {
			t.Errorf("model %s: %d running, %d starting, outcomes %+v; want none", m.Config.Name, m.Running, m.Starting, m.Outcomes)
		}
	}
}
