package ecslauncher

import (
	"context"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

func TestStopStopsTheTasksWithTheYieldReason(t *testing.T) {
	fake := httpfake.NewECS()
	defer fake.Close()
	ctx := context.Background()
	js := jobs(3)
	res := New(client(fake.URL()), config(), nil).Launch(ctx, js)
	var inflight []scheduler.InFlight
	for i, r := range res {
		inflight = append(inflight, scheduler.InFlight{ID: js[i].ID, Model: js[i].Model, State: "LAUNCHED", Attempt: 1, TaskARN: r.TaskARN})
	}
	gone := scheduler.InFlight{ID: "acme/search/b1/gone", Attempt: 2, TaskARN: "arn:aws:ecs:us-east-1:123456789012:task/sandbox/gone"}
	s := &Stopper{API: client(fake.URL()), Cluster: "sandbox", Reason: taskevent.YieldReason}
	n, err := s.Stop(ctx, []scheduler.InFlight{inflight[0], gone, inflight[2]})
	if n != 2 {
		t.Fatalf("stopped %d, want 2 (the two tasks ECS knows)", n)
	}
	if err == nil || !strings.Contains(err.Error(), gone.ID) || !strings.Contains(err.Error(), "attempt 2") {
		t.Fatalf("error %v, want one naming %s and its attempt", err, gone.ID)
	}
	if fake.Calls["StopTask"] != 3 {
		t.Fatalf("StopTask calls %d, want 3", fake.Calls["StopTask"])
	}
	byARN := map[string]httpfake.Task{}
	for _, tk := range fake.Tasks() {
		byARN[tk.ARN] = tk
	}
	for i, f := range inflight {
		tk := byARN[f.TaskARN]
		stopped := i != 1
		if (tk.LastStatus == "STOPPED") != stopped {
			t.Fatalf("task %d: status %s, stopped should be %v", i, tk.LastStatus, stopped)
		}
		if stopped && (tk.StopCode != "UserInitiated" || tk.StoppedReason != taskevent.YieldReason) {
			t.Fatalf("task %d stopped with %s %q, want UserInitiated and the yield reason", i, tk.StopCode, tk.StoppedReason)
		}
	}
}
