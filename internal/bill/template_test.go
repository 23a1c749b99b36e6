package bill

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/taskevent"
)

func deployment(t *testing.T) Deployment {
	t.Helper()
	root, err := localservers.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTaskEventRuleDeliversWhatTheHandlerReads: the EventBridge rule
// filters the task state changes to the states the task-events function
// acts on (each other one is an invocation for nothing), and delivers every
// state it acts on.
func TestTaskEventRuleDeliversWhatTheHandlerReads(t *testing.T) {
	d := deployment(t)
	if d.TaskStatuses == nil {
		t.Fatal("the rule delivers every task state change: want a detail.lastStatus filter")
	}
	task := httpfake.Task{ARN: "arn:aws:ecs:us-east-1:123456789012:task/sandbox/abc", StartedBy: "evalsched", Group: "family:eval",
		Env: map[string]string{"EVALSCHED_JOB_ID": "j1", "EVALSCHED_ATTEMPT": "1", "EVALSCHED_MODEL": "m"}}
	for _, status := range lifecycle {
		raw, _ := json.Marshal(stateChange(task, status, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
		ev, err := taskevent.Decode(raw, taskevent.Config{Container: "sandbox"})
		if err != nil {
			t.Fatalf("%s: %v", status, err)
		}
		acts := ev.Kind != taskevent.Ignored
		if got := slices.Contains(d.TaskStatuses, status); got != acts {
			t.Errorf("lastStatus %s: delivered %v, the handler acts on it %v (kind %s)", status, got, acts, ev.Kind)
		}
	}
}
