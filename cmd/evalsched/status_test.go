package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/httpfake"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/status"
)

// withTables starts DynamoDB Local, creates the tables under a prefix and
// points the CLI at them through the environment, as an operator would.
func withTables(t *testing.T) *dynamostore.Store {
	t.Helper()
	ctx := context.Background()
	endpoint := localservers.DynamoDB(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("EVALSCHED_TABLE_PREFIX", "cli-")
	st := dynamotest.Tables(t, endpoint, "cli-", scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 4})
	// The model's operator item: the CLI reads it like the pass does. Its
	// initial limit is above its provider's concurrency, so it starts at 4
	// (a model starts at the higher of the two) and 2 of its 6 jobs wait.
	if err := st.PutModel(ctx, scheduler.ModelConfig{Name: "gpt-5.5", Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 4, ProviderConcurrency: 3}); err != nil {
		t.Fatal(err)
	}
	b := domain.BatchSpec{Account: "acme", Project: "search", Batch: "b17", Model: "gpt-5.5", Tier: 2}
	b2 := domain.BatchSpec{Account: "lab", Project: "bulk", Batch: "big", Model: "gpt-5.5", Tier: 2}
	for _, k := range []string{"a", "b", "c"} {
		b.Jobs = append(b.Jobs, domain.JobSpec{Key: k})
		b2.Jobs = append(b2.Jobs, domain.JobSpec{Key: k})
	}
	for _, spec := range []domain.BatchSpec{b2, b} {
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
	for _, want := range []string{"gpt-5.5", "acme/search/b17", "0 (account pin)", "lab/bulk/big", "2 (submitted)", "0/3 (0%)", "PROVIDER CONC", "3 set"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = cli(t, "status", "--json")
	var v struct {
		Models  []status.ModelView `json:"models"`
		Batches []status.BatchView `json:"batches"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || len(v.Models) != 1 || v.Models[0].Waiting != 6 || v.Models[0].Limit != 4 || v.Models[0].NextAdmit != 4 || v.Models[0].ProviderConc != 3 || v.Models[0].SeenConc != 0 || v.Models[0].SeenConcAgeS != -1 || v.Models[0].SteerTarget != 0.05 {
		t.Fatalf("status --json: got %d %+v from %s", code, v, out)
	}
	for _, b := range v.Batches {
		if b.Registered != 3 || b.Waiting != 3 {
			t.Errorf("status --json: batch %s registered %d waiting %d, want 3 and 3", b.Batch, b.Registered, b.Waiting)
		}
	}
	out, _, code = cli(t, "why", "acme/search/b17")
	if code != exitOK || !strings.Contains(out, "tier 0 (account pin)") || !strings.Contains(out, "limit 4") ||
		!strings.Contains(out, "provider concurrency: 3 set; target depth steered to 0.05 of 10") {
		t.Errorf("why: got %d\n%s", code, out)
	}
	jobID := domain.JobID("acme", "search", "b17", "a")
	out, _, code = cli(t, "why", jobID)
	if code != exitOK || !strings.Contains(out, "WAITING, attempt 1 of 3") || !strings.Contains(out, "tier 0 (account pin)") {
		t.Errorf("why JOB: got %d\n%s", code, out)
	}
	if _, stderr, code := cli(t, "why", "nobody/none/none"); code != exitFailed || !strings.Contains(stderr, "no batch nobody/none/none") {
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
	if !strings.Contains(out, "paused (project#acme/search): run evalsched resume acme/search") {
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
	fake := httpfake.NewECS()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake.URL())
	// Two of lab/bulk/big's jobs are claimed and launched on the fake.
	committed, err := st.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: "gpt-5.5", Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "lab", Project: "bulk", Batch: "big", Model: "gpt-5.5"}, Count: 2}}}}}, nil)
	jobs := committed.Claimed
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
		if err != nil || got.State != domain.Cancelled || got.Reason != "cancelled by an operator" {
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

// TestFinishedBatchesStay: a batch none of whose jobs wait is listed with
// its jobs by state (batches, status --all, why), and why takes the user's
// names for a batch and a job.
func TestFinishedBatchesStay(t *testing.T) {
	ctx := context.Background()
	st := withTables(t)
	// lab/bulk/big: one succeeds, one fails, one is cancelled while waiting.
	committed, err := st.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: "gpt-5.5", Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "lab", Project: "bulk", Batch: "big", Model: "gpt-5.5"}, Count: 2}}}}}, nil)
	jobs := committed.Claimed
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v %d", err, len(jobs))
	}
	for i, j := range jobs {
		if err := st.TaskStarted(ctx, j.ID, j.Attempt, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := st.TaskStopped(ctx, j.ID, j.Attempt, domain.Exit{Code: i}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, code := cli(t, "cancel", "lab/bulk/big"); code != exitOK {
		t.Fatal("cancel failed")
	}
	// lab/bulk/flaky: its one job's provider failed (exit 75): it waits
	// again, a provider retry, not a failure.
	flaky := domain.BatchSpec{Account: "lab", Project: "bulk", Batch: "flaky", Model: "gpt-5.5", Tier: -1, Jobs: []domain.JobSpec{{Key: "f"}}}
	if _, err := st.Submit(ctx, flaky, time.Now()); err != nil {
		t.Fatal(err)
	}
	committed, err = st.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: "gpt-5.5", Grants: []scheduler.Grant{{
		Queue: scheduler.QueueKey{Account: "lab", Project: "bulk", Batch: "flaky", Model: "gpt-5.5"}, Count: 1}}}}}, nil)
	if err != nil || len(committed.Claimed) != 1 {
		t.Fatalf("claim flaky: %v %d", err, len(committed.Claimed))
	}
	if err := st.TaskStopped(ctx, committed.Claimed[0].ID, 1, domain.Exit{Code: 75, ProviderError: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// A batch of two parts of which one arrived.
	part := domain.BatchSpec{Account: "acme", Project: "search", Batch: "split", Model: "gpt-5.5", Tier: -1, Part: 1, Parts: 2, Jobs: []domain.JobSpec{{Key: "x"}}}
	if _, err := st.Submit(ctx, part, time.Now()); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := cli(t, "batches", "--json")
	var rows []status.BatchRow
	if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("batches --json: %d %q %q", code, out, stderr)
	}
	byName := map[string]status.BatchRow{}
	for _, r := range rows {
		byName[r.Batch] = r
	}
	wantRows := map[string]status.BatchRow{
		"lab/bulk/big":      {Batch: "lab/bulk/big", Model: "gpt-5.5", State: "finished", Registered: 3, Succeeded: 1, Failed: 1, Cancelled: 1},
		"acme/search/b17":   {Batch: "acme/search/b17", Model: "gpt-5.5", State: "waiting", Registered: 3, Waiting: 3},
		"acme/search/split": {Batch: "acme/search/split", Model: "gpt-5.5", State: "waiting", Registered: 1, Waiting: 1, PartsArrived: 1, PartsExpected: 2},
		"lab/bulk/flaky":    {Batch: "lab/bulk/flaky", Model: "gpt-5.5", State: "waiting", Registered: 1, Waiting: 1, ProviderRetries: 1},
	}
	if len(rows) != len(wantRows) {
		t.Errorf("batches: got %d rows %+v, want %d", len(rows), rows, len(wantRows))
	}
	for name, w := range wantRows {
		if byName[name] != w {
			t.Errorf("batches: %s\n got %+v\nwant %+v", name, byName[name], w)
		}
	}
	if out, _ := cliOut(t, "batches", "lab"); !strings.Contains(out, "lab/bulk/big") || strings.Contains(out, "acme/") || !strings.Contains(out, "finished") || !strings.Contains(out, "PROVIDER-RETRIES") {
		t.Errorf("batches lab:\n%s", out)
	}
	if out, _ := cliOut(t, "status", "--all"); !strings.Contains(out, "1 waiting of 1; 1 provider retries") {
		t.Errorf("status does not count lab/bulk/flaky's provider retry:\n%s", out)
	}

	// status --all lists the finished batch; plain status does not.
	out, _, _ = cli(t, "status", "--all", "--json")
	var v struct {
		Batches []status.BatchView `json:"batches"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range v.Batches {
		if b.Batch == "lab/bulk/big" {
			found = b.Jobs != nil && b.Jobs.Succeeded == 1 && b.Jobs.Failed == 1 && b.Jobs.Cancelled == 1 && b.Jobs.State == "finished"
		}
		if b.Jobs == nil {
			t.Errorf("status --all: batch %s has no counts", b.Batch)
		}
	}
	if !found {
		t.Errorf("status --all --json lacks lab/bulk/big with its counts:\n%s", out)
	}
	if out, _ := cliOut(t, "status", "--all"); !strings.Contains(out, "finished: 1 succeeded, 1 failed, 1 cancelled of 3") {
		t.Errorf("status --all:\n%s", out)
	}
	if out, _ := cliOut(t, "status"); strings.Contains(out, "lab/bulk/big") {
		t.Errorf("status without --all lists the finished batch:\n%s", out)
	}

	// why by the user's names: a finished batch, a job by its key.
	out, stderr, code = cli(t, "why", "lab/bulk/big")
	if code != exitOK || !strings.Contains(out, "finished, none waiting: 1 succeeded, 1 failed, 1 cancelled of 3") {
		t.Errorf("why finished batch: %d %q %q", code, out, stderr)
	}
	out, stderr, code = cli(t, "why", "acme/search/b17/b")
	if code != exitOK || !strings.Contains(out, "(b of acme/search/b17 on gpt-5.5): WAITING") || !strings.Contains(out, "3 waiting, tier 2") {
		t.Errorf("why ACCOUNT/PROJECT/BATCH/KEY: %d %q %q", code, out, stderr)
	}
	out, _, code = cli(t, "why", "lab/bulk/big/a")
	if code != exitOK || !strings.Contains(out, "SUCCEEDED") {
		t.Errorf("why of an ended job by key: %d %q", code, out)
	}
	if _, stderr, code := cli(t, "why", "acme/search/b17/nokey"); code != exitFailed || !strings.Contains(stderr, "no batch or job acme/search/b17/nokey") {
		t.Errorf("why of an unknown key: %d %q", code, stderr)
	}
}

// TestPauseApartFromPinsCLI: pin, pin --delete and a pin's expiry leave a
// pause alone; scopes are checked; pause then resume leaves no warning.
func TestPauseApartFromPinsCLI(t *testing.T) {
	st := withTables(t)
	paused := func() bool {
		t.Helper()
		out, _ := cliOut(t, "status")
		return strings.Contains(out, "paused (project#acme/search)")
	}
	if out, stderr, code := cli(t, "pause", "acme/search", "--json"); code != exitOK || !strings.Contains(out, `"paused": true`) {
		t.Fatalf("pause --json: %d %q %q", code, out, stderr)
	}
	for _, args := range [][]string{
		{"pin", "project#acme/search", "0"},
		{"pin", "project#acme/search", "1", "--expires", "1h"},
		{"pin", "--delete", "project#acme/search"},
	} {
		if _, stderr, code := cli(t, args...); code != exitOK {
			t.Fatalf("%v: %d %q", args, code, stderr)
		}
		if !paused() {
			t.Errorf("after %v the project is no longer paused", args)
		}
	}
	// An expired pin (as a console edit may leave one): the pause holds.
	if err := st.PutPin(context.Background(), priority.Pin{Scope: "project#acme/search", Tier: "1", ExpiresAt: "1"}); err != nil {
		t.Fatal(err)
	}
	if !paused() {
		t.Errorf("after the pin expired the project is no longer paused")
	}
	if out, _, code := cli(t, "resume", "acme/search"); code != exitOK || !strings.Contains(out, "resumed acme/search") {
		t.Fatalf("resume: %d %q", code, out)
	}
	if err := st.DeletePin(context.Background(), "project#acme/search"); err != nil {
		t.Fatal(err)
	}
	if out, _ := cliOut(t, "status"); paused() || strings.Contains(out, "warning") {
		t.Errorf("after resume:\n%s", out)
	}

	// Scopes: the pin form is refused with what a scope is; a scope with
	// no batches is refused unless --allow-empty.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pause", "project#beta/probe"}, exitUsage, `a pin item's form (project#…); here a scope is ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH, e.g. "beta/probe"`},
		{[]string{"pause", "acme/sea rch"}, exitUsage, `character ' ' outside`},
		{[]string{"pause", "nosuch/thing"}, exitFailed, "nosuch/thing has no batches"},
		{[]string{"resume", "acme//x"}, exitUsage, "empty name"},
		{[]string{"pause", "-h"}, exitOK, "SCOPE is ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH"},
	} {
		out, stderr, code := cli(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: got %d %q %q; want %d and %q", c.args, code, out, stderr, c.code, c.want)
		}
	}
	if out, stderr, code := cli(t, "pause", "nosuch/thing", "--allow-empty"); code != exitOK || !strings.Contains(out, "paused nosuch/thing") {
		t.Errorf("pause --allow-empty: %d %q %q", code, out, stderr)
	}
}

// TestConsoleTypingInStatusAndWhy: a limit_pin typed as the String "9" is
// 9, as a pin's tier "0" is 0; a malformed model item keeps its model in
// status, marked, and why says what is wrong with it; a disabled model shows.
func TestConsoleTypingInStatusAndWhy(t *testing.T) {
	ctx := context.Background()
	st := withTables(t)
	client, err := dynamostore.LocalClient(ctx, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	if err != nil {
		t.Fatal(err)
	}
	putItem := func(table string, item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	tables := dynamostore.DefaultTables("cli-")
	putItem(tables.Models, map[string]types.AttributeValue{"model": str("gpt-5.5"), "enabled": &types.AttributeValueMemberBOOL{Value: true}, "max_limit": str("100"), "limit_pin": str("9")})
	putItem(tables.Models, map[string]types.AttributeValue{"model": str("broken"), "limit_pin": str("nine")})
	if err := st.PutModel(ctx, scheduler.ModelConfig{Name: "off", Enabled: false, MinLimit: 1, MaxLimit: 10, TargetDepth: 10}); err != nil {
		t.Fatal(err)
	}
	putItem(tables.Pins, map[string]types.AttributeValue{"scope": str("account#acme"), "tier": str("0")})
	for _, m := range []string{"broken", "off"} {
		if _, err := st.Submit(ctx, domain.BatchSpec{Account: "acme", Project: "p", Batch: "on-" + m, Model: m, Tier: -1, Jobs: []domain.JobSpec{{Key: "k"}}}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}

	out, _, code := cli(t, "status", "--json")
	var v struct {
		Models []status.ModelView `json:"models"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("status --json: %d %s", code, out)
	}
	models := map[string]status.ModelView{}
	for _, m := range v.Models {
		models[m.Model] = m
	}
	if m := models["gpt-5.5"]; m.Limit != 9 || m.Malformed != "" {
		t.Errorf("gpt-5.5 (limit_pin the String \"9\"): got %+v, want limit 9", m)
	}
	if m := models["broken"]; !strings.Contains(m.Malformed, `limit_pin is the String "nine"`) || m.Waiting != 1 {
		t.Errorf("broken: got %+v, want it listed, malformed naming limit_pin, 1 waiting", m)
	}
	if m, ok := models["off"]; !ok || m.Enabled || m.Waiting != 1 {
		t.Errorf("off: got %+v (listed %v), want it listed disabled with 1 waiting", m, ok)
	}
	out, _ = cliOut(t, "status")
	for _, want := range []string{"MALFORMED item, its jobs wait: limit_pin", "disabled", "0 (account pin)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no model item") {
		t.Errorf("status calls the malformed item missing:\n%s", out)
	}

	out, _, code = cli(t, "why", "acme/p/on-broken")
	if code != exitOK || !strings.Contains(out, `its model item is malformed, so its jobs wait: limit_pin is the String "nine"`) ||
		strings.Contains(out, "limit 0") || strings.Contains(out, "no model item") {
		t.Errorf("why of a batch of the malformed model: %d\n%s", code, out)
	}
	out, _, _ = cli(t, "why", "acme/p/on-off")
	if !strings.Contains(out, "model disabled") || !strings.Contains(out, "unknown while the model is disabled") {
		t.Errorf("why of a batch of the disabled model:\n%s", out)
	}
}

// Status's dry run launches what the pass would: the launch rate over the
// configured pass interval (config.Config.Pass), not over a fixed 10 s.
// 0.2 launches a second over a 15 s pass is 3 a pass; over 10 s it was 2.
func TestStatusLaunchBudgetFollowsThePassInterval(t *testing.T) {
	withTables(t)
	t.Setenv("EVALSCHED_LAUNCH_RATE", "0.2")
	t.Setenv("EVALSCHED_PASS_INTERVAL_SECONDS", "15")
	out, stderr, code := cli(t, "status", "--json")
	var v struct {
		Models []status.ModelView `json:"models"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || len(v.Models) != 1 {
		t.Fatalf("status --json: got %d %s %s", code, out, stderr)
	}
	// The model's limit (4) leaves 4 slots free: the launch budget decides.
	if got := v.Models[0].NextAdmit; got != 3 {
		t.Errorf("next pass admits %d, want 3 (0.2/s × 15 s)", got)
	}
}
