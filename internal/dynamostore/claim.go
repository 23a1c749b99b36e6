package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// claim claims up to g.Count of the queue's oldest waiting jobs, reading
// the queue afresh for each transaction of up to maxClaimJobs (takeFront):
// retried jobs (back items, oldest position first), then the cursor's. A
// sampled batch's queue is claimed by stratum instead (release.go). The
// jobs enter the inflight index, where Snapshot counts the model's slots.
func (s *Store) claim(ctx context.Context, g scheduler.Grant, at time.Time) ([]scheduler.Job, error) {
	pk := queuePK(g.Queue)
	atKey := stamp(at)
	mv := move{
		job: func(j *jobItem) (expression.UpdateBuilder, error) {
			j.ResultToken = s.resultToken()
			return claimUpdate(j, g.Tier, atKey)
		},
		claim: true,
	}
	var out []scheduler.Job
	for conflicts := 0; len(out) < g.Count; {
		q, ok, err := s.readQueue(ctx, pk)
		if err != nil {
			return out, fmt.Errorf("read queue: %w", err)
		}
		if !ok || q.Cancelling != "" {
			return out, nil // gone, or a cancel is taking its jobs
		}
		if q.Sampled {
			jobs, err := s.claimSampled(ctx, scheduler.Grant{Queue: g.Queue, Tier: g.Tier, Count: g.Count - len(out)}, at)
			return append(out, jobs...), err
		}
		taken, st, err := s.takeFront(ctx, pk, q, g.Count-len(out), mv, &conflicts)
		if err != nil {
			return out, err
		}
		switch st {
		case frontEmpty:
			return out, nil
		case frontMoved:
			continue // read again
		}
		for _, j := range taken {
			out = append(out, j.schedulerJob())
		}
	}
	return out, nil
}
