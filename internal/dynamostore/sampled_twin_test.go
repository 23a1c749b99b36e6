package dynamostore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// twin drives one sampled batch through the DynamoDB store and memstore
// with the same claims, results and task ends, and compares what the two
// claim and show.
type twin struct {
	t    *testing.T
	d    *Store
	m    *memstore.Store
	b    job.BatchSpec
	mjob map[string]scheduler.Job // memstore's claims by key (their tokens)
}

func newTwin(t *testing.T, b job.BatchSpec) *twin {
	t.Helper()
	s, _ := newStore(t)
	w := &twin{t: t, d: s, m: memstore.New(scheduler.ModelConfig{}), b: b, mjob: map[string]scheduler.Job{}}
	submit(t, s, b)
	if _, err := w.m.Submit(context.Background(), b, t0); err != nil {
		t.Fatal(err)
	}
	return w
}

// claim grants the batch n at at in both stores; both must claim the same
// jobs.
func (w *twin) claim(at time.Time, n int) []scheduler.Job {
	w.t.Helper()
	dj := commit(w.t, w.d, grant(at, w.b, n))
	mc, err := w.m.Commit(context.Background(), grant(at, w.b, n), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if got, want := keysOf(dj), keysOf(mc.Claimed); !slices.Equal(got, want) {
		w.t.Fatalf("claimed %v, memstore %v", got, want)
	}
	for _, j := range mc.Claimed {
		w.mjob[j.Key] = j
	}
	return dj
}

// record sends j's verdict to both stores; both must agree on whether it
// was recorded, which is returned.
func (w *twin) record(j scheduler.Job, pass bool, at time.Time) bool {
	w.t.Helper()
	ctx := context.Background()
	r := job.Result{Attempt: j.Attempt, Pass: pass, At: at, Token: j.ResultToken}
	dok, err := w.d.RecordResult(ctx, j.ID, r)
	if err != nil {
		w.t.Fatalf("record %s: %v", j.Key, err)
	}
	mj := w.mjob[j.Key]
	r.Token = mj.ResultToken
	mok, err := w.m.RecordResult(ctx, mj.ID, r)
	if err != nil || mok != dok {
		w.t.Fatalf("record %s: recorded %v, memstore %v (%v)", j.Key, dok, mok, err)
	}
	return dok
}

// stop ends j's attempt with exit e at at in both stores.
func (w *twin) stop(j scheduler.Job, e job.Exit, at time.Time) {
	w.t.Helper()
	ctx := context.Background()
	if err := w.d.TaskStopped(ctx, j.ID, j.Attempt, e, at); err != nil {
		w.t.Fatal(err)
	}
	if err := w.m.TaskStopped(ctx, w.mjob[j.Key].ID, j.Attempt, e, at); err != nil {
		w.t.Fatal(err)
	}
}

// same reads the batch's sampling state from both stores; estimate, stop
// and reason must be equal bit for bit.
func (w *twin) same(step string) job.SampledBatch {
	w.t.Helper()
	batch := w.b.Account + "/" + w.b.Project + "/" + w.b.Batch
	sb, _, err := w.d.Sampled(context.Background(), batch)
	if err != nil {
		w.t.Fatal(err)
	}
	mb, _ := w.m.Sampled(batch)
	if sb.Estimate != mb.Estimate || sb.Stopped != mb.Stopped || sb.Reason != mb.Reason {
		w.t.Fatalf("%s: DynamoDB %+v stopped %v %q; memstore %+v stopped %v %q", step,
			sb.Estimate, sb.Stopped, sb.Reason, mb.Estimate, mb.Stopped, mb.Reason)
	}
	return sb
}
