package reconcile

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoAWSSDK: the judge and Run link no AWS SDK package; ECS is
// reached through Tasks (ecstasks adapts the API), so the simulator feeds
// the judge plain values.
func TestNoAWSSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/aws/aws-sdk-go-v2") {
			t.Errorf("reconcile links %s", p)
		}
	}
}
