package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/iamcheck"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// operatorPolicy reads the operator's IAM policy from docs/deploy.md (the
// JSON block after its operator-policy marker), for the stack st.
func operatorPolicy(t *testing.T, st *iamcheck.Stack) iamcheck.Policy {
	t.Helper()
	root, err := localservers.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(guide), "<!-- operator-policy")
	if !ok {
		t.Fatal("docs/deploy.md has no <!-- operator-policy marker")
	}
	_, rest, _ = strings.Cut(rest, "```json\n")
	doc, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/deploy.md: no JSON block after the operator-policy marker")
	}
	doc = strings.NewReplacer("REGION", st.Region, "ACCOUNT", st.Account, "STACK", st.Name).Replace(doc)
	p, err := iamcheck.ParsePolicyJSON("operator (docs/deploy.md)", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOperatorCommandsUnderTheDocumentedPolicy runs the CLI's operator
// commands against the stack template.yaml deploys, with every AWS call
// refused unless the operator policy in docs/deploy.md grants it
// (internal/iamcheck), as AWS would.
func TestOperatorCommandsUnderTheDocumentedPolicy(t *testing.T) {
	ctx := context.Background()
	stack, err := iamcheck.LoadTemplate(nil)
	if err != nil {
		t.Fatal(err)
	}
	check := stack.Checker(operatorPolicy(t, stack))
	awsOptions = append(awsOptions, check.LoadOption())
	t.Cleanup(func() { awsOptions = nil })

	// The stack's tables, queues and cluster, by the template's names.
	ddb, sqsEndpoint := localservers.DynamoDB(t), localservers.SQS(t)
	ecsFake := httpfake.NewECS()
	t.Cleanup(ecsFake.Close)
	env, err := stack.Environment("SchedulerFunction")
	if err != nil {
		t.Fatal(err)
	}
	prefix, cluster := env["EVALSCHED_TABLE_PREFIX"], env["EVALSCHED_CLUSTER"]
	for k, v := range map[string]string{
		"AWS_REGION": stack.Region, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_PROFILE": "",
		"AWS_ENDPOINT_URL_DYNAMODB": ddb, "AWS_ENDPOINT_URL_SQS": sqsEndpoint, "AWS_ENDPOINT_URL_ECS": ecsFake.URL(),
		"EVALSCHED_TABLE_PREFIX": prefix, "EVALSCHED_CLUSTER": cluster,
	} {
		t.Setenv(k, v)
	}
	store := dynamotest.Tables(t, ddb, prefix, scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 4})
	b := domain.BatchSpec{Account: "acme", Project: "search", Batch: "b17", Model: "gpt-5.5", Tier: 2,
		Jobs: []domain.JobSpec{{Key: "a"}, {Key: "b"}, {Key: "c"}}}
	running := dynamotest.ClaimedJob(t, store, b)
	// A task runs for one of the batch's jobs: cancel --stop-running stops it.
	out, err := ecs.New(ecs.Options{Region: stack.Region, BaseEndpoint: aws.String(ecsFake.URL()),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}).
		RunTask(ctx, &ecs.RunTaskInput{Cluster: aws.String(cluster), TaskDefinition: aws.String(cluster), StartedBy: aws.String(running)})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(out.Tasks[0].TaskArn)
	ecsFake.SetStatus(arn, "RUNNING")
	if err := store.RecordLaunches(ctx, time.Now(), []scheduler.LaunchResult{{JobID: running, Attempt: 1, Status: scheduler.Launched, TaskARN: arn}}); err != nil {
		t.Fatal(err)
	}
	if err := store.TaskStarted(ctx, running, 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	sq, urls := stack.Queues(t, sqsEndpoint, "IntakeQueue", "IntakeDeadLetterQueue")
	intakeURL, dlqURL := urls[0], urls[1]
	// A rejected message waits in the dead-letter queue: dlq lists it,
	// then sends it back.
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(`{"version": 1}`)}); err != nil {
		t.Fatal(err)
	}
	smoke := filepath.Join(t.TempDir(), "smoke.json")
	if err := os.WriteFile(smoke, []byte(`{"version": 1, "account": "smoke", "project": "deploy", "batch": "smoke-1", "model": "gpt-5.5",
		"jobs": [{"key": "job-1"}, {"key": "job-2"}, {"key": "job-3"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"submit", smoke, "--queue-url", intakeURL},
		{"dlq", "--queue-url", dlqURL},
		{"dlq", "--queue-url", dlqURL, "--redrive", "--intake-queue-url", intakeURL},
		{"status"},
		{"status", "--all"},
		{"batches", "acme"},
		{"why", "acme/search/b17"},
		{"why", "acme/search/b17/b"},
		{"pin", "account#acme", "0", "--expires", "1h", "--note", "launch week"},
		{"pin", "account#acme", "--delete"},
		{"pause", "acme/search"},
		{"resume", "acme/search"},
		{"cancel", "acme/search/b17", "--stop-running"},
	} {
		if _, stderr, code := cli(t, args...); code != exitOK {
			t.Errorf("evalsched %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
	}
	if d := check.Denied(); len(d) > 0 {
		t.Errorf("the operator policy of docs/deploy.md refused %d calls the CLI makes:\n%s", len(d), check.Report())
	}
	if extra := check.Unexercised(); len(extra) > 0 {
		t.Errorf("the operator policy grants what no command used:\n  %s", strings.Join(extra, "\n  "))
	}
}
