package iamcheck

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/smithy-go"
)

const table = "arn:aws:dynamodb:us-east-1:123456789012:table/"

func TestEvaluate(t *testing.T) {
	p, err := ParsePolicyJSON("test", []byte(`{"Version": "2012-10-17", "Statement": [
		{"Sid": "Items", "Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:Query"], "Resource": "`+table+`s-state"},
		{"Sid": "Index", "Effect": "Allow", "Action": "dynamodb:Query", "Resource": "`+table+`s-state/index/active"},
		{"Sid": "Any", "Effect": "Allow", "Action": "dynamodb:Scan", "Resource": "`+table+`s-*"},
		{"Sid": "NoPins", "Effect": "Deny", "Action": "dynamodb:*", "Resource": "`+table+`s-pins"},
		{"Sid": "Run", "Effect": "Allow", "Action": "ecs:RunTask", "Resource": "arn:aws:ecs:us-east-1:123456789012:task-definition/s-sandbox:*",
		 "Condition": {"ArnEquals": {"ecs:cluster": "arn:aws:ecs:us-east-1:123456789012:cluster/s-sandbox"}}},
		{"Sid": "Pass", "Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::123456789012:role/task",
		 "Condition": {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	cluster := func(name string) map[string][]string {
		return map[string][]string{"ecs:cluster": {"arn:aws:ecs:us-east-1:123456789012:cluster/" + name}}
	}
	cases := []struct {
		name string
		req  Request
		want bool
	}{
		{"granted action on its table", Request{Action: "dynamodb:GetItem", Resource: table + "s-state"}, true},
		{"action names are case-insensitive", Request{Action: "DynamoDB:getitem", Resource: table + "s-state"}, true},
		{"another action", Request{Action: "dynamodb:PutItem", Resource: table + "s-state"}, false},
		{"the table does not grant its indexes", Request{Action: "dynamodb:GetItem", Resource: table + "s-state/index/active"}, false},
		{"the index granted", Request{Action: "dynamodb:Query", Resource: table + "s-state/index/active"}, true},
		{"another index", Request{Action: "dynamodb:Query", Resource: table + "s-state/index/inflight"}, false},
		{"a wildcard resource", Request{Action: "dynamodb:Scan", Resource: table + "s-models"}, true},
		{"an explicit deny wins", Request{Action: "dynamodb:Scan", Resource: table + "s-pins"}, false},
		{"RunTask in the cluster", Request{Action: "ecs:RunTask", Resource: "arn:aws:ecs:us-east-1:123456789012:task-definition/s-sandbox:3", Context: cluster("s-sandbox")}, true},
		{"RunTask in another cluster", Request{Action: "ecs:RunTask", Resource: "arn:aws:ecs:us-east-1:123456789012:task-definition/s-sandbox:3", Context: cluster("default")}, false},
		{"RunTask without the condition key", Request{Action: "ecs:RunTask", Resource: "arn:aws:ecs:us-east-1:123456789012:task-definition/s-sandbox:3"}, false},
		{"RunTask of another family", Request{Action: "ecs:RunTask", Resource: "arn:aws:ecs:us-east-1:123456789012:task-definition/s-sandboxed:3", Context: cluster("s-sandbox")}, false},
		{"PassRole to ECS tasks", Request{Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/task", Context: map[string][]string{"iam:passedtoservice": {"ecs-tasks.amazonaws.com"}}}, true},
		{"PassRole to Lambda", Request{Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/task", Context: map[string][]string{"iam:passedtoservice": {"lambda.amazonaws.com"}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := p.Evaluate(c.req); got.Allowed != c.want {
				t.Errorf("Evaluate(%s) = %+v, want allowed %v", c.req, got, c.want)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"a*c", "abbc", true}, {"a*c", "ab/c", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*", "", true}, {"a*", "b", false}, {"log-group:x:*", "log-group:x:log-stream:y", true}, {"[a]", "a", false},
	} {
		if got := glob(c.pattern, c.s); got != c.want {
			t.Errorf("glob(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// The template resolves: the intake's role names its dead-letter queue by
// the ARN its generated name gets, and its table by the stack's name.
func TestTemplateResolves(t *testing.T) {
	s, err := LoadTemplate(map[string]string{"Subnets": "subnet-1,subnet-2"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.FunctionPolicy("IntakeFunction")
	if err != nil {
		t.Fatal(err)
	}
	dlq := "arn:aws:sqs:us-east-1:123456789012:evalsched-IntakeDeadLetterQueue-" + generatedSuffix
	if d := p.Evaluate(Request{Action: "sqs:SendMessage", Resource: dlq}); !d.Allowed {
		t.Errorf("IntakeRole does not let the intake send to %s: %+v", dlq, d)
	}
	if d := p.Evaluate(Request{Action: "dynamodb:BatchWriteItem", Resource: table + "evalsched-state"}); !d.Allowed {
		t.Errorf("IntakeRole does not let the intake write the state table: %+v", d)
	}
	env, err := s.Environment("SchedulerFunction")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"EVALSCHED_TABLE_PREFIX": "evalsched-", "EVALSCHED_CLUSTER": "evalsched-sandbox",
		"EVALSCHED_SUBNETS": "subnet-1,subnet-2", "EVALSCHED_DEFAULT_TASK_DEFINITION": "evalsched-sandbox",
	} {
		if env[k] != want {
			t.Errorf("scheduler's %s = %q, want %q", k, env[k], want)
		}
	}
	roles, err := s.TaskDefinitionRoles("evalsched-sandbox")
	if err != nil || len(roles) != 2 {
		t.Errorf("the sandbox task definition's roles: %v, %v; want the task and execution roles", roles, err)
	}
}

// A refused call returns AccessDeniedException and never reaches the
// server; a granted one does. Every item of a transaction is checked.
func TestMiddlewareRefusesBeforeSending(t *testing.T) {
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	p, err := ParsePolicyJSON("role/test", []byte(`{"Statement": [
		{"Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:UpdateItem"], "Resource": "`+table+`state"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	chk := &Checker{Policy: p, Account: "123456789012", Region: "us-east-1", Partition: "aws"}
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), APIOptions: chk.APIOptions()})
	ctx := context.Background()
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}

	if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("state"), Key: key}); err != nil {
		t.Fatalf("a granted GetItem: %v", err)
	}
	_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String("state"), Key: key, UpdateExpression: aws.String("SET a = :a")}},
		{Put: &types.Put{TableName: aws.String("state"), Item: key}},
	}})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "AccessDeniedException" || !strings.Contains(api.ErrorMessage(), "dynamodb:PutItem on resource: "+table+"state") {
		t.Errorf("a transaction with an ungranted Put: got %v, want AccessDeniedException naming dynamodb:PutItem", err)
	}
	if n := sent.Load(); n != 1 {
		t.Errorf("%d requests reached the server, want 1 (the granted GetItem)", n)
	}
	if got := chk.Unexercised(); !slices.Equal(got, nil) {
		// UpdateItem was checked (allowed) in the refused transaction.
		t.Errorf("unexercised grants %v, want none", got)
	}

	// An operation with no rule is refused too, naming what to add.
	ecsClient := ecs.New(ecs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), APIOptions: chk.APIOptions()})
	if _, err := ecsClient.ListClusters(ctx, &ecs.ListClustersInput{}); err == nil || !strings.Contains(err.Error(), "no IAM rule for *ecs.ListClustersInput") {
		t.Errorf("a call without a rule: got %v, want it refused", err)
	}
}

// No shipped binary links the check: it is for tests only.
func TestNoBinaryLinksIt(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../functions/...", "../../cmd/...", "../../infra/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	if slices.Contains(strings.Fields(string(out)), "github.com/evalsched/evalsched/internal/iamcheck") {
		t.Error("a binary links internal/iamcheck: import it from _test.go files only")
	}
}
