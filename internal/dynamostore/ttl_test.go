package dynamostore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// expiresAt reads a job item's TTL attribute; 0 when it has none.
func expiresAt(t *testing.T, s *Store, id string) int64 {
	t.Helper()
	res, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(jobPK(id), skJob), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := res.Item[TTLAttribute].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An ended job expires its retention after its end, however it ended
// (succeeded, failed, cancelled waiting or running); a job still waiting or
// running never does; a store that keeps ended jobs writes no expiry.
func TestEndedJobsExpire(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	s.Retention = 30 * 24 * time.Hour
	b := batch("lab", "sweep", "b1", "gpt", -1, 6)
	submit(t, s, b)
	jobs := commit(t, s, grant(t0, b, 4))
	launchAll(t, s, jobs)
	end := t0.Add(time.Hour)
	for i, exit := range []job.Exit{{Code: 0}, {Code: 1}, {Code: -1, Cancelled: true}} {
		if err := s.TaskStarted(ctx, jobs[i].ID, 1, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.TaskStopped(ctx, jobs[i].ID, 1, exit, end); err != nil {
			t.Fatal(err)
		}
		if got, want := expiresAt(t, s, jobs[i].ID), end.Add(s.Retention).Unix(); got != want {
			t.Errorf("job %s ended %+v: expires at %d, want %d", jobs[i].Key, exit, got, want)
		}
	}
	if err := s.TaskStarted(ctx, jobs[3].ID, 1, t0); err != nil {
		t.Fatal(err)
	}
	if got := expiresAt(t, s, jobs[3].ID); got != 0 {
		t.Errorf("a running job expires at %d, want never", got)
	}
	waiting := job.JobID(b.Account, b.Project, b.Batch, b.Jobs[4].Key)
	if got := expiresAt(t, s, waiting); got != 0 {
		t.Errorf("a waiting job expires at %d, want never", got)
	}
	if _, err := s.Cancel(ctx, scheduler.Scope{Account: "lab"}, end); err != nil {
		t.Fatal(err)
	}
	if got, want := expiresAt(t, s, waiting), end.Add(s.Retention).Unix(); got != want {
		t.Errorf("a cancelled waiting job expires at %d, want %d", got, want)
	}

	keep, _ := newStore(t)
	keep.Retention = 0
	b2 := batch("lab", "keep", "b2", "gpt", -1, 1)
	submit(t, keep, b2)
	j := commit(t, keep, grant(t0, b2, 1))
	launchAll(t, keep, j)
	if err := keep.TaskStopped(ctx, j[0].ID, 1, job.Exit{Code: 0}, end); err != nil {
		t.Fatal(err)
	}
	if got := expiresAt(t, keep, j[0].ID); got != 0 {
		t.Errorf("with no retention, an ended job expires at %d, want never", got)
	}
	check(t, s)
}
