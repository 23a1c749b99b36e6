package iamcheck

import "strings"

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
