package depthitem

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// PK is the partition of the readings items in the state table; the
// bridge's IAM role may write no other (dynamodb:LeadingKeys).
const PK = "DEPTH"

// ShardBytes bounds one item's estimated size, well under DynamoDB's
// 400 KB item limit (the estimate is an upper bound: see modelBytes).
const ShardBytes = 350_000

// DefaultLookback is how old a reading may be before the reader drops it:
// gatewaydepth's lookback for the newest datapoint.
const DefaultLookback = 3 * time.Minute

// Attribute names: short, since every byte of a name counts in the item's
// size and its read units.
const (
	attrAt     = "at" // the write's time, Unix milliseconds
	attrModels = "m"  // model → [depthAt, depth, inServiceAt, inService, errorAt, errorRate, calls]
)

// modelBytes bounds one model's share of an item: its name, the map
// entry's overhead, and seven numbers of at most 21 bytes each with a
// list element's byte.
func modelBytes(name string) int { return len(name) + 3 + 3 + 7*(21+1) }

// WriteAPI is the DynamoDB call the writer makes.
type WriteAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Writer writes the readings items.
type Writer struct {
	API   WriteAPI
	Table string // the state table
}

// Put writes every model's readings at now: one PutItem per shard.
func (w *Writer) Put(ctx context.Context, now time.Time, depths map[string]scheduler.Depth) error {
	names := slices.Sorted(maps.Keys(depths))
	shard, size := 0, 0
	cur := map[string]types.AttributeValue{}
	put := func() error {
		_, err := w.API.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(w.Table),
			Item: map[string]types.AttributeValue{
				"pk":       &types.AttributeValueMemberS{Value: PK},
				"sk":       &types.AttributeValueMemberS{Value: fmt.Sprintf("%04d", shard)},
				attrAt:     num(float64(now.UnixMilli())),
				attrModels: &types.AttributeValueMemberM{Value: cur},
			},
		})
		if err != nil {
			return fmt.Errorf("put depth readings shard %d (%d models): %w", shard, len(cur), err)
		}
		shard, size, cur = shard+1, 0, map[string]types.AttributeValue{}
		return nil
	}
	for _, m := range names {
		if b := modelBytes(m); size+b > ShardBytes && len(cur) > 0 {
			if err := put(); err != nil {
				return err
			}
		}
		size += modelBytes(m)
		cur[m] = encode(depths[m])
	}
	if len(cur) > 0 || shard == 0 {
		return put()
	}
	return nil
}

func encode(d scheduler.Depth) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: []types.AttributeValue{
		num(unix(d.At)), num(d.Value), num(unix(d.InServiceAt)), num(d.InService),
		num(unix(d.ErrorAt)), num(d.ErrorRate), num(d.Calls),
	}}
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.Unix())
}

func num(v float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'g', -1, 64)}
}

// ReadAPI is the DynamoDB call the reader makes.
type ReadAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Reader implements scheduler.DepthReader on the readings items.
type Reader struct {
	API      ReadAPI
	Table    string        // the state table
	Lookback time.Duration // 0: DefaultLookback
}

// Depths reads the readings items (one eventually consistent Query) and
// returns each asked model's readings no older than the lookback; a model
// with none is missing from the map. A malformed model entry is skipped.
func (r *Reader) Depths(ctx context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	want := make(map[string]bool, len(models))
	for _, m := range models {
		want[m] = true
	}
	since := now.Add(-cmp.Or(r.Lookback, DefaultLookback))
	out := make(map[string]scheduler.Depth, len(models))
	p := dynamodb.NewQueryPaginator(r.API, &dynamodb.QueryInput{
		TableName:                 aws.String(r.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: PK}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, fmt.Errorf("read depth readings: %w", err)
		}
		for _, item := range page.Items {
			ms, _ := item[attrModels].(*types.AttributeValueMemberM)
			if ms == nil {
				continue
			}
			for m, v := range ms.Value {
				if !want[m] {
					continue
				}
				d, ok := decode(v, since)
				if !ok {
					continue
				}
				out[m] = newer(out[m], d)
			}
		}
	}
	return out, nil
}

// decode reads one model's entry, dropping each reading older than since;
// false when the entry is malformed or nothing is left.
func decode(v types.AttributeValue, since time.Time) (scheduler.Depth, bool) {
	l, _ := v.(*types.AttributeValueMemberL)
	if l == nil || len(l.Value) != 7 {
		return scheduler.Depth{}, false
	}
	var f [7]float64
	for i, e := range l.Value {
		n, _ := e.(*types.AttributeValueMemberN)
		if n == nil {
			return scheduler.Depth{}, false
		}
		x, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return scheduler.Depth{}, false
		}
		f[i] = x
	}
	at := func(s float64) time.Time {
		if s <= 0 {
			return time.Time{}
		}
		if t := time.Unix(int64(s), 0).UTC(); !t.Before(since) {
			return t
		}
		return time.Time{}
	}
	var d scheduler.Depth
	if d.At = at(f[0]); !d.At.IsZero() {
		d.Value = f[1]
		// The calls in service pair with the depth of their period.
		if s := at(f[2]); s.Equal(d.At) {
			d.InService, d.InServiceAt = f[3], s
		}
	}
	if d.ErrorAt = at(f[4]); !d.ErrorAt.IsZero() {
		d.ErrorRate, d.Calls = f[5], f[6]
	}
	return d, !d.At.IsZero() || !d.ErrorAt.IsZero()
}

// newer merges two readings of one model (from two shards): each part
// from whichever is newer.
func newer(a, b scheduler.Depth) scheduler.Depth {
	if b.At.After(a.At) {
		a.Value, a.At, a.InService, a.InServiceAt = b.Value, b.At, b.InService, b.InServiceAt
	}
	if b.ErrorAt.After(a.ErrorAt) {
		a.ErrorRate, a.Calls, a.ErrorAt = b.ErrorRate, b.Calls, b.ErrorAt
	}
	return a
}
