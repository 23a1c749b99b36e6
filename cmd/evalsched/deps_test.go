package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The operator CLI links no test framework: localservers, which `evalsched
// local` uses to start DynamoDB Local and fauxqs, keeps package testing to
// its _test.go files (its helpers take localservers.T, not testing.TB).
func TestCLIDoesNotLinkTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	// The check means something only if the CLI links localservers at all.
	if !slices.Contains(deps, "github.com/evalsched/evalsched/internal/localservers") {
		t.Fatalf("the CLI no longer links internal/localservers; deps:\n%s", out)
	}
	// internal/iamcheck enforces IAM in the tests only (iam_test.go).
	for _, p := range []string{"testing", "testing/internal/testdeps", "github.com/evalsched/evalsched/internal/iamcheck"} {
		if slices.Contains(deps, p) {
			t.Errorf("the CLI links package %s: a non-test file of one of its dependencies imports it", p)
		}
	}
}
