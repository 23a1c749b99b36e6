package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// A scheduler shard (scheduler.ShardOf) runs its passes over a Store scoped
// by ScopeToShard. The scoping is by reading and deciding less, not by
// writing differently: the model states and the active index are always
// partitioned by the model's bucket (ShardOf over 12), whatever the shard
// count, so the count can change between two minutes without moving data,
// and the intake, the task events and the operator's commands need not know
// there are shards.
//
// What a shard k of N (N dividing 12) reads in a Snapshot:
//
//	Scan models, Scan pins          every item     small, operator-edited
//	Query MODELS#<b> (states)       its buckets    ÷ N
//	BatchGetItem counters           its models     ÷ N
//	Query active index QUEUE#<b>    its buckets    ÷ N
//
// and its Commit claims, records and writes the state of its models only.

// owns reports whether the store's shard owns the model (every model when
// the store is not scoped).
func (s *Store) owns(model string) bool {
	return s.shards <= 1 || scheduler.ShardOf(model, s.shards) == s.shard
}

// queueModel returns the model of a queue item's pk,
// "QUEUE#<account>#<project>#<batch>#<model>": names cannot contain "#"
// (checkName), so the model is the last field. It lets a shard drop another
// shard's queue from the active index by its key alone.
func queueModel(pk string) string {
	return pk[strings.LastIndexByte(pk, '#')+1:]
}

// ScopeToShard scopes the store to shard k of n (scheduler.ShardOf): its
// Snapshot and InFlight see only the shard's models, and when n divides the
// bucket count its Snapshot queries only the shard's buckets — 1/n of the
// model states and of the active index.
func (s *Store) ScopeToShard(k, n int) { s.shard, s.shards = k, n }

// bucketsToRead are the buckets a read queries: the scoped store's own
// (bucket b holds shard b mod n's models when n divides the bucket count),
// else — unscoped, or scoped by an n that does not divide it — all.
func (s *Store) bucketsToRead(scoped bool) []int {
	var out []int
	for b := range buckets {
		if !scoped || s.shards <= 1 || buckets%s.shards != 0 || b%s.shards == s.shard {
			out = append(out, b)
		}
	}
	return out
}

// queryBuckets runs one Query per bucket of a partition prefix ("MODELS",
// or "QUEUE" on the active index), several at a time, and returns every
// item.
func (s *Store) queryBuckets(ctx context.Context, bs []int, in func(pk string) *dynamodb.QueryInput) ([]map[string]types.AttributeValue, error) {
	parts := make([][]map[string]types.AttributeValue, len(bs))
	err := parallel(ctx, len(bs), func(ctx context.Context, i int) error {
		var err error
		parts[i], err = s.query(ctx, in(strconv.Itoa(bs[i])), 0)
		return err
	})
	return slices.Concat(parts...), err
}

// pkShards is the partition of the shards' load reports: one item a shard,
// sk its number, rewritten after each of its passes.
const pkShards = "SHARDS"

type loadItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Shard  int    `dynamodbav:"shard"`
	Held   int    `dynamodbav:"held"`
	Demand int    `dynamodbav:"demand"`
	At     string `dynamodbav:"at"`
}

// ShardLoads implements scheduler.LoadStore: one strongly consistent Query.
// A malformed item (edited by hand) is skipped with a warning: its shard
// then counts as silent, and keeps its static share.
func (s *Store) ShardLoads(ctx context.Context) ([]scheduler.ShardLoad, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.State),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pkShards}},
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("read shard loads: %w", err)
	}
	out := make([]scheduler.ShardLoad, 0, len(items))
	for _, it := range items {
		var l loadItem
		err := attributevalue.UnmarshalMap(it, &l)
		var at time.Time
		if err == nil {
			at, err = parseStamp(l.At)
		}
		if err != nil {
			s.log().Warn("shard load item skipped", "sk", text(it[attrSK]), "err", err)
			continue
		}
		out = append(out, scheduler.ShardLoad{Shard: l.Shard, Held: l.Held, Demand: l.Demand, At: at})
	}
	return out, nil
}

// PutShardLoad implements scheduler.LoadStore: one PutItem.
func (s *Store) PutShardLoad(ctx context.Context, l scheduler.ShardLoad) error {
	item, err := attributevalue.MarshalMap(loadItem{
		PK: pkShards, SK: fmt.Sprintf("%03d", l.Shard), Shard: l.Shard, Held: l.Held, Demand: l.Demand, At: stamp(l.At),
	})
	if err == nil {
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.State), Item: item})
	}
	if err != nil {
		return fmt.Errorf("report shard load: %w", err)
	}
	return nil
}
