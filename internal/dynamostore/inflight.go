package dynamostore

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/scheduler"
)

type inflightItem struct {
	ID             string `dynamodbav:"id"`
	Account        string `dynamodbav:"account"`
	Project        string `dynamodbav:"project"`
	Batch          string `dynamodbav:"batch"`
	Model          string `dynamodbav:"model"`
	State          string `dynamodbav:"state"`
	Attempt        int    `dynamodbav:"attempt"`
	TaskARN        string `dynamodbav:"task_arn"`
	ClaimedAt      string `dynamodbav:"claimed_at"`
	StartedAt      string `dynamodbav:"started_at"`
	TimeoutSeconds int    `dynamodbav:"timeout_seconds"`
}

// InFlight lists the jobs holding a slot, oldest claim first within each
// shard: one Query per shard of the inflight index (and its pages). The cost
// grows with the jobs running, never with the jobs waiting. Scoped to a shard
// it lists the owned models' jobs only, so a scheduler shard's reconciler
// repairs its own; the index is not keyed by model, so it still reads all.
func (s *Store) InFlight(ctx context.Context) ([]scheduler.InFlight, error) {
	all, err := s.inflight(ctx)
	if err != nil {
		return nil, err
	}
	var out []scheduler.InFlight
	for _, f := range all {
		if s.owns(f.Model) {
			out = append(out, f)
		}
	}
	return out, nil
}

// inflight lists every job holding a slot, of every model: one Query of
// each shard of the index (and its pages), the shards side by side — the
// Snapshot reads it every pass.
func (s *Store) inflight(ctx context.Context) ([]scheduler.InFlight, error) {
	parts := make([][]scheduler.InFlight, inflightShards)
	err := parallel(ctx, inflightShards, func(ctx context.Context, shard int) error {
		items, err := s.query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.tables.State),
			IndexName:                 aws.String(InflightIndex),
			KeyConditionExpression:    aws.String("#k = :k"),
			ExpressionAttributeNames:  map[string]string{"#k": attrInflight},
			ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: fmt.Sprintf("INFLIGHT#%d", shard)}},
		}, 0)
		if err != nil {
			return err
		}
		for _, it := range items {
			var j inflightItem
			if err := attributevalue.UnmarshalMap(it, &j); err != nil {
				return err
			}
			f := scheduler.InFlight{ID: j.ID, Account: j.Account, Project: j.Project, Batch: j.Batch, Model: j.Model, State: j.State, Attempt: j.Attempt, TaskARN: j.TaskARN, TimeoutSeconds: j.TimeoutSeconds}
			f.ClaimedAt, _ = parseStamp(j.ClaimedAt)
			if j.StartedAt != "" {
				f.StartedAt, _ = parseStamp(j.StartedAt)
			}
			parts[shard] = append(parts[shard], f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs in flight: %w", err)
	}
	return slices.Concat(parts...), nil
}

// JobTiers implements scheduler.JobTierReader: the tier each job's claim
// recorded, read from the job items (BatchGetItem, 100 a call). Only the
// yield step reads it, in the passes that stop tasks; the inflight index
// does not project the tier, which would cost every claim an index write.
func (s *Store) JobTiers(ctx context.Context, ids []string) (map[string]int, error) {
	jobs, err := s.readJobs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read job tiers: %w", err)
	}
	out := make(map[string]int, len(jobs))
	for id, j := range jobs {
		out[id] = j.Tier
	}
	return out, nil
}
