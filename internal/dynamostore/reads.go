package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The reads of queue and job items that several operations share: the
// claims, cancel, Submit's checks and the task events.

// readQueue reads one queue item; ok is false when it does not exist.
func (s *Store) readQueue(ctx context.Context, pk string) (queueItem, bool, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(pk, skQueue), ConsistentRead: aws.Bool(true),
	})
	if err != nil || len(res.Item) == 0 {
		return queueItem{}, false, err
	}
	var q queueItem
	err = attributevalue.UnmarshalMap(res.Item, &q)
	return q, err == nil, err
}

// readBacks returns up to n of a queue's back items, oldest position first.
func (s *Store) readBacks(ctx context.Context, pk string, n int) ([]backItem, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.State),
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :b)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":b":  &types.AttributeValueMemberS{Value: backPrefix},
		},
	}, n)
	if err != nil {
		return nil, fmt.Errorf("read retried jobs: %w", err)
	}
	var out []backItem
	if err := attributevalue.UnmarshalListOfMaps(items, &out); err != nil {
		return nil, fmt.Errorf("read retried jobs: %w", err)
	}
	return out, nil
}

// idsAt returns the ids of positions [from, from+n) of a queue.
func (s *Store) idsAt(ctx context.Context, pk string, from, n int64) ([]string, error) {
	ids := make([]string, 0, n)
	for pos := from; pos < from+n; {
		c, err := s.chunkAt(ctx, pk, pos)
		if err != nil {
			return nil, err
		}
		end := min(from+n, c.Start+int64(len(c.IDs)))
		ids = append(ids, c.IDs[pos-c.Start:end-c.Start]...)
		pos = end
	}
	return ids, nil
}

// chunkAt returns the chunk holding a registered position: the one with the
// greatest start at or below it.
func (s *Store) chunkAt(ctx context.Context, pk string, pos int64) (chunkItem, error) {
	s.mu.Lock()
	c, ok := s.chunks[pk]
	s.mu.Unlock()
	if ok && c.covers(pos) {
		return c, nil
	}
	items, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.State),
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":lo": &types.AttributeValueMemberS{Value: chunkSK(0)},
			":hi": &types.AttributeValueMemberS{Value: chunkSK(pos)},
		},
		ScanIndexForward: aws.Bool(false),
		Limit:            aws.Int32(1),
	})
	if err != nil {
		return c, fmt.Errorf("read queue order: %w", err)
	}
	if len(items.Items) == 1 {
		c = chunkItem{}
		if err := attributevalue.UnmarshalMap(items.Items[0], &c); err != nil {
			return c, fmt.Errorf("read queue order: %w", err)
		}
	}
	if !c.covers(pos) {
		return c, fmt.Errorf("read queue order: queue %s has no chunk for position %d", pk, pos)
	}
	s.mu.Lock()
	if len(s.chunks) >= maxCachedChunks {
		clear(s.chunks) // a cache: what it forgets is read again
	}
	s.chunks[pk] = c
	s.mu.Unlock()
	return c, nil
}

// readJobs reads job items by id.
func (s *Store) readJobs(ctx context.Context, ids []string) (map[string]jobItem, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = key(jobPK(id), skJob)
	}
	items, err := batchGetItems[jobItem](ctx, s, keys)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	out := make(map[string]jobItem, len(items))
	for _, j := range items {
		out[j.ID] = j
	}
	return out, nil
}

// readJob reads one job item; ok is false when there is none.
func (s *Store) readJob(ctx context.Context, id string) (jobItem, bool, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(jobPK(id), skJob), ConsistentRead: aws.Bool(true),
	})
	if err != nil || len(res.Item) == 0 {
		return jobItem{}, false, err
	}
	var j jobItem
	err = attributevalue.UnmarshalMap(res.Item, &j)
	return j, err == nil, err
}
