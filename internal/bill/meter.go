package bill

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/dynamostore"
)

// Usage is what a stretch of work asked of DynamoDB.
type Usage struct {
	Requests  int
	ByOp      map[string]int     // requests by operation
	UnitsByOp map[string]float64 // units by operation
	RRU, WRU  float64            // read and write request units
}

func (u *Usage) add(op string, read bool, units float64) {
	if u.ByOp == nil {
		u.ByOp, u.UnitsByOp = map[string]int{}, map[string]float64{}
	}
	u.Requests++
	u.ByOp[op]++
	u.UnitsByOp[op] += units
	if read {
		u.RRU += units
	} else {
		u.WRU += units
	}
}

// Plus is u and o together.
func (u Usage) Plus(o Usage) Usage {
	out := Usage{Requests: u.Requests + o.Requests, RRU: u.RRU + o.RRU, WRU: u.WRU + o.WRU, ByOp: map[string]int{}, UnitsByOp: map[string]float64{}}
	for _, x := range []Usage{u, o} {
		for op, n := range x.ByOp {
			out.ByOp[op] += n
		}
		for op, n := range x.UnitsByOp {
			out.UnitsByOp[op] += n
		}
	}
	return out
}

// Minus is u without o (o a part of u).
func (u Usage) Minus(o Usage) Usage {
	out := u.Plus(Usage{})
	out.Requests -= o.Requests
	out.RRU -= o.RRU
	out.WRU -= o.WRU
	for op, n := range o.ByOp {
		out.ByOp[op] -= n
		out.UnitsByOp[op] -= o.UnitsByOp[op]
		if out.ByOp[op] == 0 {
			delete(out.ByOp, op)
			delete(out.UnitsByOp, op)
		}
	}
	return out
}

// Per is u divided by n, rounded to 3 decimals (requests stay counts of n).
func (u Usage) Per(n float64) PerUnit {
	r := func(v float64) float64 { return math.Round(v/n*1000) / 1000 }
	p := PerUnit{Requests: r(float64(u.Requests)), RRU: r(u.RRU), WRU: r(u.WRU), ByOp: map[string]float64{}}
	for op, k := range u.ByOp {
		p.ByOp[op] = r(float64(k))
	}
	return p
}

// PerUnit is a usage per job, per pass or per entry.
type PerUnit struct {
	Requests float64            `json:"requests"`
	ByOp     map[string]float64 `json:"by_op"`
	RRU      float64            `json:"rru"`
	WRU      float64            `json:"wru"`
}

// Meter is a DynamoDB client that asks for the consumed capacity of every
// request (ReturnConsumedCapacity TOTAL) and sums it.
//
// DynamoDB Local reports the capacity of single-item operations, queries
// and batches as DynamoDB does (index writes included), but 2 units for
// any TransactWriteItems whatever its items. A transaction's units are
// therefore computed from its items as DynamoDB bills them: each item 2
// units per KB of the larger of its before and after images (a
// ConditionCheck too), read around the call without metering; each global
// secondary index entry the write puts or deletes 1 unit per KB of its
// projection (index upkeep is not transactional: it is billed as a
// standard write).
type Meter struct {
	next dynamostore.DynamoDBAPI

	mu      sync.Mutex
	use     Usage
	indexes map[string][]index // by table
}

// index is one global secondary index: its keys and projection.
type index struct {
	keys []string
	all  bool
	proj map[string]bool // INCLUDE's attributes (keys and the table's keys added)
}

// NewMeter meters the requests made through it to next.
func NewMeter(next dynamostore.DynamoDBAPI) *Meter {
	return &Meter{next: next, indexes: map[string][]index{}}
}

// Take returns the usage since the last Take and starts afresh.
func (m *Meter) Take() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.use
	m.use = Usage{}
	if u.ByOp == nil {
		u.ByOp, u.UnitsByOp = map[string]int{}, map[string]float64{}
	}
	return u
}

func (m *Meter) record(op string, read bool, units float64) {
	m.mu.Lock()
	m.use.add(op, read, units)
	m.mu.Unlock()
}

func capUnits(cs ...types.ConsumedCapacity) float64 {
	n := 0.0
	for _, c := range cs {
		n += aws.ToFloat64(c.CapacityUnits)
	}
	return n
}

func one(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	return capUnits(*c)
}

const total = types.ReturnConsumedCapacityTotal

func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.GetItem(ctx, in, o...)
	if err != nil {
		m.record("GetItem", true, 0)
		return out, err
	}
	m.record("GetItem", true, one(out.ConsumedCapacity))
	return out, nil
}

func (m *Meter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.Query(ctx, in, o...)
	if err != nil {
		m.record("Query", true, 0)
		return out, err
	}
	m.record("Query", true, one(out.ConsumedCapacity))
	return out, nil
}

func (m *Meter) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.Scan(ctx, in, o...)
	if err != nil {
		m.record("Scan", true, 0)
		return out, err
	}
	m.record("Scan", true, one(out.ConsumedCapacity))
	return out, nil
}

func (m *Meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.BatchGetItem(ctx, in, o...)
	if err != nil {
		m.record("BatchGetItem", true, 0)
		return out, err
	}
	m.record("BatchGetItem", true, capUnits(out.ConsumedCapacity...))
	return out, nil
}

func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.PutItem(ctx, in, o...)
	if err != nil {
		m.record("PutItem", false, 0)
		return out, err
	}
	m.record("PutItem", false, one(out.ConsumedCapacity))
	return out, nil
}

func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.UpdateItem(ctx, in, o...)
	if err != nil {
		m.record("UpdateItem", false, 0)
		return out, err
	}
	op := "UpdateItem"
	if strings.HasPrefix(text(in.Key["pk"]), modelStatePrefix) {
		op = OpModelStates
	}
	m.record(op, false, one(out.ConsumedCapacity))
	return out, nil
}

func (m *Meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.DeleteItem(ctx, in, o...)
	if err != nil {
		m.record("DeleteItem", false, 0)
		return out, err
	}
	m.record("DeleteItem", false, one(out.ConsumedCapacity))
	return out, nil
}

func (m *Meter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.next.BatchWriteItem(ctx, in, o...)
	if err != nil {
		m.record("BatchWriteItem", false, 0)
		return out, err
	}
	m.record("BatchWriteItem", false, capUnits(out.ConsumedCapacity...))
	return out, nil
}

func (m *Meter) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return m.next.CreateTable(ctx, in, o...)
}

func (m *Meter) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return m.next.DescribeTable(ctx, in, o...)
}

// TransactWriteItems reads the items before and after the call (unmetered)
// and bills the transaction from their sizes (Meter's doc).
func (m *Meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	// Each item's table and key (a Put's key read from its item).
	refs := make([]tableKey, len(in.TransactItems))
	for i, it := range in.TransactItems {
		var err error
		switch {
		case it.Put != nil:
			refs[i].table = aws.ToString(it.Put.TableName)
			refs[i].key, err = m.keyOf(ctx, refs[i].table, it.Put.Item)
		case it.Update != nil:
			refs[i] = tableKey{aws.ToString(it.Update.TableName), it.Update.Key}
		case it.Delete != nil:
			refs[i] = tableKey{aws.ToString(it.Delete.TableName), it.Delete.Key}
		case it.ConditionCheck != nil:
			refs[i] = tableKey{aws.ToString(it.ConditionCheck.TableName), it.ConditionCheck.Key}
		}
		if err != nil {
			return nil, err
		}
	}
	var out *dynamodb.TransactWriteItemsOutput
	units, err := m.billed(ctx, refs, 2, func(i int) bool { return in.TransactItems[i].ConditionCheck != nil }, func() (err error) {
		out, err = m.next.TransactWriteItems(ctx, in, o...)
		return err
	})
	if errors.Is(err, errMeter) {
		return nil, err
	}
	m.record("TransactWriteItems", false, units)
	return out, err
}

// errMeter marks the meter's own failures (reading the items around a
// call), apart from the call's.
var errMeter = errors.New("meter")

// billed runs call between unmetered reads of the items refs and returns
// the units DynamoDB bills for it: perKB units a KB of each item's larger
// image (a refused call: the items as they are), plus each index entry it
// moves (not for the items noIndex names: a ConditionCheck writes none).
// The error is call's, or the meter's (errMeter).
func (m *Meter) billed(ctx context.Context, refs []tableKey, perKB float64, noIndex func(int) bool, call func() error) (float64, error) {
	before, err := m.items(ctx, refs)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errMeter, err)
	}
	callErr := call()
	after := before
	if callErr == nil {
		if after, err = m.items(ctx, refs); err != nil {
			return 0, fmt.Errorf("%w: %w", errMeter, err)
		}
	}
	units := 0.0
	for i, r := range refs {
		b, a := before[i], after[i]
		units += perKB * kb(max(dynamostore.ItemBytes(b), dynamostore.ItemBytes(a)), 1024)
		if noIndex(i) {
			continue
		}
		gsis, err := m.gsis(ctx, r.table)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", errMeter, err)
		}
		for _, g := range gsis {
			units += g.upkeep(b, a)
		}
	}
	return units, callErr
}

// OpModelStates names the writes of the pass's model states (one
// UpdateItem a model, keyed by its state item), apart from claims and
// events.
const OpModelStates = "UpdateItem(model states)"

// modelStatePrefix begins the partition key of a model state item
// (internal/dynamostore: "MODELS#<bucket>").
const modelStatePrefix = "MODELS#"

func text(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

type tableKey struct {
	table string
	key   map[string]types.AttributeValue
}

// items reads each item by key, consistently, without metering (nil: none).
func (m *Meter) items(ctx context.Context, tks []tableKey) ([]map[string]types.AttributeValue, error) {
	out := make([]map[string]types.AttributeValue, len(tks))
	for i, tk := range tks {
		res, err := m.next.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tk.table), Key: tk.key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("meter: read %s: %w", tk.table, err)
		}
		out[i] = res.Item
	}
	return out, nil
}

// keyOf is the primary key of item in table.
func (m *Meter) keyOf(ctx context.Context, table string, item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	d, err := m.next.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("meter: describe %s: %w", table, err)
	}
	k := map[string]types.AttributeValue{}
	for _, e := range d.Table.KeySchema {
		n := aws.ToString(e.AttributeName)
		k[n] = item[n]
	}
	return k, nil
}

// gsis are table's global secondary indexes, described once.
func (m *Meter) gsis(ctx context.Context, table string) ([]index, error) {
	m.mu.Lock()
	g, ok := m.indexes[table]
	m.mu.Unlock()
	if ok {
		return g, nil
	}
	d, err := m.next.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("meter: describe %s: %w", table, err)
	}
	var tableKeys []string
	for _, e := range d.Table.KeySchema {
		tableKeys = append(tableKeys, aws.ToString(e.AttributeName))
	}
	for _, gsi := range d.Table.GlobalSecondaryIndexes {
		x := index{proj: map[string]bool{}}
		for _, e := range gsi.KeySchema {
			x.keys = append(x.keys, aws.ToString(e.AttributeName))
		}
		if p := gsi.Projection; p != nil {
			x.all = p.ProjectionType == types.ProjectionTypeAll
			for _, n := range p.NonKeyAttributes {
				x.proj[n] = true
			}
		}
		for _, n := range append(slices.Clone(x.keys), tableKeys...) {
			x.proj[n] = true
		}
		g = append(g, x)
	}
	m.mu.Lock()
	m.indexes[table] = g
	m.mu.Unlock()
	return g, nil
}

// entry is item's entry in the index (nil: none, a key is missing).
func (x index) entry(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	for _, k := range x.keys {
		if item[k] == nil {
			return nil
		}
	}
	if x.all {
		return item
	}
	e := map[string]types.AttributeValue{}
	for n, v := range item {
		if x.proj[n] {
			e[n] = v
		}
	}
	return e
}

// upkeep is the write units of moving the index from before to after.
func (x index) upkeep(before, after map[string]types.AttributeValue) float64 {
	b, a := x.entry(before), x.entry(after)
	switch {
	case b == nil && a == nil:
		return 0
	case b == nil:
		return kb(dynamostore.ItemBytes(a), 1024)
	case a == nil:
		return kb(dynamostore.ItemBytes(b), 1024)
	}
	for _, k := range x.keys {
		if !reflect.DeepEqual(b[k], a[k]) {
			return kb(dynamostore.ItemBytes(b), 1024) + kb(dynamostore.ItemBytes(a), 1024) // a delete and a put
		}
	}
	if reflect.DeepEqual(b, a) {
		return 0
	}
	return kb(max(dynamostore.ItemBytes(b), dynamostore.ItemBytes(a)), 1024)
}

// kb is how many units of size unit n bytes take (at least 1).
func kb(n, unit int) float64 { return math.Max(1, math.Ceil(float64(n)/float64(unit))) }
