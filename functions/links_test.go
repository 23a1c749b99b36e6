package functions_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path the Lambda binaries and their deps share.
const module = "github.com/evalsched/evalsched/"

// denied are the packages no Lambda binary may link: the in-memory store,
// the simulator and the fakes and harnesses the tests run against. A
// binary that links one ships a second job store or a fake AWS beside the
// real one, and its behaviour in a test no longer says what it does on AWS.
var denied = []string{
	"internal/memstore",
	"internal/sim",
	"internal/httpfake",
	"internal/localservers",
	"internal/devstack",
	"internal/passfake",
	"internal/job/jobtest",
	"internal/e2e",
	"internal/iamcheck",
	"internal/mutate",
}

// goList runs `go list` with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// TestLambdasLinkNoFake checks every Lambda binary's dependencies (its
// build, not its tests) against the denied packages.
func TestLambdasLinkNoFake(t *testing.T) {
	// Each denied path must name a package, so a rename cannot empty the
	// check without this test saying so.
	for _, p := range denied {
		goList(t, module+p)
	}
	mains := goList(t, module+"functions/...")
	if len(mains) < 4 {
		t.Fatalf("found %d Lambda binaries under functions/, want the four: %v", len(mains), mains)
	}
	for _, m := range mains {
		deps := goList(t, "-deps", m)
		for _, p := range denied {
			if slices.Contains(deps, module+p) {
				t.Errorf("%s links %s", strings.TrimPrefix(m, module), p)
			}
		}
	}
}
