package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/sandboxkit"
)

const jobs = 12

// TestABatchRunsToTheEnd follows one batch message from SQS to every job
// succeeded with its sandbox's verdict, through the four functions as they
// ship; a sibling's forged verdict for each job is refused, and no
// function's log shows a result token.
func TestABatchRunsToTheEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the three functions and the emulator")
	}
	ctx := context.Background()
	ddb, sqsURL := localservers.DynamoDB(t), localservers.SQS(t)
	ecsFake, cw := httpfake.NewECS(), httpfake.NewCloudWatch()
	t.Cleanup(ecsFake.Close)
	t.Cleanup(cw.Close)

	// The world: tables, the model's item, the queues.
	const prefix = "e2e-"
	store := dynamotest.Tables(t, ddb, prefix, scheduler.ModelConfig{})
	if err := store.PutModel(ctx, scheduler.ModelConfig{Name: "gpt-5.5", Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 4}); err != nil {
		t.Fatal(err)
	}
	sq := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsURL), Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	queueURL, dlqURL := createQueue(t, sq, "intake"), createQueue(t, sq, "intake-dlq")

	env := []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddb, "AWS_ENDPOINT_URL_SQS=" + sqsURL,
		"AWS_ENDPOINT_URL_ECS=" + ecsFake.URL(), "AWS_ENDPOINT_URL_CLOUDWATCH=" + cw.URL(),
		"EVALSCHED_TABLE_PREFIX=" + prefix, "EVALSCHED_DLQ_URL=" + dlqURL,
		"EVALSCHED_CLUSTER=sandbox", "EVALSCHED_SUBNETS=subnet-1", "EVALSCHED_SECURITY_GROUPS=sg-1",
		"EVALSCHED_DEFAULT_TASK_DEFINITION=eval-sandbox:1",
		// Three passes a second apart per invocation: the minute, shortened.
		"EVALSCHED_PASS_INTERVAL_SECONDS=1", "EVALSCHED_PASSES=3",
	}
	intake := localservers.Lambda(t, "intake", env...)
	sched := localservers.Lambda(t, "scheduler", env...)
	taskEvents := localservers.Lambda(t, "taskevents", env...)
	results := localservers.Lambda(t, "results", env...)

	// 1. A submitter sends the batch; SQS delivers it to the intake.
	msg := map[string]any{"version": 1, "account": "acme", "project": "search", "batch": "e2e", "model": "gpt-5.5", "tier": 1}
	var list []map[string]any
	for i := range jobs {
		list = append(list, map[string]any{"key": fmt.Sprintf("task-%02d", i), "env": map[string]string{"TASK_ID": fmt.Sprint(i)}})
	}
	msg["jobs"] = list
	body, _ := json.Marshal(msg)
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	recv, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil || len(recv.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(recv.Messages))
	}
	m := recv.Messages[0]
	var resp events.SQSEventResponse
	if err := json.Unmarshal(intake.Invoke(events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:intake", AWSRegion: "us-east-1",
	}}}), &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("intake: %v, failures %v\n%s", err, resp.BatchItemFailures, intake.Output())
	}

	// 2. Scheduler invocations launch; 3. the sandboxes run and stop, and
	// ECS's events reach the task-events function. Repeat until done.
	finished := map[string]bool{}
	for round := 0; len(finished) < jobs; round++ {
		if round == 12 {
			t.Fatalf("after %d rounds only %d of %d jobs finished\nscheduler:\n%s", round, len(finished), jobs, tail(sched.Output()))
		}
		now := time.Now()
		for s := 0; s < 5; s++ { // the gateway is idle: depth 0, fresh
			cw.Put("gpt-5.5", now.Add(-time.Duration(s)*time.Second), 0)
		}
		// Up to three passes: a pass that overruns its 1-s slot (a loaded
		// machine, a cold runtime) skips the next slot, as in production.
		var res struct{ Passes, Failed int }
		if err := json.Unmarshal(sched.Invoke(json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event","detail":{}}`)), &res); err != nil || res.Passes < 1 || res.Passes > 3 || res.Failed != 0 {
			t.Fatalf("scheduler round %d: %+v %v\n%s", round, res, err, tail(sched.Output()))
		}
		for _, task := range ecsFake.Tasks() {
			if finished[task.ARN] {
				continue
			}
			taskEvents.Invoke(stateChange(task, "RUNNING"))
			// The sandbox reports with the kit, from the environment the
			// launcher gave it; a sibling's forgery of its verdict (right
			// id and attempt, its own token) goes to the dead-letter queue.
			report(t, results, task.Env, sandboxkit.Pass)
			report(t, results, forged(task.Env, ecsFake.Tasks()), sandboxkit.Fail)
			taskEvents.Invoke(stateChange(task, "STOPPED"))
			// At least once: a duplicate STOPPED changes nothing.
			taskEvents.Invoke(stateChange(task, "STOPPED"))
			finished[task.ARN] = true
		}
	}

	// Every job succeeded once, with one task; the counters are back to zero.
	if n := len(ecsFake.Tasks()); n != jobs {
		t.Errorf("got %d tasks for %d jobs", n, jobs)
	}
	for i := range jobs {
		j, ok, err := store.Job(ctx, job.JobID("acme", "search", "e2e", fmt.Sprintf("task-%02d", i)))
		if err != nil || !ok || j.State != job.Succeeded || j.Attempt != 1 {
			t.Errorf("job %d: got %s attempt %d (%v)", i, j.State, j.Attempt, err)
		}
		if r, ok, err := store.JobResult(ctx, j.ID); err != nil || !ok || !r.Pass {
			t.Errorf("job %d: result %+v, %v, %v; want its own sandbox's pass, not the forged fail", i, r, ok, err)
		}
	}
	// Each task got its attempt's token, and no function wrote one out:
	// not the scheduler that drew and launched them, not the task-events
	// function that read them back in the events, not the results
	// function that checked them.
	for _, task := range ecsFake.Tasks() {
		tok := task.Env[sandboxkit.EnvResultToken]
		if !resulttoken.Valid(tok) {
			t.Fatalf("task %s was launched with result token %q", task.ARN, tok)
		}
		for name, fn := range map[string]*localservers.Function{"intake": intake, "scheduler": sched, "taskevents": taskEvents, "results": results} {
			if strings.Contains(fn.Output(), tok) {
				t.Errorf("the %s function's output shows task %s's result token", name, task.ARN)
			}
		}
	}
	if !strings.Contains(results.Output(), `"rejected":1`) || !strings.Contains(results.Output(), "result_token: not the token of job") {
		t.Errorf("the results function did not dead-letter the forgeries:\n%s", tail(results.Output()))
	}
	snap, err := store.Snapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Queues) != 0 || len(snap.Models) != 1 || snap.Models[0].Running != 0 || snap.Models[0].Starting != 0 {
		t.Errorf("after the batch: queues %v, models %+v", snap.Queues, snap.Models)
	}
	for _, want := range []string{`"JobLimit"`, `"msg":"pass"`} {
		if !strings.Contains(sched.Output(), want) {
			t.Errorf("the scheduler's output lacks %s", want)
		}
	}
	if !strings.Contains(taskEvents.Output(), `"JobRunSeconds"`) {
		t.Error("the task-events function wrote no job timings")
	}
}

func createQueue(t *testing.T, c *sqs.Client, name string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// stateChange is the EventBridge event ECS sends for a task, from what the
// fake recorded of its RunTask (startedBy and the container override).
func stateChange(task httpfake.Task, status string) map[string]any {
	now := time.Now().UTC()
	var envList []map[string]string
	for k, v := range task.Env {
		envList = append(envList, map[string]string{"name": k, "value": v})
	}
	container := map[string]any{"name": "sandbox", "lastStatus": status}
	detail := map[string]any{
		"taskArn": task.ARN, "startedBy": task.StartedBy, "group": task.Group, "lastStatus": status,
		"version": map[string]int{"RUNNING": 3, "STOPPED": 5}[status], "createdAt": now.Add(-time.Minute),
		"startedAt": now.Add(-30 * time.Second), "containers": []any{container},
		"overrides": map[string]any{"containerOverrides": []any{map[string]any{"name": "sandbox", "environment": envList}}},
	}
	if status == "STOPPED" {
		container["exitCode"] = 0
		detail["stopCode"], detail["stoppedReason"], detail["stoppedAt"] = "EssentialContainerExited", "Essential container in task exited", now
	}
	return map[string]any{"version": "0", "source": "aws.ecs", "detail-type": "ECS Task State Change", "time": now, "detail": detail}
}

// report sends a verdict as a sandbox with environment env does, with
// the kit, and hands the message to the results function as SQS would.
func report(t *testing.T, results *localservers.Function, env map[string]string, outcome sandboxkit.Outcome) {
	t.Helper()
	j, err := sandboxkit.JobFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var sent capture
	if err := (sandboxkit.SQSReporter{Client: &sent, QueueURL: "http://results"}).Report(context.Background(), sandboxkit.NewResult(j, outcome, nil, nil, nil)); err != nil {
		t.Fatal(err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(results.Invoke(events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: fmt.Sprintf("%s-%s", j.ID, outcome), Body: sent.body,
		EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:results", AWSRegion: "us-east-1",
	}}}), &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("results: %v, failures %v\n%s", err, resp.BatchItemFailures, tail(results.Output()))
	}
}

// forged is env with another task's result token: a sandbox that derived
// its sibling's id and attempt, speaking for it with the token it has.
func forged(env map[string]string, tasks []httpfake.Task) map[string]string {
	out := maps.Clone(env)
	for _, other := range tasks {
		if tok := other.Env[sandboxkit.EnvResultToken]; tok != env[sandboxkit.EnvResultToken] {
			out[sandboxkit.EnvResultToken] = tok
			return out
		}
	}
	out[sandboxkit.EnvResultToken] = resulttoken.New().Reveal() // the only task: a guess
	return out
}

// capture keeps the body the kit sends.
type capture struct{ body string }

func (c *capture) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.body = aws.ToString(in.MessageBody)
	return &sqs.SendMessageOutput{}, nil
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
