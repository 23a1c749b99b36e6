package dynamostore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// The real scheduler.Pass against the store, as internal/scheduler's
// pass_test.go runs it against memstore.

// world is one store under the real pass, with the task events of the
// other functions.
type world struct {
	name    string
	sched   *scheduler.Scheduler
	l       *passfake.Launcher
	started func(id string, attempt int, now time.Time) error
	stopped func(id string, attempt int, exit job.Exit, now time.Time) error
	counts  func() map[job.State]int
	check   func() error
	running []scheduler.Job // started, to succeed after the next pass
}

// TestPassMatchesMemstore runs the real scheduler.Pass over this store and
// over memstore in lockstep — two models, tiers, a pin, launches retried,
// tasks lost to infrastructure, provider errors — and wants the same report
// from both after every pass: same jobs launched in the same order, same
// limits, counts and breaker states.
func TestPassMatchesMemstore(t *testing.T) {
	ctx := context.Background()
	cfgs := []scheduler.ModelConfig{
		{Name: "gpt", Enabled: true, MinLimit: 1, MaxLimit: 60, TargetDepth: 40, InitialLimit: 8},
		{Name: "claude", Enabled: true, MinLimit: 1, MaxLimit: 30, TargetDepth: 20, InitialLimit: 4},
	}
	batches := []job.BatchSpec{
		batch("lab", "bulk", "old", "gpt", 2, 120),
		batch("acme", "delivery", "new", "gpt", -1, 40),
		batch("acme", "delivery", "mixed", "claude", 1, 30),
	}
	for i := range batches[2].Jobs {
		if i%3 == 0 {
			batches[2].Jobs[i].Model = "gpt"
		}
	}
	pin := priority.Pin{Scope: "account#acme", Tier: "0"}
	retry := map[string]bool{"old-0003": true, "new-0001": true, "mixed-0004": true}

	dyn, _ := newStore(t)
	mem := memstore.New(defaults())
	worlds := []*world{
		{name: "dynamostore", started: func(id string, a int, now time.Time) error { return dyn.TaskStarted(ctx, id, a, now) },
			stopped: func(id string, a int, e job.Exit, now time.Time) error {
				return dyn.TaskStopped(ctx, id, a, e, now)
			},
			counts: func() map[job.State]int { return counts(t, dyn) },
			check:  func() error { return checkErr(dump(t, dyn)) }},
		{name: "memstore", started: func(id string, a int, now time.Time) error { return mem.TaskStarted(ctx, id, a, now) },
			stopped: func(id string, a int, e job.Exit, now time.Time) error {
				return mem.TaskStopped(ctx, id, a, e, now)
			},
			counts: func() map[job.State]int {
				c := mem.Counts()
				out := map[job.State]int{}
				for st, n := range map[job.State]int{job.Waiting: c.Waiting, job.Claimed: c.Claimed, job.Launched: c.Launched,
					job.Running: c.Running, job.Succeeded: c.Succeeded, job.Failed: c.Failed} {
					if n > 0 {
						out[st] = n
					}
				}
				return out
			},
			check: mem.Check},
	}
	c := passfake.NewClock(t0)
	for _, w := range worlds {
		w.l = &passfake.Launcher{Retry: retry}
		var st scheduler.Store = mem
		if w.name == "dynamostore" {
			st = dyn
			for _, cfg := range cfgs {
				if err := dyn.PutModel(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			}
			if err := dyn.PutPin(ctx, pin); err != nil {
				t.Fatal(err)
			}
			for _, b := range batches {
				submit(t, dyn, b)
			}
		} else {
			for _, cfg := range cfgs {
				_ = mem.PutModel(ctx, cfg)
			}
			_ = mem.PutPin(ctx, pin)
			for _, b := range batches {
				if _, err := mem.Submit(ctx, b, t0); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.sched = &scheduler.Scheduler{Store: st, Depths: passfake.Depths{"gpt": 0, "claude": 10}, Launcher: w.l, Clock: c, Config: scheduler.DefaultConfig()}
	}

	for pass := range 12 {
		var reports []string
		for _, w := range worlds {
			before := len(w.l.Launched())
			rep, err := w.sched.Pass(ctx)
			if err != nil {
				t.Fatalf("%s pass %d: %v", w.name, pass, err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "claimed %d launched %d retried %d failed %d warnings %q\n", rep.Claimed, rep.Launched, rep.Retried, rep.Failed, rep.Plan.Warnings)
			for _, m := range rep.Plan.Models {
				fmt.Fprintf(&b, "  %s limit %d (%s) running %d starting %d waiting %d admitted %d by tier %v breaker %s ack %+v\n",
					m.Model, m.State.Limit.Limit, m.Limit.Reason, m.Running, m.Starting, m.Waiting, m.Admitted, m.ByTier, m.Breaker.State.Phase, m.Ack)
			}
			for _, j := range w.l.Launched()[before:] {
				fmt.Fprintf(&b, "  launch %s/%s attempt %d tier %d\n", j.Batch, j.Key, j.Attempt, j.Tier)
			}
			fmt.Fprintf(&b, "  counts %v\n", w.counts())
			reports = append(reports, b.String())

			// The task events after the pass: a job launched by it starts,
			// or is lost to infrastructure, or fails on provider errors;
			// half of those started a pass ago succeed, the rest run on.
			for _, j := range w.running {
				if err := w.stopped(j.ID, j.Attempt, job.Exit{Code: 0}, c.Now()); err != nil {
					t.Fatal(err)
				}
			}
			w.running = nil
			launched := w.l.Launched()
			for i := before; i < len(launched); i++ {
				j := launched[i]
				var err error
				switch {
				case i%7 == 3:
					err = w.stopped(j.ID, j.Attempt, job.Exit{Infrastructure: true, Reason: "spot"}, c.Now())
				case i%5 == 0 && j.Model == "claude":
					err = w.stopped(j.ID, j.Attempt, job.Exit{Code: 1, ProviderError: true}, c.Now())
				default:
					err = w.started(j.ID, j.Attempt, c.Now())
					if i%2 == 0 {
						w.running = append(w.running, j)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		if reports[0] != reports[1] {
			t.Fatalf("pass %d differs:\n-- dynamostore\n%s-- memstore\n%s", pass, reports[0], reports[1])
		}
		if pass == 0 || pass == 11 {
			t.Logf("pass %d:\n%s", pass, reports[0])
		}
		for _, w := range worlds {
			if err := w.check(); err != nil {
				t.Fatalf("%s after pass %d: %v", w.name, pass, err)
			}
		}
		c.Add(10 * time.Second)
	}
}

func TestPassRetriesFailedLaunches(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 3)
	b.MaxAttempts = 2
	submit(t, st, b)
	l := &passfake.Launcher{Retry: map[string]bool{"b1-0001": true}}
	c := passfake.NewClock(t0)
	s := &scheduler.Scheduler{Store: st, Depths: passfake.Depths{"gpt": 0}, Launcher: l, Clock: c, Config: scheduler.DefaultConfig()}
	rep, err := s.Pass(ctx)
	if err != nil || rep.Launched != 2 || rep.Retried != 1 {
		t.Fatalf("got launched %d retried %d err %v, want 2, 1, nil", rep.Launched, rep.Retried, err)
	}
	if j := jobAt(t, st, b, 1); j.State != job.Waiting || j.Attempt != 2 {
		t.Fatalf("got %s attempt %d, want WAITING attempt 2", j.State, j.Attempt)
	}
	c.Add(10 * time.Second)
	if _, err := s.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if j := jobAt(t, st, b, 1); j.State != job.Failed || !strings.Contains(j.Reason, "attempt 2 of 2") {
		t.Fatalf("got %s (%q), want FAILED with the attempts in the reason", j.State, j.Reason)
	}
	check(t, st)
}
