package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passfake"
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
	l := &passfake.Launcher{}
	c := passfake.NewClock(t0)
	stop := &stopper{}
	s := newScheduler(st, passfake.Depths{"gpt": 0}, l, c)
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
	s.Depths = passfake.Depths{"gpt": 57}
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
	s.Depths = passfake.Depths{"gpt": 80}
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
	for _, f := range scheduler.YieldPick(inflight, map[string]int{"gpt": 2, "claude": 5}, nil, 0.8) {
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
	for _, f := range scheduler.YieldPick(inflight, map[string]int{"gpt": 2}, nil, 0.8) {
		got = append(got, f.ID)
	}
	if want := []string{"big-4", "big-3"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: the project holding 4 slots gives both before the one holding 1", got, want)
	}
	got = nil
	for _, f := range scheduler.YieldPick(inflight, map[string]int{"gpt": 4}, nil, 0.8) {
		got = append(got, f.ID)
	}
	if want := []string{"big-4", "big-3", "small-1"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: every launched task once big has none left", got, want)
	}
}

// TestYieldPickUndoesAdmissionsInTheTiersWeights: each stop comes from the
// tier whose starts are furthest above their weighted share of the model's
// starts (tier 0 is due 80 % of them, tier 2 the rest here), the less
// urgent on a tie; without tiers, from the project holding the most.
func TestYieldPickUndoesAdmissionsInTheTiersWeights(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// jobs returns n in-flight jobs of a project, the first running ones
	// running, their tiers in tiers.
	tiers := map[string]int{}
	jobs := func(project string, tier, running, n int) []scheduler.InFlight {
		var out []scheduler.InFlight
		for i := range n {
			f := scheduler.InFlight{ID: fmt.Sprintf("%s-%d", project, i), Model: "gpt", Account: "lab", Project: project, State: "LAUNCHED", TaskARN: "t", ClaimedAt: at(i)}
			if i < running {
				f.State = "RUNNING"
			}
			tiers[f.ID] = tier
			out = append(out, f)
		}
		return out
	}
	pick := func(inflight []scheduler.InFlight, n int, tiers map[string]int) []string {
		var got []string
		for _, f := range scheduler.YieldPick(inflight, map[string]int{"gpt": n}, tiers, 0.8) {
			got = append(got, f.ID)
		}
		return got
	}

	// The urgent batch holds the most slots, 10, but 8 of the 12 starts:
	// under its 80 %. The backfill's 4 are 1.6 over its 20 %: it gives
	// three (over by 1.6, 0.8, then 0 on the tie), then the urgent batch.
	under := append(jobs("release", 0, 2, 10), jobs("sweep", 2, 0, 4)...)
	if got, want := pick(under, 4, tiers), []string{"sweep-3", "sweep-2", "sweep-1", "release-9"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: the backfill over its share first", got, want)
	}
	if got, want := pick(under, 4, nil), []string{"release-9", "release-8", "release-7", "release-6"}; !slices.Equal(got, want) {
		t.Fatalf("without tiers picked %v, want %v: the project holding the most slots", got, want)
	}

	// Starts at the weights, 8 and 2: the backfill gives on the tie, then
	// the urgent batch four, and 4 of 5 stops keep the split at 80/20.
	at80 := append(jobs("release", 0, 2, 10), jobs("sweep", 2, 0, 2)...)
	if got, want := pick(at80, 5, tiers), []string{"sweep-1", "release-9", "release-8", "release-7", "release-6"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: the stops in the tiers' weights", got, want)
	}
	// A job the tiers do not name counts as tier 0: then 9 of 10 starts
	// are tier 0's, over its share, and its project holding most gives.
	delete(tiers, "sweep-1")
	if got, want := pick(at80, 1, tiers), []string{"release-9"}; !slices.Equal(got, want) {
		t.Fatalf("picked %v, want %v: sweep-1 unnamed is tier 0, and release holds more", got, want)
	}
}

// TestAPassYieldsTheBackfillBeforeTheUrgentBatch: over the memory store, a
// backfill (tier 2) takes 30 slots of 100 while alone, and an urgent batch
// (tier 0) arriving after it the other 70, 40 of which run: of the 60
// starts, half are the backfill's, 18 over its 20 %. When the queue says
// 28 are too many, the pass stops the backfill's starts until the split
// is back at its weights, the tiers read through the store's JobTiers,
// and both after. Without the tiers it would take from the project
// holding the most slots: the urgent batch's.
func TestAPassYieldsTheBackfillBeforeTheUrgentBatch(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("tiers read fails %v", failing), func(t *testing.T) { yieldsByTier(t, failing) })
	}
}

// tiersDown is a JobTierReader whose store cannot be read.
type tiersDown struct{}

func (tiersDown) JobTiers(context.Context, []string) (map[string]int, error) {
	return nil, errors.New("throttled")
}

// yieldsByTier runs TestAPassYieldsTheBackfillBeforeTheUrgentBatch; with
// failing, the tiers cannot be read and the yield goes on without them
// (best effort, as the stops are): the urgent project's first, as it holds
// the most slots.
func yieldsByTier(t *testing.T, failing bool) {
	ctx := context.Background()
	st := memstore.New(model("", 100))
	st.PutModel(ctx, model("gpt", 100))
	if _, err := st.Submit(ctx, batch("lab", "sweep", "backfill", "gpt", 2, 30), t0); err != nil {
		t.Fatal(err)
	}
	l := &passfake.Launcher{}
	c := passfake.NewClock(t0)
	stop := &stopper{}
	s := newScheduler(st, passfake.Depths{"gpt": 0}, l, c)
	s.Yield = &scheduler.Yield{InFlight: st, Tiers: st, Stopper: stop}
	if failing {
		s.Yield.Tiers = tiersDown{}
	}
	if _, err := s.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Submit(ctx, batch("lab", "release", "urgent", "gpt", 0, 85), t0); err != nil {
		t.Fatal(err)
	}
	c.Add(10 * time.Second)
	if _, err := s.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	urgent := map[string]bool{}
	for _, j := range l.Launched() {
		urgent[j.ID] = j.Batch == "urgent"
	}
	started := 0
	for _, j := range l.Launched() {
		if urgent[j.ID] && started < 40 {
			if err := st.TaskStarted(ctx, j.ID, j.Attempt, c.Now()); err != nil {
				t.Fatal(err)
			}
			started++
		}
	}
	if len(l.Launched()) != 100 || started != 40 {
		t.Fatalf("launched %d, started %d: want the backfill's 30 and the urgent batch's 70, 40 of those running", len(l.Launched()), started)
	}
	// A pass records the 40 running: the depth's datapoint, 20 s old, is
	// paired with the jobs a pass saw running when it was measured.
	c.Add(10 * time.Second)
	if _, err := s.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	c.Add(20 * time.Second)
	s.Depths = passfake.Depths{"gpt": 80}
	rep, err := s.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Yielded < 20 || len(stop.jobs) != rep.Yielded {
		t.Fatalf("yielded %d, stopped %d: want 20 or more, all stopped (%s)", rep.Yielded, len(stop.jobs), rep.Plan.Models[0].Limit.Reason)
	}
	if failing {
		if !urgent[stop.jobs[0].ID] {
			t.Fatalf("stopped %s first: without tiers, want the urgent project's (it holds the most)", stop.jobs[0].ID)
		}
		return
	}
	// 30 of 60 starts is 18 over 20 %; k stops later 30-k of 60-k still
	// is while k < 22.5.
	starting := map[bool]int{true: 30, false: 30}
	for i, f := range stop.jobs {
		if i < 22 && urgent[f.ID] {
			t.Fatalf("stop %d took the urgent batch's %s: want the backfill's first 22", i, f.ID)
		}
		starting[urgent[f.ID]]--
	}
	if total := starting[true] + starting[false]; math.Abs(float64(starting[true])-0.8*float64(total)) > 1 {
		t.Errorf("after the yield the urgent batch has %d of %d starts: want 80 %% ± 1", starting[true], total)
	}
}
