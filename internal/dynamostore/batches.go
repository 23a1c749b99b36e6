package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// catalogItem lists one queue for Batches: pk "BATCHES", sk
// "<a>#<p>#<b>#<model>", written with the queue's first registration and
// never changed, so a scope's queues are one Query by prefix ("#" cannot
// occur in names, so "acme#" is exactly the account acme).
type catalogItem struct {
	PK      string `dynamodbav:"pk"`
	SK      string `dynamodbav:"sk"`
	Queue   string `dynamodbav:"queue"` // the queue item's pk
	Account string `dynamodbav:"account"`
	Project string `dynamodbav:"project"`
	Batch   string `dynamodbav:"batch"`
	Model   string `dynamodbav:"model"`
	Seq     int64  `dynamodbav:"seq"`
}

// BatchCounts is one batch's jobs of one model by state, finished batches
// included, and the parts of a multi-part batch.
type BatchCounts struct {
	Account, Project, Batch, Model string
	Seq                            int64 // submission order of the queue
	Tier                           int   // the tier the batch was sent with; < 0: none
	Registered                     int   // jobs registered so far
	Waiting, Starting, Running     int   // Starting: claimed or launched, not yet running
	Succeeded, Failed, Cancelled   int
	Skipped                        int // a sampled batch's jobs its stop rule left out
	PartsSeen, Parts               int // Parts 0: a batch of one message
	// ProviderRetries: attempts the provider failed (exit 75) that sent a
	// job back to waiting; its last attempt's failure counts in Failed.
	ProviderRetries int
}

// Batches lists the queues (a batch's jobs of one model) inside scope with
// their counts, in the order of their names. It costs O(queues in scope)
// and O(jobs in flight), never a read of a waiting or ended job: one Query
// of the catalog (~10 KB of keys a page: ~100 queues), BatchGetItem of their
// queue and batch items, and the inflight index, where the running jobs
// are counted (a start writes its job alone, no queue counter).
// Queues registered before the catalog existed are not listed.
func (s *Store) Batches(ctx context.Context, scope scheduler.Scope) ([]BatchCounts, error) {
	prefix := ""
	for _, name := range []string{scope.Account, scope.Project, scope.Batch} {
		if name == "" {
			break
		}
		prefix += name + "#"
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.tables.State), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pkCatalog}, ":prefix": &types.AttributeValueMemberS{Value: prefix}},
	}
	if prefix == "" {
		in.KeyConditionExpression = aws.String("pk = :pk")
		delete(in.ExpressionAttributeValues, ":prefix")
	}
	items, err := s.query(ctx, in, 0)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	var cats []catalogItem
	if err := attributevalue.UnmarshalListOfMaps(items, &cats); err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	// The queue and batch items, each once.
	var keys []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, c := range cats {
		for _, k := range [][2]string{{c.Queue, skQueue}, {batchPK(c.Account, c.Project, c.Batch), skBatch}} {
			if !seen[k[0]] {
				seen[k[0]] = true
				keys = append(keys, key(k[0], k[1]))
			}
		}
	}
	got, err := batchGetItems[map[string]types.AttributeValue](ctx, s, keys)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	inflight, err := s.inflight(ctx)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	running := map[scheduler.QueueKey]int{}
	for _, f := range inflight {
		if job.State(f.State) == job.Running {
			running[scheduler.QueueKey{Account: f.Account, Project: f.Project, Batch: f.Batch, Model: f.Model}]++
		}
	}
	byPK := make(map[string]map[string]types.AttributeValue, len(got))
	for _, it := range got {
		byPK[text(it[attrPK])] = it
	}
	out := make([]BatchCounts, 0, len(cats))
	for _, c := range cats {
		q := queueItem{Tier: -1}
		if it, ok := byPK[c.Queue]; ok {
			if err := attributevalue.UnmarshalMap(it, &q); err != nil {
				return nil, fmt.Errorf("list batches: queue %s: %w", c.Queue, err)
			}
		}
		bc := BatchCounts{
			Account: c.Account, Project: c.Project, Batch: c.Batch, Model: c.Model, Seq: c.Seq, Tier: q.Tier,
			Registered: int(q.Size), Waiting: int(q.Waiting),
			Running:   running[scheduler.QueueKey{Account: c.Account, Project: c.Project, Batch: c.Batch, Model: c.Model}],
			Succeeded: int(q.Succeeded), Failed: int(q.Failed), Cancelled: int(q.Cancelled), Skipped: int(q.Skipped),
			ProviderRetries: int(q.ProviderRetries),
		}
		bc.Starting = max(0, bc.Registered-bc.Waiting-bc.Running-bc.Succeeded-bc.Failed-bc.Cancelled-bc.Skipped)
		if b, ok := byPK[batchPK(c.Account, c.Project, c.Batch)]; ok {
			if ns, ok := b["parts_seen"].(*types.AttributeValueMemberNS); ok {
				bc.PartsSeen = len(ns.Value)
			}
			bc.Parts, _ = strconv.Atoi(text(b["parts"]))
		}
		out = append(out, bc)
	}
	slices.SortFunc(out, func(a, b BatchCounts) int {
		return cmp.Or(strings.Compare(a.Account, b.Account), strings.Compare(a.Project, b.Project),
			strings.Compare(a.Batch, b.Batch), strings.Compare(a.Model, b.Model))
	})
	return out, nil
}

// BatchParts returns the parts of a multi-part batch that arrived, in
// order, and how many it has; total 0 for a batch of one message.
func (s *Store) BatchParts(ctx context.Context, account, project, batch string) ([]int, int, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.State), Key: key(batchPK(account, project, batch), skBatch)})
	if err != nil {
		return nil, 0, fmt.Errorf("read batch %s/%s/%s: %w", account, project, batch, err)
	}
	var seen []int
	if ns, ok := out.Item["parts_seen"].(*types.AttributeValueMemberNS); ok {
		for _, v := range ns.Value {
			if n, err := strconv.Atoi(v); err == nil {
				seen = append(seen, n)
			}
		}
	}
	slices.Sort(seen)
	total := 0
	if n, ok := out.Item["parts"].(*types.AttributeValueMemberN); ok {
		total, _ = strconv.Atoi(n.Value)
	}
	return seen, total, nil
}
