package taskevent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// jobStore is what the attempts test drives: the writes of the intake, a
// pass and the task events, and a look at one job.
type jobStore interface {
	Store
	Submit(ctx context.Context, b job.BatchSpec, now time.Time) (int, error)
	Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error)
	RecordLaunches(ctx context.Context, now time.Time, results []scheduler.LaunchResult) error
}

// TestAttemptsEndToEnd: a job's attempts from the launcher to the store.
// The launcher writes the attempt into the task's overrides
// (EVALSCHED_ATTEMPT), ECS (httpfake) echoes them in its task, the event
// built from that task goes through the handler, and the store judges it
// by the attempt: attempt 2's RUNNING and STOPPED move attempt 2, and
// attempt 1's STOPPED, redelivered late, changes nothing. On the memory
// store and on DynamoDB Local.
func TestAttemptsEndToEnd(t *testing.T) {
	stores := map[string]func(t *testing.T) (jobStore, func(id string) (job.State, int)){
		"memstore": func(t *testing.T) (jobStore, func(string) (job.State, int)) {
			st := memstore.New(scheduler.ModelConfig{})
			return st, func(id string) (job.State, int) {
				j, _ := st.Job(id)
				return j.State, j.Attempt
			}
		},
		"dynamodb": func(t *testing.T) (jobStore, func(string) (job.State, int)) {
			srv, err := localservers.StartDynamoDB()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			client, err := dynamostore.LocalClient(context.Background(), srv.Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			st := dynamostore.New(client, dynamostore.DefaultTables("attempts-"), scheduler.ModelConfig{Enabled: true, MaxLimit: 10})
			if err := st.CreateTables(context.Background()); err != nil {
				t.Fatal(err)
			}
			return st, func(id string) (job.State, int) {
				j, _, err := st.Job(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				return j.State, j.Attempt
			}
		},
	}
	for _, name := range []string{"memstore", "dynamodb"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, jobOf := stores[name](t)
			fake := httpfake.NewECS()
			t.Cleanup(fake.Close)
			client := ecs.New(ecs.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("t", "t", ""),
				BaseEndpoint: aws.String(fake.URL()), RetryMaxAttempts: 1})
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			launcher := ecslauncher.New(client, ecslauncher.Config{Cluster: "sandbox", Subnets: []string{"s"}, ContainerName: "sandbox",
				DefaultTaskDefinition: "td:1", Rate: 1000, Burst: 1000}, quiet)
			h := &Handler{Store: st, Log: quiet}

			b := job.BatchSpec{Account: "acme", Project: "p", Batch: "b", Model: "gpt-5.5", Tier: -1, Jobs: []job.JobSpec{{Key: "k"}}}
			if _, err := st.Submit(ctx, b, t0); err != nil {
				t.Fatal(err)
			}
			plan := scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{Model: "gpt-5.5", Grants: []scheduler.Grant{{
				Queue: scheduler.QueueKey{Account: "acme", Project: "p", Batch: "b", Model: "gpt-5.5"}, Count: 1}}}}}
			launch := func(attempt int) *httpfake.Task {
				t.Helper()
				committed, err := st.Commit(ctx, plan, nil)
				jobs := committed.Claimed
				if err != nil || len(jobs) != 1 || jobs[0].Attempt != attempt {
					t.Fatalf("claim: %v %+v, want attempt %d", err, jobs, attempt)
				}
				if err := st.RecordLaunches(ctx, t0, launcher.Launch(ctx, jobs)); err != nil {
					t.Fatal(err)
				}
				tasks := fake.Tasks()
				return &tasks[len(tasks)-1]
			}
			id := job.JobID("acme", "p", "b", "k")
			want := func(step string, state job.State, attempt int) {
				t.Helper()
				if s, a := jobOf(id); s != state || a != attempt {
					t.Fatalf("after %s: job %s attempt %d, want %s attempt %d", step, s, a, state, attempt)
				}
			}

			first := launch(1)
			deliver(t, h, "ecs-running.json", first)
			want("attempt 1 RUNNING", job.Running, 1)
			deliver(t, h, "ecs-spot-interruption.json", first)
			want("attempt 1's spot interruption", job.Waiting, 2)

			second := launch(2)
			if second.Env["EVALSCHED_ATTEMPT"] != "2" {
				t.Fatalf("the second task's EVALSCHED_ATTEMPT is %q, want 2", second.Env["EVALSCHED_ATTEMPT"])
			}
			deliver(t, h, "ecs-running.json", second)
			want("attempt 2 RUNNING", job.Running, 2)
			deliver(t, h, "ecs-spot-interruption.json", first)
			want("attempt 1's STOPPED again", job.Running, 2)
			deliver(t, h, "ecs-stopped-exit0.json", second)
			want("attempt 2 STOPPED exit 0", job.Succeeded, 2)
		})
	}
}

// deliver sends a fixture event through the handler as the event of task:
// its ARN, startedBy and container overrides, as ECS reports them.
func deliver(t *testing.T, h *Handler, file string, task *httpfake.Task) {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(fixture(t, file), &ev); err != nil {
		t.Fatal(err)
	}
	var env []any
	for k, v := range task.Env {
		env = append(env, map[string]any{"name": k, "value": v})
	}
	d := ev["detail"].(map[string]any)
	d["taskArn"], d["startedBy"] = task.ARN, task.StartedBy
	d["overrides"] = map[string]any{"containerOverrides": []any{map[string]any{"name": "sandbox", "environment": env}}}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), raw); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
