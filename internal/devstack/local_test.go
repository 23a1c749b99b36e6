package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestLocalRunsASubmittedBatch runs the local mode against the servers the
// test starts, submits a batch to its queue as `evalsched submit` would, and
// waits for every job to succeed. What an operator must see is printed: the
// exports boto3 and the AWS CLI need, the dead-letter queue, a rejected
// message with its reason, a conflict, a malformed pin's warning; the pass
// log is in the file it names. The simulated sandboxes send their verdicts
// to the results queue, which the local results function polls: every job
// that ran has its verdict recorded, and a sampled batch stops on them,
// its rest SKIPPED.
func TestLocalRunsASubmittedBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local mode for several seconds")
	}
	ddb, sqsURL := localservers.DynamoDB(t), localservers.SQS(t)
	ctx, queueURL, out, logFile := startLocal(t, ddb, sqsURL, "local-", 50,
		Model{Name: "gpt-5.5", Concurrency: 4, Call: 2 * time.Second, Think: time.Second, Calls: 3, Start: 10 * time.Second})

	sq := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsURL), Credentials: credentials.NewStaticCredentialsProvider("l", "l", "")})
	var jobs []map[string]any
	for i := range 8 {
		jobs = append(jobs, map[string]any{"key": fmt.Sprint(i)})
	}
	body, _ := json.Marshal(map[string]any{"version": 1, "account": "dev", "project": "try", "batch": "b1", "model": "gpt-5.5", "jobs": jobs})
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	// A message the intake rejects, one that conflicts with the batch (job
	// 0 with another env), and a pin the pass must skip.
	for _, bad := range []string{
		`{"version": 1, "account": "dev", "project": "try", "batch": "b2", "model": "gpt-5.5", "tier": 7, "jobs": [{"key": "x"}]}`,
		`{"version": 1, "account": "dev", "project": "try", "batch": "b1", "model": "gpt-5.5", "jobs": [{"key": "0", "env": {"X": "1"}}]}`,
	} {
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(bad)}); err != nil {
			t.Fatal(err)
		}
	}

	client, err := dynamostore.LocalClient(ctx, ddb)
	if err != nil {
		t.Fatal(err)
	}
	store := dynamostore.New(client, dynamostore.DefaultTables("local-"), scheduler.ModelConfig{})
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(dynamostore.DefaultTables("local-").Pins), Item: map[string]ddbtypes.AttributeValue{
		"scope": &ddbtypes.AttributeValueMemberS{Value: "account#dev"}, "tier": &ddbtypes.AttributeValueMemberS{Value: "urgent"},
	}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok := 0
		for i := range 8 {
			j, found, err := store.Job(ctx, job.JobID("dev", "try", "b1", fmt.Sprint(i)))
			if err == nil && found && j.State == job.Succeeded {
				ok++
			}
		}
		if ok == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 8 jobs succeeded after 60 s\n%s", ok, out)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Each job's verdict reached the store through the results queue.
	deadline = time.Now().Add(30 * time.Second)
	for i := 0; i < 8; {
		id := job.JobID("dev", "try", "b1", fmt.Sprint(i))
		j, _, _ := store.Job(ctx, id)
		r, ok, err := store.JobResult(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if r.Attempt != j.Attempt {
				t.Errorf("job %d: verdict of attempt %d, the job is at %d", i, r.Attempt, j.Attempt)
			}
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: no verdict recorded after 30 s\n%s", i, out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A sampled batch stops on the verdicts: its rest ends SKIPPED. Its
	// window keeps the claims past the counted prefix few, else the
	// passes would claim most of it while the prefix waits for the slow.
	var sampledJobs []map[string]any
	for i := range 200 {
		sampledJobs = append(sampledJobs, map[string]any{"key": fmt.Sprintf("s%03d", i), "stratum": []string{"easy", "hard"}[i%2]})
	}
	body, _ = json.Marshal(map[string]any{"version": 1, "account": "dev", "project": "try", "batch": "s1", "model": "gpt-5.5",
		"sampling": map[string]any{"moe": 0.25, "confidence": 0.5, "min_per_stratum": 2, "window": 10}, "jobs": sampledJobs})
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		rows, err := store.Batches(ctx, scheduler.Scope{Account: "dev", Project: "try", Batch: "s1"})
		if err == nil && len(rows) == 1 && rows[0].Skipped > 0 && rows[0].Waiting == 0 {
			sb, _, err := store.Sampled(ctx, "dev/try/s1")
			if err != nil || !sb.Stopped && !sb.Estimate.Stop || sb.Estimate.Results == 0 || rows[0].Skipped < 100 {
				t.Errorf("sampled batch: %+v, %+v, %v; want stopped on its results, most of it skipped", rows[0], sb.Estimate, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sampled batch did not stop after 60 s: %+v %v\n%s", rows, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}

	for _, want := range []string{
		"export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1",
		"export EVALSCHED_RESULT_QUEUE_URL=http://",
		"dead-letter queue http://",
		"EVALSCHED_DLQ_URL=http://",
		"--endpoint-url " + sqsURL,
		"pass log          " + logFile,
		"rejected to the dead-letter queue: tier: 7 is outside 0..2",
		"intake: dev/try/b1: 8 jobs, 8 new",
		`intake: dev/try/b1: conflicts with the stored batch, nothing stored, message `,
		`to the dead-letter queue: jobs[0].env: differs from the stored job "0" in X`,
		`warning: pin "account#dev"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(b), `"msg":"pass"`) {
		t.Errorf("the pass log %s has no pass line (%v)", logFile, err)
	}
}

// TestLocalYields runs the local mode with a model whose gateway overloads:
// one call at a time at its provider, so every job running past the first
// queues a call, and starts long enough that the pass sees tasks still
// starting while the queue is over its target. The pass's yield step stops
// some through the world's ECS endpoint (the SDK's StopTask over HTTP),
// their STOPPED events come back as yields, and the jobs run again at their
// next attempt, none spent: every job succeeds, some at attempt 2 or
// later, each with its max attempts raised by its yields.
func TestLocalYields(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local mode for several seconds")
	}
	ddb, sqsURL := localservers.DynamoDB(t), localservers.SQS(t)
	ctx, queueURL, out, logFile := startLocal(t, ddb, sqsURL, "yield-", 20,
		Model{Name: "hot", Concurrency: 2, Call: 4 * time.Second, Think: 2 * time.Second, Calls: 8, Start: 60 * time.Second})

	sq := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsURL), Credentials: credentials.NewStaticCredentialsProvider("l", "l", "")})
	client, err := dynamostore.LocalClient(ctx, ddb)
	if err != nil {
		t.Fatal(err)
	}
	store := dynamostore.New(client, dynamostore.DefaultTables("yield-"), scheduler.ModelConfig{})
	// A yield needs a datapoint over the target while some of the model's
	// tasks still start, which the world's timing gives in most batches but
	// not in every one: batches follow each other until one has yielded.
	const n, batches = 20, 4
	relaunched, total := 0, 0
	for b := 1; b <= batches && relaunched == 0; b++ {
		batch := fmt.Sprintf("y%d", b)
		var jobs []map[string]any
		for i := range n {
			jobs = append(jobs, map[string]any{"key": fmt.Sprint(i)})
		}
		body, _ := json.Marshal(map[string]any{"version": 1, "account": "dev", "project": "hot", "batch": batch, "model": "hot", "jobs": jobs})
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body))}); err != nil {
			t.Fatal(err)
		}
		var got []dynamostore.Job
		deadline := time.Now().Add(120 * time.Second)
		for {
			got = got[:0]
			for i := range n {
				j, found, err := store.Job(ctx, job.JobID("dev", "hot", batch, fmt.Sprint(i)))
				if err == nil && found && j.State == job.Succeeded {
					got = append(got, j)
				}
			}
			if len(got) == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("batch %s: %d of %d jobs succeeded after 120 s\n%s", batch, len(got), n, out)
			}
			time.Sleep(500 * time.Millisecond)
		}
		total += n
		for _, j := range got {
			if j.Attempt > 1 {
				relaunched++
			}
			// The world fails nothing: every attempt past the first is a
			// yield's, and each raised the max attempts by one.
			if j.MaxAttempts != job.DefaultMaxAttempts+j.Attempt-1 {
				t.Errorf("job %s: attempt %d, max attempts %d; want %d (a yield spends no attempt)", j.ID, j.Attempt, j.MaxAttempts, job.DefaultMaxAttempts+j.Attempt-1)
			}
		}
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if relaunched == 0 || !strings.Contains(string(b), `"msg":"yield: stopped starting tasks"`) || !strings.Contains(string(b), `"yielded":`) {
		t.Errorf("%d of %d jobs ran past attempt 1; want some, and the pass log naming the yield step's stops; the pass log:\n%s", relaunched, total, b)
	}
	t.Logf("%d of %d jobs relaunched after a yield", relaunched, total)

}

// TestLocalDepthReachesThePassThroughTheBridge: the gateway's depth takes
// the production path. The world's gateway serves /metrics in vLLM's
// format, the bridge writes it to the readings item of the state table on
// DynamoDB Local, and the pass reads it back with depthitem's reader (the
// world no longer hands the pass its queue): a model whose provider serves
// one call at a time queues calls, and the pass log shows that depth.
func TestLocalDepthReachesThePassThroughTheBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local mode for several seconds")
	}
	ddb, sqsURL := localservers.DynamoDB(t), localservers.SQS(t)
	ctx, queueURL, out, logFile := startLocal(t, ddb, sqsURL, "depth-", 20,
		Model{Name: "deep", Concurrency: 1, Call: 4 * time.Second, Think: time.Second, Calls: 20, Start: 5 * time.Second})
	m := regexp.MustCompile(`gateway /metrics  (http://127\.0\.0\.1:\d+/metrics) .* readings item in table (\S+),`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the output names no /metrics on 127.0.0.1 and readings table:\n%s", out)
	}
	sq := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsURL), Credentials: credentials.NewStaticCredentialsProvider("l", "l", "")})
	var jobs []map[string]any
	for i := range 6 {
		jobs = append(jobs, map[string]any{"key": fmt.Sprint(i)})
	}
	body, _ := json.Marshal(map[string]any{"version": 1, "account": "dev", "project": "deep", "batch": "d1", "model": "deep", "jobs": jobs})
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	// 1. The pass log shows a queue on the model.
	depth := regexp.MustCompile(`"deep":\{"depth":([0-9.]+)`)
	deadline, seen := time.Now().Add(60*time.Second), 0.0
	for seen == 0 {
		b, _ := os.ReadFile(logFile)
		for _, d := range depth.FindAllStringSubmatch(string(b), -1) {
			if v, _ := strconv.ParseFloat(d[1], 64); v > seen {
				seen = v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pass read a depth above 0 for deep after 60 s; the pass log:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// 2. The gateway serves vLLM's exposition of the model.
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(exp), `vllm:num_requests_waiting{engine="0",model_name="deep"}`) {
		t.Errorf("/metrics serves\n%s\nwant vLLM's num_requests_waiting of deep", exp)
	}
	// 3. The readings item holds the bridge's readings, read as the pass
	// reads them.
	client, err := dynamostore.LocalClient(ctx, ddb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := (&depthitem.Reader{API: client, Table: m[2]}).Depths(ctx, []string{"deep"}, time.Now())
	if err != nil || got["deep"].At.Before(time.Now().Add(-5*time.Second)) {
		t.Errorf("readings item: %+v, %v; want a reading of the last seconds", got, err)
	}
	if got["deep"].InServiceAt.IsZero() {
		t.Errorf("readings item: %+v; want the calls in service beside the depth (the controller learns the concurrency from them)", got["deep"])
	}
	// 4. The model has no provider_concurrency: the pass learns it from
	// the standing queue, and the progress lines say so.
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out.String(), "provider concurrency 1 learned"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line shows \"provider concurrency 1 learned\" after 60 s:\n%s", out)
		}
	}
	t.Logf("the pass read depths up to %g", seen)
}

// startLocal runs the local mode with one model against the given DynamoDB
// Local and fauxqs until the test ends, and returns once its queue is
// ready: the context the mode runs under, the queue's URL, its printed
// output and the pass log's path.
func startLocal(t *testing.T, ddb, sqsURL, prefix string, speed float64, model Model) (context.Context, string, *syncBuf, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	out := &syncBuf{}
	done := make(chan error, 1)
	logFile := filepath.Join(t.TempDir(), "pass.log")
	go func() {
		done <- Run(ctx, Options{
			DynamoDB: ddb, SQS: sqsURL, Prefix: prefix, Speed: speed, Interval: time.Second, Out: out, LogFile: logFile,
			Models: []Model{model},
			Ready:  func(u string) { ready <- u },
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case u := <-ready:
		return ctx, u, out, logFile
	case err := <-done:
		done <- err // for the cleanup, which waits for it
		t.Fatalf("local mode ended before it was ready: %v\n%s", err, out)
	case <-time.After(30 * time.Second):
		t.Fatalf("local mode not ready after 30 s\n%s", out)
	}
	return nil, "", nil, ""
}
