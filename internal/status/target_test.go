package status

import (
	"context"
	"errors"
	"testing"

	"github.com/evalsched/evalsched/internal/dynamostore"
	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// oneBatch lists acme/search/b1, whatever the scope.
type oneBatch struct{}

func (oneBatch) Batches(context.Context, scheduler.Scope) ([]dynamostore.BatchCounts, error) {
	return []dynamostore.BatchCounts{{Account: "acme", Project: "search", Batch: "b1", Model: "m", Tier: -1}}, nil
}

func TestJobOfTarget(t *testing.T) {
	ctx := context.Background()
	id := domain.JobID("acme", "search", "b1", "q/17")
	for target, want := range map[string]string{
		id:                     id, // a job id as it is
		"acme/search/b1":       "", // a batch
		"acme/search/b1/q/17":  domain.JobID("acme", "search", "b1/q", "17"),
		"acme/search/b2/key-1": domain.JobID("acme", "search", "b2", "key-1"),
	} {
		got, err := JobOfTarget(ctx, oneBatch{}, target)
		if err != nil || got != want {
			t.Errorf("JobOfTarget(%q) = %q, %v; want %q", target, got, err, want)
		}
	}
	for _, target := range []string{"acme", "acme/search", "project#acme/search", "acme//b1"} {
		if _, err := JobOfTarget(ctx, oneBatch{}, target); !errors.Is(err, ErrNotATarget) {
			t.Errorf("JobOfTarget(%q) = %v, want ErrNotATarget", target, err)
		}
	}
}
