package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func batch(account, project, name, model string, tier, n int) job.BatchSpec {
	b := job.BatchSpec{Account: account, Project: project, Batch: name, Model: model, Tier: tier}
	for i := range n {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("%s-%04d", name, i)})
	}
	return b
}

func newScheduler(st *memstore.Store, d passfake.Depths, l *passfake.Launcher, c *passfake.Clock) *scheduler.Scheduler {
	cfg := scheduler.DefaultConfig()
	return &scheduler.Scheduler{Store: st, Depths: d, Launcher: l, Clock: c, Config: cfg}
}

func model(name string, initial int) scheduler.ModelConfig {
	return scheduler.ModelConfig{Name: name, Enabled: true, MinLimit: 1, MaxLimit: 10000, TargetDepth: 40, InitialLimit: initial}
}

// TestPassFollowsJobsFromWaitingToLaunched runs passes over the in-memory
// store: jobs are claimed oldest first within the limit, launched once, and
// the counters follow them to running and done.
func TestPassFollowsJobsFromWaitingToLaunched(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(model("", 10))
	st.PutModel(context.Background(), model("gpt", 10))
	if _, err := st.Submit(context.Background(), batch("lab", "sweep", "b1", "gpt", -1, 50), t0); err != nil {
		t.Fatal(err)
	}
	l := &passfake.Launcher{}
	c := passfake.NewClock(t0)
	s := newScheduler(st, passfake.Depths{"gpt": 0}, l, c)

	rep, err := s.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The first pass launches the cold model's initial limit.
	if rep.Launched != 10 {
		t.Fatalf("got %d launched on the first pass, want the initial limit 10 (%s)", rep.Launched, rep.Plan.Models[0].Limit.Reason)
	}
	for i, j := range l.Launched() {
		if want := fmt.Sprintf("b1-%04d", i); j.Key != want || j.Attempt != 1 {
			t.Errorf("launch %d: got %s attempt %d, want %s attempt 1 (oldest first)", i, j.Key, j.Attempt, want)
		}
	}
	if got := st.Counts(); got.Launched != 10 || got.Waiting != 40 {
		t.Fatalf("got %+v, want 10 launched and 40 waiting", got)
	}

	// A second pass with nothing running yet launches nothing more: the limit
	// is full of starting jobs and the raise must wait for them.
	c.Add(10 * time.Second)
	if rep, err = s.Pass(ctx); err != nil || rep.Launched != 0 {
		t.Fatalf("got %d launched, err %v; want 0 while the first 10 start", rep.Launched, err)
	}

	// Once they run (and a datapoint measured after that arrives), the cold
	// model raises ×4 and launches 30 more.
	for _, j := range l.Launched() {
		if err := st.TaskStarted(context.Background(), j.ID, j.Attempt, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	launched := 0
	for range 3 {
		c.Add(10 * time.Second)
		if rep, err = s.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		launched += rep.Launched
	}
	if m := rep.Plan.Models[0]; m.State.Limit.Limit != 40 || launched != 30 {
		t.Fatalf("got limit %d and %d launched (%s), want 40 and 30", m.State.Limit.Limit, launched, m.Limit.Reason)
	}
	// Finish them all: exit 0 succeeds, the counters drop.
	for _, j := range l.Launched()[:10] {
		if err := st.TaskStopped(context.Background(), j.ID, j.Attempt, job.Exit{Code: 0}, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := st.Counts(); got.Succeeded != 10 || got.Running != 0 || got.Launched != 30 {
		t.Fatalf("got %+v, want 10 succeeded, 0 running, 30 launched", got)
	}
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestPassNeverClaimsAJobTwice(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(model("", 1000))
	if _, err := st.Submit(context.Background(), batch("lab", "sweep", "b1", "gpt", -1, 300), t0); err != nil {
		t.Fatal(err)
	}
	l := &passfake.Launcher{}
	c := passfake.NewClock(t0)
	s := newScheduler(st, passfake.Depths{"gpt": 0}, l, c)
	for range 5 {
		if _, err := s.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		c.Add(10 * time.Second)
	}
	seen := map[string]bool{}
	for _, j := range l.Launched() {
		if seen[j.ID] {
			t.Fatalf("job %s launched twice", j.Key)
		}
		seen[j.ID] = true
	}
	if len(seen) != 300 {
		t.Fatalf("got %d launched, want all 300 (the launch budget is 200 a pass)", len(seen))
	}
}

func TestPassRetriesFailedLaunches(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(model("", 100))
	b := batch("lab", "sweep", "b1", "gpt", -1, 3)
	b.MaxAttempts = 2
	if _, err := st.Submit(context.Background(), b, t0); err != nil {
		t.Fatal(err)
	}
	l := &passfake.Launcher{Retry: map[string]bool{"b1-0001": true}}
	c := passfake.NewClock(t0)
	s := newScheduler(st, passfake.Depths{"gpt": 0}, l, c)
	rep, err := s.Pass(ctx)
	if err != nil || rep.Launched != 2 || rep.Retried != 1 {
		t.Fatalf("got launched %d retried %d err %v, want 2, 1, nil", rep.Launched, rep.Retried, err)
	}
	id := job.JobID("lab", "sweep", "b1", "b1-0001")
	if j, _ := st.Job(id); j.State != job.Waiting || j.Attempt != 2 {
		t.Fatalf("got %s attempt %d, want WAITING attempt 2", j.State, j.Attempt)
	}
	c.Add(10 * time.Second)
	if _, err := s.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _ := st.Job(id); j.State != job.Failed || !strings.Contains(j.Reason, "attempt 2 of 2") {
		t.Fatalf("got %s (%q), want FAILED with the attempts in the reason", j.State, j.Reason)
	}
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestPassPinsTakeEffectNextPass(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(model("", 10))
	// Two batches of one model; the bulk one is older. A pin lifts the newer
	// one to tier 0 and it gets 80 % of the slots.
	if _, err := st.Submit(context.Background(), batch("lab", "bulk", "old", "gpt", 2, 100), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Submit(context.Background(), batch("acme", "delivery", "new", "gpt", 2, 100), t0); err != nil {
		t.Fatal(err)
	}
	st.PutPin(context.Background(), priority.Pin{Scope: "account#acme", Tier: "0"})
	st.PutPin(context.Background(), priority.Pin{Scope: "account#typo", Tier: "urgent"})
	l := &passfake.Launcher{}
	s := newScheduler(st, passfake.Depths{"gpt": 0}, l, passfake.NewClock(t0))
	rep, err := s.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acme := 0
	for _, j := range l.Launched() {
		if j.Account == "acme" {
			acme++
		}
	}
	if acme != 8 {
		t.Errorf("got %d of 10 launches for the pinned account, want 8", acme)
	}
	if len(rep.Plan.Warnings) != 1 || !strings.Contains(rep.Plan.Warnings[0], "urgent") {
		t.Errorf("got warnings %q, want one naming the bad tier", rep.Plan.Warnings)
	}
}

// versioned is a store whose Snapshot carries versions and whose Commit
// finds them stale: what a DynamoDB store does when another pass committed
// between this one's read and its commit.
type versioned struct {
	*memstore.Store
	got   []scheduler.Versions // what each Commit was handed
	stale bool
}

type token struct{ n int }

func (v *versioned) Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error) {
	snap, err := v.Store.Snapshot(ctx, now)
	snap.Versions = &token{n: len(v.got) + 1}
	return snap, err
}

func (v *versioned) Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error) {
	v.got = append(v.got, read)
	if v.stale {
		return scheduler.Committed{Stale: []string{"gpt"}}, nil
	}
	return v.Store.Commit(ctx, plan, read)
}

// TestPassCommitsOnWhatItsSnapshotRead: each pass hands its own
// snapshot's Versions to Commit; a stale commit fails the pass with
// ErrStale, naming the models, and launches nothing.
func TestPassCommitsOnWhatItsSnapshotRead(t *testing.T) {
	ctx := context.Background()
	st := &versioned{Store: memstore.New(model("", 10))}
	if _, err := st.Submit(ctx, batch("lab", "sweep", "b1", "gpt", -1, 50), t0); err != nil {
		t.Fatal(err)
	}
	l := &passfake.Launcher{}
	c := passfake.NewClock(t0)
	s := &scheduler.Scheduler{Store: st, Depths: passfake.Depths{"gpt": 0}, Launcher: l, Clock: c, Config: scheduler.DefaultConfig()}
	if rep, err := s.Pass(ctx); err != nil || rep.Launched != 10 || len(rep.Stale) != 0 {
		t.Fatalf("first pass: %v, launched %d, stale %v; want 10 launched", err, rep.Launched, rep.Stale)
	}
	st.stale = true
	c.Add(10 * time.Second)
	rep, err := s.Pass(ctx)
	if !errors.Is(err, scheduler.ErrStale) || !strings.Contains(err.Error(), "gpt") {
		t.Errorf("stale pass: err %v, want ErrStale naming gpt", err)
	}
	if rep.Launched != 0 || rep.Claimed != 0 || len(l.Launched()) != 10 || !slices.Equal(rep.Stale, []string{"gpt"}) {
		t.Errorf("stale pass: claimed %d, launched %d (%d in all), stale %v; want nothing more and [gpt]", rep.Claimed, rep.Launched, len(l.Launched()), rep.Stale)
	}
	for i, read := range st.got {
		if tk, ok := read.(*token); !ok || tk.n != i+1 {
			t.Errorf("commit %d was handed %v, want its own pass's snapshot's versions (%d)", i+1, read, i+1)
		}
	}
}
