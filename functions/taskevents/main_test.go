package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// eventJobID is the job id in events/ecs-*.json; the test puts the id of the
// job it claimed in its place, as the launcher's startedBy would.
const eventJobID = "5b0e8a9c1d2f3a4b5c6d7e8f9a0b1c2d"

// TestUnderTheEmulator builds the function as it ships, runs it under the
// runtime interface emulator against DynamoDB Local, invokes it with
// events/ecs-running.json and events/ecs-stopped-exit0.json for a claimed
// job and finds the job succeeded and its timings in the function's EMF.
func TestUnderTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function and the emulator")
	}
	ctx := context.Background()
	ddbEndpoint := localservers.DynamoDB(t)

	// The world: tables with the job of events/sqs-batch.json, claimed
	// (attempt 1).
	const prefix = "rie-taskevents-"
	store := dynamotest.Tables(t, ddbEndpoint, prefix, scheduler.ModelConfig{Enabled: true, MaxLimit: 10})
	id := dynamotest.ClaimedSampleJob(t, store)

	fn := localservers.Lambda(t, "taskevents",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB="+ddbEndpoint, "EVALSCHED_TABLE_PREFIX="+prefix,
	)
	invoke := func(file string) {
		t.Helper()
		event, err := os.ReadFile("../../events/" + file)
		if err != nil {
			t.Fatal(err)
		}
		fn.Invoke([]byte(strings.ReplaceAll(string(event), eventJobID, id)))
	}

	invoke("ecs-running.json")
	j, ok, err := store.Job(ctx, id)
	if err != nil || !ok || j.State != job.Running {
		t.Fatalf("after the RUNNING event the job is %q (%v, %v), want RUNNING\n%s", j.State, ok, err, fn.Output())
	}
	invoke("ecs-stopped-exit0.json")
	j, ok, err = store.Job(ctx, id)
	if err != nil || !ok || j.State != job.Succeeded || j.Exit.Code != 0 {
		t.Fatalf("after the STOPPED event the job is %q exit %+v (%v, %v), want SUCCEEDED exit 0\n%s", j.State, j.Exit, ok, err, fn.Output())
	}
	if testing.Verbose() {
		t.Logf("emulator and function output:\n%s", fn.Output())
	}
	// ecs-running.json: created 12:00:52.123, started 12:01:38.456;
	// ecs-stopped-exit0.json: stopped 12:11:05.
	for _, want := range []string{`"StartSeconds":46.333`, `"JobRunSeconds":566.544`, `"Model":"gpt-5.5"`} {
		if !strings.Contains(fn.Output(), want) {
			t.Errorf("no EMF document with %s in the function's output:\n%s", want, fn.Output())
		}
	}
}
