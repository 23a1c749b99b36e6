package iamcheck

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TB is what the flow helpers need of a test (testing.TB has it).
type TB interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
}

// Function loads template.yaml with params and returns the stack and the
// checker of function fn's role, failing the test on either error: the
// start of every flow test run under a function's role.
func Function(t TB, fn string, params map[string]string) (*Stack, *Checker) {
	t.Helper()
	stack, err := LoadTemplate(params)
	if err != nil {
		t.Fatal(err)
	}
	check, err := stack.FunctionChecker(fn)
	if err != nil {
		t.Fatal(err)
	}
	return stack, check
}

// RequireExercised fails the test when role grants an action no flow
// used, beyond Lambda's own (LambdaPlatform): least privilege, checked.
func (c *Checker) RequireExercised(t TB, role string) {
	t.Helper()
	if extra := c.Unexercised(LambdaPlatform...); len(extra) > 0 {
		t.Errorf("%s grants what no flow used (drop it, or add the flow that needs it):\n  %s", role, strings.Join(extra, "\n  "))
	}
}

// Queues creates the stack's queues named by logical ID (under the names
// template.yaml gives them, so the role's grants match) on the SQS
// stand-in at endpoint, and returns a client on it, outside any role, and
// each queue's URL in order.
func (s *Stack) Queues(t TB, endpoint string, ids ...string) (*sqs.Client, []string) {
	t.Helper()
	client := sqs.New(sqs.Options{Region: s.Region, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	urls := make([]string, len(ids))
	for i, id := range ids {
		name, err := s.PhysicalName(id)
		if err != nil {
			t.Fatal(err)
		}
		q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = aws.ToString(q.QueueUrl)
	}
	return client, urls
}
