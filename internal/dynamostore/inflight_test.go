package dynamostore

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestInFlightFollowsTheJobs(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 4)
	b.TimeoutSeconds = 600
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 3))
	states := func() map[string]scheduler.InFlight {
		t.Helper()
		list, err := s.InFlight(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]scheduler.InFlight{}
		for _, f := range list {
			out[f.ID] = f
		}
		return out
	}
	got := states()
	if len(got) != 3 || got[jobs[0].ID].State != "CLAIMED" || !got[jobs[0].ID].ClaimedAt.Equal(t0) || got[jobs[0].ID].TimeoutSeconds != 600 {
		t.Fatalf("after the claim: got %+v, want the three claimed jobs", got)
	}
	launchAll(t, s, jobs)
	if err := s.TaskStarted(ctx, jobs[0].ID, 1, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, jobs[1].ID, 1, job.Exit{Code: 0}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.TaskStopped(ctx, jobs[2].ID, 1, job.Exit{Infrastructure: true, Reason: "SpotInterruption"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got = states()
	ids := make([]string, 0, len(got))
	for id := range got {
		ids = append(ids, id)
	}
	if !slices.Equal(ids, []string{jobs[0].ID}) {
		t.Fatalf("got %v in flight, want only the running job (ended and retried ones leave)", ids)
	}
	f := got[jobs[0].ID]
	if f.State != "RUNNING" || f.TaskARN == "" || !f.StartedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("got %+v, want RUNNING with its task and start time", f)
	}
}

// TestJobTiersReadsTheTierEachClaimRecorded: the yield step orders its
// stops by the tier a job was admitted under, which the inflight index does
// not carry; JobTiers reads it from the job items, and leaves out an id
// with no item.
func TestJobTiersReadsTheTierEachClaimRecorded(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	urgent, backfill := batch("lab", "release", "urgent", "gpt", 0, 2), batch("lab", "sweep", "backfill", "gpt", -1, 3)
	submit(t, s, urgent)
	submit(t, s, backfill)
	ku := scheduler.QueueKey{Account: "lab", Project: "release", Batch: "urgent", Model: "gpt"}
	kb := scheduler.QueueKey{Account: "lab", Project: "sweep", Batch: "backfill", Model: "gpt"}
	jobs := commit(t, s, scheduler.Plan{At: t0, Models: []scheduler.ModelPlan{{
		Model: "gpt", Grants: []scheduler.Grant{{Queue: ku, Tier: 0, Count: 2}, {Queue: kb, Tier: 2, Count: 3}},
	}}})
	if len(jobs) != 5 {
		t.Fatalf("claimed %d, want 5", len(jobs))
	}
	ids := []string{"no-such-job"}
	want := map[string]int{}
	for _, j := range jobs {
		ids = append(ids, j.ID)
		want[j.ID] = map[string]int{"urgent": 0, "backfill": 2}[j.Batch]
	}
	got, err := s.JobTiers(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("got tiers %v, want %v (the grants' tiers, none for the unknown id)", got, want)
	}
}
