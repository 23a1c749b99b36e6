package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestStatusWhyShowTheLearnedConcurrency: a provider concurrency the pass
// learned, kept on the model's state item in DynamoDB Local, shows in
// status's PROVIDER CONC with its age, and why says how the controller
// uses it: as a set one while fresh, a bound of ×4 a step once old, with
// where to correct it.
func TestStatusWhyShowTheLearnedConcurrency(t *testing.T) {
	ctx := context.Background()
	st := withTables(t)
	for _, c := range []struct {
		name string
		age  time.Duration
		why  string
	}{
		{"fresh", 3 * time.Minute, "provider concurrency: 3 set, 7 learned 3m ago (fresh: used as a set one, its knee reached in one raise)"},
		{"old", time.Hour, "provider concurrency: 3 set, 7 learned 1h ago (old: its knee bounds raises of ×4 at most; edit or delete learned_concurrency on the model's state item to correct it)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now()
			plan := scheduler.Plan{At: now, Models: []scheduler.ModelPlan{{Model: "gpt-5.5",
				State: scheduler.ModelState{Limit: limits.State{Limit: 4, Conc: 7, ConcAt: now.Add(-c.age)}}}}}
			snap, err := st.Snapshot(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Commit(ctx, plan, snap.Versions); err != nil {
				t.Fatal(err)
			}
			out, code := cliOut(t, "status")
			if code != exitOK || !strings.Contains(out, "3 set, 7 learned") {
				t.Errorf("status: exit %d, want PROVIDER CONC \"3 set, 7 learned …\":\n%s", code, out)
			}
			out, code = cliOut(t, "why", "acme/search/b17")
			if code != exitOK || !strings.Contains(out, c.why) {
				t.Errorf("why: exit %d, want %q:\n%s", code, c.why, out)
			}
		})
	}
}
