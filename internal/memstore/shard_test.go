package memstore

import (
	"context"
	"slices"
	"testing"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// A shard's view sees its models, their queues and their jobs in flight;
// writes through it — claims, cancels — reach the whole store.
func TestShardSeesItsModels(t *testing.T) {
	ctx := context.Background()
	s := New(scheduler.ModelConfig{Enabled: true})
	for _, b := range []job.BatchSpec{spec("a", "gpt", 3), spec("b", "claude", 3), spec("c", "gpt", 2)} {
		if _, err := s.Submit(ctx, b, t0); err != nil {
			t.Fatal(err)
		}
	}
	gpt := s.Shard(func(m string) bool { return m == "gpt" })
	snap, err := gpt.Snapshot(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	var models, queues []string
	for _, m := range snap.Models {
		models = append(models, m.Config.Name)
	}
	for _, q := range snap.Queues {
		queues = append(queues, q.Batch+"@"+q.Model)
	}
	if !slices.Equal(models, []string{"gpt"}) || !slices.Equal(queues, []string{"a@gpt", "c@gpt"}) {
		t.Errorf("got models %v, queues %v; want gpt and its queues a, c", models, queues)
	}

	// Claims of either model go through the store; each shard's InFlight
	// lists its own.
	claim(t, s, "gpt", "a", 2)
	claim(t, s, "claude", "b", 1)
	inflight, err := gpt.InFlight(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(inflight) != 2 || inflight[0].Model != "gpt" || inflight[1].Model != "gpt" {
		t.Errorf("gpt's shard: got %d in flight %v, want gpt's 2", len(inflight), inflight)
	}
	if all, _ := s.Shard(nil).InFlight(ctx); len(all) != 3 {
		t.Errorf("a view of every model: got %d in flight, want 3", len(all))
	}

	// An operator's cancel is not scoped: through a shard it cancels the
	// other models' waiting jobs too.
	n, err := gpt.Cancel(ctx, scheduler.Scope{Account: "lab"}, t0)
	if err != nil || n != 5 {
		t.Errorf("cancel through gpt's shard: got %d, %v; want all 5 waiting (1 gpt of a, 2 of claude's b, 2 of c)", n, err)
	}
}
