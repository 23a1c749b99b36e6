package dynamotest

import (
	"context"
	"time"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// T is the part of testing.TB the world needs.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Tables is a store on the DynamoDB Local at endpoint, its tables created
// under prefix (each test its own prefix, as the functions read
// EVALSCHED_TABLE_PREFIX), with cfg for models without an item.
func Tables(t T, endpoint, prefix string, cfg scheduler.ModelConfig) *dynamostore.Store {
	t.Helper()
	ctx := context.Background()
	client, err := dynamostore.LocalClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	store := dynamostore.New(client, dynamostore.DefaultTables(prefix), cfg)
	if err := store.CreateTables(ctx); err != nil {
		t.Fatalf("create the tables under %q: %v", prefix, err)
	}
	return store
}

// SampleBatch is the batch of events/sqs-batch.json, cut to its first job:
// the job the sample task and result events report on.
func SampleBatch() job.BatchSpec {
	return job.BatchSpec{Account: "acme", Project: "search-evals", Batch: "2026-11-29-sweep-17", Model: "gpt-5.5", Tier: 1,
		Jobs: []job.JobSpec{{Key: "task-000123"}}}
}

// SampleResultToken is the result token the verdict of
// events/sqs-results.json carries: ClaimedSampleJob's claim draws it.
const SampleResultToken resulttoken.Token = "events-fixture-result-token-0001"

// SampleTokens is a token source that always draws SampleResultToken.
func SampleTokens() resulttoken.Token { return SampleResultToken }

// ClaimedSampleJob submits SampleBatch to store and claims its job as a
// pass would (attempt 1, result token SampleResultToken), returning the
// job's id: the world a task event or a result of events/ starts from.
func ClaimedSampleJob(t T, store *dynamostore.Store) string {
	t.Helper()
	return ClaimedJob(t, store, SampleBatch())
}

// ClaimedJob submits a batch of one job to store and claims the job as a
// pass would (attempt 1, result token SampleResultToken), returning its id.
func ClaimedJob(t T, store *dynamostore.Store, b job.BatchSpec) string {
	t.Helper()
	ctx := context.Background()
	prev := store.Tokens
	store.Tokens = SampleTokens
	defer func() { store.Tokens = prev }()
	if _, err := store.Submit(ctx, b, time.Now()); err != nil {
		t.Fatalf("submit batch %s: %v", b.Batch, err)
	}
	q := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
	c, err := store.Commit(ctx, scheduler.Plan{At: time.Now(), Models: []scheduler.ModelPlan{{Model: b.Model, Grants: []scheduler.Grant{{Queue: q, Count: 1}}}}}, nil)
	if err != nil || len(c.Claimed) != 1 {
		t.Fatalf("claim a job of %s: %v, %d jobs claimed, want 1", b.Batch, err, len(c.Claimed))
	}
	return c.Claimed[0].ID
}
