package main

import (
	"context"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// modelRow is status's row of the model, split into its cells' words.
func modelRow(t *testing.T, out, model string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, model+" ") {
			return l
		}
	}
	t.Fatalf("no row of %s in\n%s", model, out)
	return ""
}

// TestPausedWorkStaysInSight: with every batch of a model paused, its row
// shows the paused jobs beside WAITING and does not claim to drain, and
// why counts them; a disabled model's row says it never drains.
func TestPausedWorkStaysInSight(t *testing.T) {
	st := withTables(t)
	for _, scope := range []string{"acme", "lab"} {
		if _, stderr, code := cli(t, "pause", scope); code != exitOK {
			t.Fatalf("pause %s: %d %s", scope, code, stderr)
		}
	}
	out, _ := cliOut(t, "status")
	if row := modelRow(t, out, "gpt-5.5"); !strings.Contains(row, "0 +6 paused") || !strings.Contains(row, "  paused  ") {
		t.Errorf("status: the row hides the paused jobs:\n%s", out)
	}
	out, _ = cliOut(t, "why", "acme/search/b17")
	if !strings.Contains(out, "0 waiting and 6 paused across its batches") {
		t.Errorf("why:\n%s", out)
	}
	for _, scope := range []string{"acme", "lab"} {
		cli(t, "resume", scope)
	}
	if err := st.PutModel(context.Background(), scheduler.ModelConfig{Name: "gpt-5.5", Enabled: false, MinLimit: 1, MaxLimit: 100, TargetDepth: 10, InitialLimit: 4}); err != nil {
		t.Fatal(err)
	}
	out, _ = cliOut(t, "status")
	if row := modelRow(t, out, "gpt-5.5"); !strings.Contains(row, "never (disabled)") {
		t.Errorf("status: a disabled model's row:\n%s", out)
	}
}
