package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/localaws"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// rieModule is the Lambda runtime interface emulator (shared/LOCAL_AWS.md).
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// TestUnderTheEmulator builds the function as it ships (static, linux,
// lambda.norpc), runs it under the runtime interface emulator with its
// environment pointing at DynamoDB Local and fauxqs, invokes it once with
// events/sqs-batch.json and finds the jobs in the table.
func TestUnderTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function and the emulator")
	}
	ctx := context.Background()
	ddbEndpoint, sqsEndpoint := localaws.DynamoDB(t), localaws.SQS(t)

	// The world: tables and a dead-letter queue.
	client, err := dynamostore.LocalClient(ctx, ddbEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "rie-"
	store := dynamostore.New(client, dynamostore.DefaultTables(prefix), scheduler.ModelConfig{})
	if err := store.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	sqsClient := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	q, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("intake-dlq")})
	if err != nil {
		t.Fatal(err)
	}

	// The function as on AWS, and the emulator.
	dir := t.TempDir()
	goTool(t, ".", []string{"CGO_ENABLED=0", "GOOS=linux"},
		"build", "-tags", "lambda.norpc", "-trimpath", "-o", filepath.Join(dir, "bootstrap"), ".")
	goTool(t, dir, []string{"GOBIN=" + dir}, "install", rieModule)

	// The function's environment: what the SAM template sets, and the
	// endpoint variables the SDK honours.
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	rie := exec.Command(filepath.Join(dir, "aws-lambda-rie"),
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(freePort(t)),
		filepath.Join(dir, "bootstrap"))
	rie.Env = append(baseEnv(),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB="+ddbEndpoint, "AWS_ENDPOINT_URL_SQS="+sqsEndpoint,
		"EVALSCHED_TABLE_PREFIX="+prefix, "EVALSCHED_DLQ_URL="+aws.ToString(q.QueueUrl),
	)
	out := &lockedBuffer{}
	rie.Stdout, rie.Stderr = out, out
	rie.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := rie.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = rie.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-rie.Process.Pid, syscall.SIGTERM) // the emulator and the function it started
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-rie.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	waitPort(t, addr, exited, out)

	// One invocation, as SQS's event source mapping makes it.
	event, err := os.ReadFile("../../events/sqs-batch.json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/2015-03-31/functions/function/invocations", "application/json", bytes.NewReader(event))
	if err != nil {
		t.Fatalf("invoke: %v\n%s", err, out.String())
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	var answer events.SQSEventResponse
	if err := json.Unmarshal(body.Bytes(), &answer); resp.StatusCode != http.StatusOK || err != nil || strings.Contains(body.String(), "errorMessage") {
		t.Fatalf("invoke: HTTP %d %s (%v)\nemulator and function output:\n%s", resp.StatusCode, body.String(), err, out.String())
	}
	if len(answer.BatchItemFailures) != 0 {
		t.Errorf("batch item failures %v, want none\n%s", answer.BatchItemFailures, out.String())
	}

	// The jobs landed, and the function reported them.
	snap, err := store.Snapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, q := range snap.Queues {
		got[q.Batch+" "+q.Model] = q.Waiting
	}
	want := map[string]int{"2026-11-29-sweep-17 gpt-5.5": 2, "2026-11-29-sweep-17 claude-opus-4.8": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waiting jobs %v, want %v\n%s", got, want, out.String())
	}
	if testing.Verbose() {
		t.Logf("emulator and function output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `"IntakeJobs":3`) {
		t.Errorf("no EMF document counting 3 jobs in the function's output:\n%s", out.String())
	}
}

// goTool runs the go command in dir with extra environment.
func goTool(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is not on PATH")
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// baseEnv is the test's environment without AWS settings that could point
// the function elsewhere (a profile, a real endpoint, real credentials).
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AWS_") && name != "AWS_CA_BUNDLE" || strings.HasPrefix(name, "EVALSCHED_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitPort(t *testing.T, addr string, exited <-chan struct{}, out *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("the emulator exited:\n%s", out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the emulator does not answer on %s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
