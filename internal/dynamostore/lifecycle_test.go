package dynamostore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/job/jobtest"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// lifecycleStore is what the replay drives: both stores have it.
type lifecycleStore interface {
	Submit(ctx context.Context, b job.BatchSpec, now time.Time) (int, error)
	Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error)
	Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error)
	RecordLaunches(ctx context.Context, now time.Time, results []scheduler.LaunchResult) error
	TaskStarted(ctx context.Context, jobID string, attempt int, now time.Time) error
	TaskStopped(ctx context.Context, jobID string, attempt int, exit job.Exit, now time.Time) error
	Cancel(ctx context.Context, scope scheduler.Scope, now time.Time) (int, error)
}

// TestStoresFollowTheTranscripts replays every lifecycle transcript
// (internal/job/testdata) against memstore and against this store on
// DynamoDB Local, one job in its own batch and model each: after every
// event both stores hold the state, attempt and reason job.Apply gave, and
// their counters — the model's starting, running and outcomes, the queue's
// waiting (and here its back items) — are the transcript's totals. Scripts
// with a sampled batch's skip are left to the sampled tests: a skip
// follows a stop rule, not an event one can send.
func TestStoresFollowTheTranscripts(t *testing.T) {
	ctx := context.Background()
	files, err := jobtest.Files(filepath.Join("..", "job", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	dyn, _ := newStore(t)
	replayed := 0
	for _, file := range files {
		scripts, err := jobtest.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, sc := range scripts {
			if slices.ContainsFunc(sc.Steps, func(st jobtest.Step) bool { return st.Event.Kind == job.Skip }) {
				continue
			}
			replayed++
			name := fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(file), ".txt"), i)
			t.Run(sc.Name, func(t *testing.T) {
				b := job.BatchSpec{Account: "lab", Project: "life", Batch: name, Model: "m-" + name, Tier: 1,
					MaxAttempts: sc.MaxAttempts, Jobs: []job.JobSpec{{Key: "k"}}}
				mem := memstore.New(defaults())
				stores := map[string]lifecycleStore{"memstore": mem, "dynamostore": dyn}
				for _, st := range stores {
					if n, err := st.Submit(ctx, b, t0); err != nil || n != 1 {
						t.Fatalf("submit: %d, %v", n, err)
					}
				}
				id := job.JobID(b.Account, b.Project, b.Batch, "k")
				model := jobtest.New(sc)
				for n, step := range sc.Steps {
					if step.Totals != "" {
						continue // the job package's test checks them
					}
					at := t0.Add(time.Duration(n+1) * time.Minute)
					_, ok := model.Apply(step.Event)
					for which, st := range stores {
						drive(t, st, b, id, step, ok, at)
						compare(t, which, st, id, b, model, step.Line)
					}
					if err := mem.Check(); err != nil {
						t.Errorf("line %d: memstore: %v", step.Line, err)
					}
					backs := dynBacks(t, dyn, id)
					if backs != model.Totals.Backs {
						t.Errorf("line %d: dynamostore: queue backs %d, want %d", step.Line, backs, model.Totals.Backs)
					}
				}
			})
		}
	}
	if replayed < 20 {
		t.Errorf("replayed %d scripts; the transcripts hold more", replayed)
	}
}

// drive sends one transcript event to a store the way production does.
func drive(t *testing.T, st lifecycleStore, b job.BatchSpec, id string, step jobtest.Step, applies bool, at time.Time) {
	t.Helper()
	ctx := context.Background()
	ev := step.Event
	launch := func(status scheduler.LaunchStatus) error {
		return st.RecordLaunches(ctx, at, []scheduler.LaunchResult{{
			JobID: id, Attempt: ev.Attempt, Status: status, Reason: ev.Reason, TaskARN: fmt.Sprintf("arn:task/%s-%d", b.Batch, ev.Attempt),
		}})
	}
	var err error
	switch ev.Kind {
	case job.Claim:
		var got scheduler.Committed
		if got, err = st.Commit(ctx, grant(at, b, 1), nil); err == nil && (len(got.Claimed) == 1) != applies {
			t.Errorf("line %d: claim took %d jobs, want the transcript's %v", step.Line, len(got.Claimed), applies)
		}
	case job.Launch:
		err = launch(scheduler.Launched)
	case job.LaunchRetry:
		err = launch(scheduler.Retry)
	case job.LaunchFail:
		err = launch(scheduler.Failed)
	case job.Start:
		err = st.TaskStarted(ctx, id, ev.Attempt, at)
	case job.Stop:
		err = st.TaskStopped(ctx, id, ev.Attempt, ev.Exit, at)
	case job.Cancel:
		var n int
		if n, err = st.Cancel(ctx, scheduler.Scope{Account: b.Account, Project: b.Project, Batch: b.Batch}, at); err == nil && (n == 1) != applies {
			t.Errorf("line %d: cancel took %d jobs, want the transcript's %v", step.Line, n, applies)
		}
	default:
		t.Fatalf("line %d: no store call for %q", step.Line, ev.Kind)
	}
	if err != nil {
		t.Fatalf("line %d: %s: %v", step.Line, ev.Kind, err)
	}
}

// compare checks a store's job and counters against the transcript's.
func compare(t *testing.T, which string, st lifecycleStore, id string, b job.BatchSpec, want *jobtest.Job, line int) {
	t.Helper()
	ctx := context.Background()
	var state job.State
	var attempt, maxAttempts int
	var reason string
	switch s := st.(type) {
	case *memstore.Store:
		j, _ := s.Job(id)
		state, attempt, maxAttempts, reason = j.State, j.Attempt, j.MaxAttempts, j.Reason
	case *Store:
		j, ok, err := s.Job(ctx, id)
		if err != nil || !ok {
			t.Fatalf("line %d: %s: read job: %v %v", line, which, ok, err)
		}
		state, attempt, maxAttempts, reason = j.State, j.Attempt, j.MaxAttempts, j.Reason
	}
	// Max attempts too: a yield raises them with its move.
	if state != want.State || attempt != want.Attempt || maxAttempts != want.MaxAttempts {
		t.Errorf("line %d: %s: job %s attempt %d of %d, want %s attempt %d of %d", line, which, state, attempt, maxAttempts, want.State, want.Attempt, want.MaxAttempts)
	}
	// The stores keep the reason of the last move that gave one (memstore
	// also clears it on a success).
	if want.Reason != "" && reason != want.Reason {
		t.Errorf("line %d: %s: reason %q, want %q", line, which, reason, want.Reason)
	}
	snap, err := st.Snapshot(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	var got job.Deltas
	for _, m := range snap.Models {
		if m.Config.Name == b.Model {
			got.Starting, got.Running, got.OK, got.ProviderFailed = m.Starting, m.Running, m.Outcomes.OK, m.Outcomes.ProviderFailed
		}
	}
	for _, q := range snap.Queues {
		if q.Model == b.Model {
			got.Waiting += q.Waiting
		}
	}
	got.Backs = want.Totals.Backs // read apart: dynBacks
	if got != want.Totals {
		t.Errorf("line %d: %s: counters %s, want %s", line, which, jobtest.FormatTotals(got), jobtest.FormatTotals(want.Totals))
	}
}

// dynBacks reads the back items count of a job's queue item.
func dynBacks(t *testing.T, s *Store, id string) int {
	t.Helper()
	ctx := context.Background()
	j, ok, err := s.readJob(ctx, id)
	if err != nil || !ok {
		t.Fatalf("read job %s: %v %v", id, ok, err)
	}
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(j.Queue, skQueue), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := integer(res.Item["backs"])
	return int(n)
}
