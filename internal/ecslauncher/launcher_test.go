package ecslauncher

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func client(url string) *ecs.Client {
	return ecs.New(ecs.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(url),
		RetryMaxAttempts: 1, // the launcher does its own retrying
	})
}

func config() Config {
	return Config{Cluster: "sandbox", Subnets: []string{"subnet-1"}, SecurityGroups: []string{"sg-1"},
		ContainerName: "sandbox", DefaultTaskDefinition: "eval-sandbox:1", Rate: 1000, Burst: 1000, Backoff: time.Millisecond}
}

func jobs(n int) []scheduler.Job {
	var out []scheduler.Job
	for i := range n {
		out = append(out, scheduler.Job{
			ID: job.JobID("acme", "search", "b1", fmt.Sprint(i)), Account: "acme", Project: "search", Batch: "b1",
			Key: fmt.Sprint(i), Model: "gpt-5.5", Attempt: 1, MaxAttempts: 3, Env: map[string]string{"TASK_ID": fmt.Sprint(i)},
		})
	}
	return out
}

func TestLaunchStartsOneTaskPerJob(t *testing.T) {
	fake := httpfake.NewECS()
	defer fake.Close()
	l := New(client(fake.URL()), config(), nil)
	js := jobs(30)
	res := l.Launch(context.Background(), js)
	for i, r := range res {
		if r.Status != scheduler.Launched || r.JobID != js[i].ID || r.TaskARN == "" {
			t.Fatalf("result %d: got %+v, want launched for %s", i, r, js[i].ID)
		}
	}
	tasks := fake.Tasks()
	if len(tasks) != 30 {
		t.Fatalf("got %d tasks, want 30", len(tasks))
	}
	task := tasks[0]
	for _, tk := range tasks {
		if tk.StartedBy == js[0].ID {
			task = tk
		}
	}
	want := map[string]string{"TASK_ID": "0", "EVALSCHED_JOB_ID": js[0].ID, "EVALSCHED_BATCH": "acme/search/b1",
		"EVALSCHED_MODEL": "gpt-5.5", "EVALSCHED_ATTEMPT": "1"}
	for k, v := range want {
		if task.Env[k] != v {
			t.Errorf("env %s: got %q, want %q", k, task.Env[k], v)
		}
	}
	if task.Group != "model:gpt-5.5" || task.TaskDefinition != "eval-sandbox:1" || task.Capacity != "FARGATE" {
		t.Errorf("got group %q task definition %q capacity %q", task.Group, task.TaskDefinition, task.Capacity)
	}
}

func TestRetriedLaunchNeverStartsASecondTask(t *testing.T) {
	for _, conflict := range []bool{false, true} {
		t.Run(fmt.Sprintf("conflict=%v", conflict), func(t *testing.T) {
			fake := httpfake.NewECS()
			defer fake.Close()
			l := New(client(fake.URL()), config(), nil)
			js := jobs(3)
			first := l.Launch(context.Background(), js)
			fake.ConflictTokens = conflict
			// The same attempt again, as after a timeout: the same tasks come back.
			again := l.Launch(context.Background(), js)
			for i := range js {
				if again[i].Status != scheduler.Launched || again[i].TaskARN != first[i].TaskARN {
					t.Errorf("job %d: got %+v, want the first task %s", i, again[i], first[i].TaskARN)
				}
			}
			if n := len(fake.Tasks()); n != 3 {
				t.Errorf("got %d tasks, want 3", n)
			}
		})
	}
}

func TestThrottlingBacksOffAndRetries(t *testing.T) {
	fake := httpfake.NewECS()
	defer fake.Close()
	fake.Throttle = 2
	l := New(client(fake.URL()), config(), nil)
	res := l.Launch(context.Background(), jobs(1))
	if res[0].Status != scheduler.Launched {
		t.Fatalf("got %+v, want launched after two throttles", res[0])
	}
	if fake.Calls["RunTask"] != 3 {
		t.Errorf("got %d RunTask calls, want 3", fake.Calls["RunTask"])
	}
	fake.Throttle = 100
	res = l.Launch(context.Background(), jobs(1)[:1])
	if res[0].Status != scheduler.Retry || !strings.Contains(res[0].Reason, "Throttling") {
		t.Errorf("got %+v, want a retry naming the throttling", res[0])
	}
}

func TestCapacityFailuresRetryAndSpotFallsBack(t *testing.T) {
	fake := httpfake.NewECS()
	defer fake.Close()
	fake.CapacityFail = map[string]bool{FargateSpot: true}
	cfg := config()
	cfg.Capacity = FargateSpot
	res := New(client(fake.URL()), cfg, nil).Launch(context.Background(), jobs(1))
	if res[0].Status != scheduler.Retry || !strings.Contains(res[0].Reason, "capacity") {
		t.Fatalf("spot only: got %+v, want a capacity retry", res[0])
	}
	cfg.Capacity = SpotFallback
	res = New(client(fake.URL()), cfg, nil).Launch(context.Background(), jobs(1))
	if res[0].Status != scheduler.Launched {
		t.Fatalf("spot with fallback: got %+v, want launched on demand", res[0])
	}
	if tasks := fake.Tasks(); len(tasks) != 1 || tasks[0].Capacity != Fargate {
		t.Errorf("got tasks %+v, want one on FARGATE", tasks)
	}
}

func TestConfigurationErrorsFailTheJobNotThePass(t *testing.T) {
	fake := httpfake.NewECS()
	defer fake.Close()
	fake.MissingTaskDefinitions = map[string]bool{"gone:1": true}
	js := jobs(2)
	js[0].TaskDefinition = "gone:1"
	res := New(client(fake.URL()), config(), nil).Launch(context.Background(), js)
	if res[0].Status != scheduler.Failed || !strings.Contains(res[0].Reason, "TaskDefinition not found") {
		t.Errorf("got %+v, want failed with the reason kept", res[0])
	}
	if res[1].Status != scheduler.Launched {
		t.Errorf("got %+v, want the other job launched", res[1])
	}
}

func TestClientTokenFitsECS(t *testing.T) {
	j := jobs(1)[0]
	j.Attempt = 10
	if tok := ClientToken(j, Fargate); len(tok) > 64 {
		t.Errorf("token %q is %d characters, ECS allows 64", tok, len(tok))
	}
	if a, b := ClientToken(j, FargateSpot), ClientToken(j, Fargate); a == b {
		t.Errorf("spot and on-demand tries share token %q", a)
	}
}

// BenchmarkLaunchRate measures jobs launched per second against the fake
// with the real token bucket at its default 20/s, burst 100: with work
// waiting, the rate must come within 5 % of the bucket.
func BenchmarkLaunchRate(b *testing.B) {
	fake := httpfake.NewECS()
	defer fake.Close()
	cfg := config()
	cfg.Rate, cfg.Burst = 20, 100
	l := New(client(fake.URL()), cfg, nil)
	l.Launch(context.Background(), jobs(100)) // drain the burst
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		n += len(l.Launch(context.Background(), jobs(40)))
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "launches/s")
}

// A scheduler shard resizes the bucket to its share every pass.
func TestSetRateResizesTheBucket(t *testing.T) {
	l := New(nil, Config{Rate: 20, Burst: 100}, nil)
	l.SetRate(5, 25)
	if got := l.limiter.Limit(); got != 5 {
		t.Errorf("rate %v, want 5", got)
	}
	if got := l.limiter.Burst(); got != 25 {
		t.Errorf("burst %d, want 25", got)
	}
	l.SetRate(0.05, 0) // a shard with nothing to launch keeps a burst of 1
	if got := l.limiter.Burst(); got != 1 {
		t.Errorf("burst %d, want 1", got)
	}
}

// TestOnlyTheEnvironmentComesFromTheJob: of a RunTask request, the job
// gives the container's environment and the task definition's revision of
// the stack's family, nothing else: no command, image, role, network or
// capacity; the launcher's EVALSCHED_* values (the attempt's result token
// among them) replace any a stored job carries, and a launch failure's log
// line never shows the token.
func TestOnlyTheEnvironmentComesFromTheJob(t *testing.T) {
	j := jobs(1)[0]
	j.ResultToken = resulttoken.New()
	j.TaskDefinition = "eval-sandbox:7"
	j.Env = map[string]string{"TASK_ID": "1", "EVALSCHED_JOB_ID": "someone-else", "EVALSCHED_RESULT_TOKEN": "forged"}
	var logged bytes.Buffer
	l := New(nil, config(), slog.New(slog.NewJSONHandler(&logged, nil)))
	in := l.input(j, Fargate)
	o := in.Overrides
	if len(o.ContainerOverrides) != 1 {
		t.Fatalf("%d container overrides, want 1", len(o.ContainerOverrides))
	}
	c := o.ContainerOverrides[0]
	if c.Command != nil || c.Cpu != nil || c.Memory != nil || c.EnvironmentFiles != nil || c.ResourceRequirements != nil ||
		o.TaskRoleArn != nil || o.ExecutionRoleArn != nil || o.Cpu != nil || o.Memory != nil || o.EphemeralStorage != nil ||
		aws.ToString(c.Name) != "sandbox" {
		t.Errorf("the overrides hold more than the environment: %+v %+v", o, c)
	}
	net := in.NetworkConfiguration.AwsvpcConfiguration
	if aws.ToString(in.TaskDefinition) != "eval-sandbox:7" || aws.ToString(in.Cluster) != "sandbox" ||
		!slices.Equal(net.Subnets, []string{"subnet-1"}) || !slices.Equal(net.SecurityGroups, []string{"sg-1"}) {
		t.Errorf("got task definition %s, cluster %s, network %+v", aws.ToString(in.TaskDefinition), aws.ToString(in.Cluster), net)
	}
	env := map[string]string{}
	for _, kv := range c.Environment {
		env[aws.ToString(kv.Name)] = aws.ToString(kv.Value)
	}
	if env["EVALSCHED_JOB_ID"] != j.ID || env["EVALSCHED_RESULT_TOKEN"] != j.ResultToken.Reveal() || env["TASK_ID"] != "1" {
		t.Errorf("environment %v: want the launcher's job id and token over the job's, and TASK_ID", env)
	}

	// A configuration failure is logged with the job; the token stays out.
	fake := httpfake.NewECS()
	defer fake.Close()
	fake.MissingTaskDefinitions = map[string]bool{"eval-sandbox:7": true}
	l = New(client(fake.URL()), config(), slog.New(slog.NewJSONHandler(&logged, nil)))
	if r := l.Launch(context.Background(), []scheduler.Job{j}); r[0].Status != scheduler.Failed {
		t.Fatalf("launch of a missing task definition: %+v", r[0])
	}
	if !strings.Contains(logged.String(), j.ID) || strings.Contains(logged.String(), j.ResultToken.Reveal()) {
		t.Errorf("the launch failure's log names the job, not the token:\n%s", logged.String())
	}
}
