package scheduler_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passtest"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// stopper records the tasks the yield step stops.
type stopper struct{ jobs []scheduler.InFlight }

func (s *stopper) Stop(_ context.Context, jobs []scheduler.InFlight) (int, error) {
	s.jobs = append(s.jobs, jobs...)
	return len(jobs), nil
}

// TestAPassYieldsTheStartingTasksItsQueueSaysAreTooMany: 100 jobs launched,
// 40 of them running, and the gateway queues 57 calls (smoothed after the
// empty first reading: 0.7 × 57 = 39.9) on a target of 0.07 (5 % of the
// 1.3 jobs running on average so far): 20 jobs too many (LowerGain 0.5 of
// the excess, rounded up). The pass stops 20 of the 60 still starting, and
// none running.
func TestAPassYieldsTheStartingTasksItsQueueSaysAreTooMany(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(model("", 100))
	st.PutModel(ctx, model("gpt", 100))
	if _, err := st.Submit(ctx, batch("lab", "sweep", "b1", "gpt", -1, 300), t0); err != nil {
		t.Fatal(err)
	}
	l := &passtest.Launcher{}
	c := passtest.NewClock(t0)
	stop := &stopper{}
	s := newScheduler(st, passtest.Depths{"gpt": 0}, l, c)
	s.Yield = &scheduler.Yield{InFlight: st, Stopper: stop}
	if _, err := s.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	running := map[string]bool{}
	for _, j := range l.Launched()[:40] {
		if err := st.TaskStarted(ctx, j.ID, j.Attempt, c.Now()); err != nil {
			t.Fatal(err)
		}
		running[j.ID] = true
	}
	c.Add(10 * time.Second)
	s.Depths = passtest.Depths{"gpt": 57}
	rep, err := s.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Yielded != 20 || len(stop.jobs) != 20 || !strings.Contains(rep.Plan.Models[0].Limit.Reason, "stop 20 starting") {
		t.Fatalf("yielded %d, stopped %d (%s); want 20 of the 60 starting", rep.Yielded, len(stop.jobs), rep.Plan.Models[0].Limit.Reason)
	}
	for _, f := range stop.jobs {
		if running[f.ID] || f.State != "LAUNCHED" || f.TaskARN == "" || f.Model != "gpt" {
			t.Fatalf("stopped %+v: want only launched tasks not yet running", f)
		}
	}
	var line bytes.Buffer
	slog.New(slog.NewTextHandler(&line, nil)).Info("pass", "pass", rep)
	if !strings.Contains(line.String(), "yielded=20") {
		t.Errorf("the pass log line %q does not count the yields", line.String())
	}

	// Without the step's adapters the limits still decide, and nothing stops.
	s.Yield = nil
	c.Add(10 * time.Second)
	s.Depths = passtest.Depths{"gpt": 80}
	if rep, err = s.Pass(ctx); err != nil || rep.Yielded != 0 {
		t.Fatalf("yielded %d, err %v without a Yield; want 0", rep.Yielded, err)
	}
}

// TestYieldPickStopsTheNewestLaunchesFirst: the newest claim is the
// furthest from running; claimed jobs without a task and running ones
// are left, and so is a job at the last attempt number; each model gives
// only its own count.
func TestYieldPickStopsTheNewestLaunchesFirst(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	inflight := []scheduler.InFlight{
		{ID: "a", Model: "gpt", State: "LAUNCHED", TaskARN: "t-a", ClaimedAt: at(0)},
		{ID: "b", Model: "gpt", State: "LAUNCHED", TaskARN: "t-b", ClaimedAt: at(30)},
		{ID: "c", Model: "gpt", State: "RUNNING", TaskARN: "t-c", ClaimedAt: at(40)},
		{ID: "d", Model: "gpt", State: "CLAIMED", ClaimedAt: at(50)},
		{ID: "e", Model: "gpt", State: "LAUNCHED", TaskARN: "t-e", ClaimedAt: at(20)},
		{ID: "f", Model: "claude", State: "LAUNCHED", TaskARN: "t-f", ClaimedAt: at(60)},
		{ID: "g", Model: "llama", State: "LAUNCHED", TaskARN: "t-g", ClaimedAt: at(60)},
		{ID: "h", Model: "gpt", State: "LAUNCHED", TaskARN: "t-h", ClaimedAt: at(90), Attempt: 10},
	}
	var got []string
	for _, f := range scheduler.YieldPick(inflight, map[string]int{"gpt": 2, "claude": 5}) {
		got = append(got, f.ID)
	}
	if want := []string{"f", "b", "e"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: claude's one, then gpt's two newest launched", got, want)
	}
}

// TestYieldPickTakesFromTheProjectHoldingMost: a drain's trickle admits a
// small project's job (projects take turns); the yield takes back from the
// project holding the most slots, not that newest job.
func TestYieldPickTakesFromTheProjectHoldingMost(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	inflight := []scheduler.InFlight{
		{ID: "big-1", Model: "gpt", Account: "lab", Project: "big", State: "RUNNING", TaskARN: "t1", ClaimedAt: at(0)},
		{ID: "big-2", Model: "gpt", Account: "lab", Project: "big", State: "RUNNING", TaskARN: "t2", ClaimedAt: at(0)},
		{ID: "big-3", Model: "gpt", Account: "lab", Project: "big", State: "LAUNCHED", TaskARN: "t3", ClaimedAt: at(10)},
		{ID: "big-4", Model: "gpt", Account: "lab", Project: "big", State: "LAUNCHED", TaskARN: "t4", ClaimedAt: at(20)},
		{ID: "small-1", Model: "gpt", Account: "team", Project: "small", State: "LAUNCHED", TaskARN: "t5", ClaimedAt: at(30)},
	}
	var got []string
	for _, f := range scheduler.YieldPick(inflight, map[string]int{"gpt": 2}) {
		got = append(got, f.ID)
	}
	if want := []string{"big-4", "big-3"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: the project holding 4 slots gives both before the one holding 1", got, want)
	}
	got = nil
	for _, f := range scheduler.YieldPick(inflight, map[string]int{"gpt": 4}) {
		got = append(got, f.ID)
	}
	if want := []string{"big-4", "big-3", "small-1"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: every launched task once big has none left", got, want)
	}
}
