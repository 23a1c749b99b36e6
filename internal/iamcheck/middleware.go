package iamcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// Checker refuses the SDK calls its policy does not grant. Add it to a
// client with APIOptions (one client) or LoadOption (every client built
// from an aws.Config).
type Checker struct {
	Policy                     Policy
	Account, Region, Partition string
	// TaskRoles returns the roles a task definition family hands ECS,
	// which RunTask passes (iam:PassRole).
	TaskRoles func(family string) ([]string, error)

	mu      sync.Mutex
	allowed []Request
	denied  []Request
}

// Checker returns a checker of policy in this stack's account and region,
// the task definitions' roles read from the template.
func (s *Stack) Checker(policy Policy) *Checker {
	return &Checker{Policy: policy, Account: s.Account, Region: s.Region, Partition: s.Partition, TaskRoles: s.TaskDefinitionRoles}
}

// FunctionChecker is the checker of a function's role.
func (s *Stack) FunctionChecker(fn string) (*Checker, error) {
	p, err := s.FunctionPolicy(fn)
	if err != nil {
		return nil, err
	}
	return s.Checker(p), nil
}

// APIOptions adds the check to a client's Initialize step: it runs once per
// call, before retries, signing and sending.
func (c *Checker) APIOptions() []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("iamcheck", c.handle), middleware.After)
	}}
}

// LoadOption adds the check to every client built from the configuration.
func (c *Checker) LoadOption() func(*awsconfig.LoadOptions) error {
	return awsconfig.WithAPIOptions(c.APIOptions())
}

func (c *Checker) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	reqs, err := c.requests(in.Parameters)
	if err != nil {
		return middleware.InitializeOutput{}, middleware.Metadata{}, err
	}
	for _, r := range reqs {
		d := c.Policy.Evaluate(r)
		c.mu.Lock()
		if d.Allowed {
			c.allowed = append(c.allowed, r)
		} else {
			c.denied = append(c.denied, r)
		}
		c.mu.Unlock()
		if !d.Allowed {
			return middleware.InitializeOutput{}, middleware.Metadata{}, &AccessDenied{Principal: c.Policy.Name, Request: r, Reason: d.Reason}
		}
	}
	return next.HandleInitialize(ctx, in)
}

// Denied returns the requests refused so far.
func (c *Checker) Denied() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.denied)
}

// Allowed returns the requests granted so far.
func (c *Checker) Allowed() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.allowed)
}

// Actions returns the actions granted so far, sorted, each once.
func (c *Checker) Actions() []string {
	var out []string
	for _, r := range c.Allowed() {
		if !slices.Contains(out, r.Action) {
			out = append(out, r.Action)
		}
	}
	slices.Sort(out)
	return out
}

// Report lists the refused requests, one a line, for a test's message.
func (c *Checker) Report() string {
	var b strings.Builder
	for _, r := range c.Denied() {
		fmt.Fprintf(&b, "  %s refused %s\n", c.Policy.Name, r)
	}
	return b.String()
}

// AccessDenied is the error a refused call returns, as AWS answers it:
// an API error with the code AccessDeniedException, which the SDK wraps in
// its OperationError.
type AccessDenied struct {
	Principal string
	Request   Request
	Reason    string
}

func (e *AccessDenied) Error() string {
	return fmt.Sprintf("api error %s: %s", e.ErrorCode(), e.ErrorMessage())
}

// ErrorCode is AWS's code of the error.
func (e *AccessDenied) ErrorCode() string { return "AccessDeniedException" }

// ErrorMessage is worded as AWS words it.
func (e *AccessDenied) ErrorMessage() string {
	return fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because %s",
		e.Principal, e.Request.Action, e.Request.Resource, e.Reason)
}

// ErrorFault is a client fault: retrying does not help.
func (e *AccessDenied) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

var _ smithy.APIError = (*AccessDenied)(nil)

// LambdaPlatform are the actions Lambda makes with a function's role, not
// its code: the logs (and the EMF metrics in them), and the SQS event
// source mapping's polling.
var LambdaPlatform = []string{"logs:CreateLogStream", "logs:PutLogEvents", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}

// Unexercised returns the grants of the policy no call has used so far,
// as "action on resource (statement)": each Allow statement's actions on
// each of its resources, but the platform's actions (logs, the SQS
// poller: made by Lambda, not by the code). After a function's flows it
// is what the role grants beyond what the function did: least privilege
// wants it empty, or a flow that uses it.
func (c *Checker) Unexercised(platform ...string) []string {
	used := c.Allowed()
	var out []string
	for _, s := range c.Policy.Statements {
		if s.Effect != "Allow" || s.NotAction || s.NotResource {
			continue
		}
		for _, a := range s.Actions {
			if slices.Contains(platform, a) {
				continue
			}
			for _, res := range s.Resources {
				hit := slices.ContainsFunc(used, func(r Request) bool {
					return glob(strings.ToLower(a), strings.ToLower(r.Action)) && glob(res, r.Resource)
				})
				if !hit {
					out = append(out, fmt.Sprintf("%s on %s (%s)", a, res, s.Where))
				}
			}
		}
	}
	return out
}
