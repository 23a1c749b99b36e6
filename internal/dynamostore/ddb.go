package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The request helpers below page, split into DynamoDB's batch limits and
// retry unprocessed items; every read is strongly consistent except the
// active index (global indexes have no consistent reads).

const (
	batchGetMax   = 100 // keys per BatchGetItem
	batchWriteMax = 25  // requests per BatchWriteItem
	transactMax   = 100 // items per TransactWriteItems
	parallelism   = 8   // concurrent requests of one operation
)

// batchGet reads state items by key, in any order: calls of 100 keys,
// several calls at a time (a Snapshot of 10,000 active queues makes 100
// calls).
func (s *Store) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	return s.batchGetAs(ctx, keys, true)
}

// batchGetAs is batchGet, strongly consistent or not (half the read units).
func (s *Store) batchGetAs(ctx context.Context, keys []map[string]types.AttributeValue, consistent bool) ([]map[string]types.AttributeValue, error) {
	table := s.tables.State
	n := (len(keys) + batchGetMax - 1) / batchGetMax
	parts := make([][]map[string]types.AttributeValue, n)
	err := parallel(ctx, n, func(ctx context.Context, i int) error {
		req := map[string]types.KeysAndAttributes{table: {
			Keys: keys[i*batchGetMax : min((i+1)*batchGetMax, len(keys))], ConsistentRead: aws.Bool(consistent),
		}}
		for try := 0; len(req) > 0; try++ {
			if try > 0 {
				if err := sleep(ctx, try); err != nil {
					return err
				}
			}
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return err
			}
			parts[i] = append(parts[i], res.Responses[table]...)
			req = res.UnprocessedKeys
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// batchGetItems reads state items by key (batchGet, in any order; a key
// with no item is left out) and decodes each into a T; an item that does
// not decode is an error naming its key. T map[string]types.AttributeValue
// keeps the items as read (a read of several kinds of item).
func batchGetItems[T any](ctx context.Context, s *Store, keys []map[string]types.AttributeValue) ([]T, error) {
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(items))
	for i, it := range items {
		if raw, ok := any(&out[i]).(*map[string]types.AttributeValue); ok {
			*raw = it
			continue
		}
		if err := attributevalue.UnmarshalMap(it, &out[i]); err != nil {
			return nil, fmt.Errorf("item %s %s: %w", text(it[attrPK]), text(it[attrSK]), err)
		}
	}
	return out, nil
}

// query returns every item of a query, following pages; limit > 0 stops
// after that many items.
func (s *Store) query(ctx context.Context, in *dynamodb.QueryInput, limit int) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for {
		if limit > 0 {
			in.Limit = aws.Int32(int32(limit - len(out)))
		}
		res, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// scan returns every item of a table.
func (s *Store) scan(ctx context.Context, table string) ([]map[string]types.AttributeValue, error) {
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	var out []map[string]types.AttributeValue
	for {
		res, err := s.db.Scan(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// batchWrite writes requests in calls of 25, several calls at a time,
// retrying what DynamoDB leaves unprocessed.
func (s *Store) batchWrite(ctx context.Context, table string, reqs []types.WriteRequest) error {
	n := (len(reqs) + batchWriteMax - 1) / batchWriteMax
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		req := map[string][]types.WriteRequest{table: reqs[i*batchWriteMax : min((i+1)*batchWriteMax, len(reqs))]}
		for try := 0; len(req) > 0; try++ {
			if try > 0 {
				if err := sleep(ctx, try); err != nil {
					return err
				}
			}
			res, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err != nil {
				return err
			}
			req = res.UnprocessedItems
		}
		return nil
	})
}

// transact runs one transaction with an idempotency token, so the SDK's
// retries of a call whose answer was lost apply it once.
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem, tok string) error {
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: items, ClientRequestToken: aws.String(tok),
	})
	return err
}

// cancelReasons returns the cancellation codes of a cancelled transaction
// (one per item, "None" for the items that were fine), or nil.
func cancelReasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	codes := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	if len(codes) == 0 {
		codes = []string{"Unknown"}
	}
	return codes
}

// isConditionFailed reports a single write refused by its condition.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// parallel runs f for 0..n-1, parallelism at a time, and returns the first error.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	if n == 1 {
		return f(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range min(n, parallelism) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// jitter sleeps a random time below d.
func jitter(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(rand.N(d)):
		return nil
	}
}

// sleep backs off before try (1, 2, ...): 25 ms doubling to 1.6 s.
func sleep(ctx context.Context, try int) error {
	d := 25 * time.Millisecond << min(try-1, 6)
	select {
	case <-ctx.Done():
		return fmt.Errorf("back off: %w", ctx.Err())
	case <-time.After(d):
		return nil
	}
}
