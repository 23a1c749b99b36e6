package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// One DynamoDB Local serves the whole test binary, started by the first
// test that needs it; each test gets its own tables under a unique prefix.
var (
	server   *localservers.Server
	client   *dynamodb.Client
	startErr error
	start    sync.Once
	tableSeq atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

// dynamoDB starts the shared server on first use; a missing node_modules
// fails the test (run `make test`).
func dynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	start.Do(func() {
		if server, startErr = localservers.StartDynamoDB(); startErr == nil {
			client, startErr = LocalClient(context.Background(), server.Endpoint)
		}
	})
	if startErr != nil {
		t.Fatal(startErr)
	}
	return client
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func defaults() scheduler.ModelConfig {
	return scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 10000, TargetDepth: 40, InitialLimit: 10}
}

// newTables creates a fresh set of tables and returns their names.
func newTables(t testing.TB) Tables {
	t.Helper()
	client := dynamoDB(t)
	tables := DefaultTables(fmt.Sprintf("t%03d-", tableSeq.Add(1)))
	if err := New(client, tables, defaults()).CreateTables(context.Background()); err != nil {
		t.Fatal(err)
	}
	// DynamoDB Local slows down as its in-memory database grows.
	t.Cleanup(func() {
		for _, name := range []string{tables.State, tables.Models, tables.Pins} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return tables
}

// newStore returns a store on fresh tables through a counting client.
func newStore(t testing.TB) (*Store, *counter) {
	t.Helper()
	tables := newTables(t) // starts the server on first use
	c := &counter{next: client}
	return New(c, tables, defaults()), c
}

func batch(account, project, name, model string, tier, n int) job.BatchSpec {
	b := job.BatchSpec{Account: account, Project: project, Batch: name, Model: model, Tier: tier}
	for i := range n {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("%s-%04d", name, i), Env: map[string]string{"I": fmt.Sprint(i)}})
	}
	return b
}

func submit(t testing.TB, s *Store, b job.BatchSpec) {
	t.Helper()
	n, err := s.Submit(context.Background(), b, t0)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(b.Jobs) {
		t.Fatalf("submit %s: got %d created, want %d", b.Batch, n, len(b.Jobs))
	}
}

// grant is a plan claiming n jobs of one queue at time at; its model state
// is left as the plan found it.
func grant(at time.Time, b job.BatchSpec, n int) scheduler.Plan {
	k := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
	return scheduler.Plan{At: at, Models: []scheduler.ModelPlan{{
		Model: b.Model, Grants: []scheduler.Grant{{Queue: k, Tier: 1, Count: n}},
	}}}
}

// counter is a DynamoDBAPI that counts requests, items read and written,
// and can be made to fail from its failAt-th call on, before or after
// passing the call through (a crash, or an answer lost on the way back).
type counter struct {
	next DynamoDBAPI

	mu        sync.Mutex
	calls     int
	byOp      map[string]int
	itemsRead int
	failAt    int  // 0: never
	failAfter bool // the failing call reaches DynamoDB first
	failOnce  bool // only the failAt-th call fails (a lost answer, not a crash)
	// before, when set, runs before each call reaches DynamoDB (outside
	// the lock): a test's other writer acting between a read and a write.
	before func(op string, in any)
}

var errCrash = errors.New("injected crash")

type stats struct {
	Calls, Reads, Writes, ItemsRead int
	ByOp                            map[string]int
}

func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.byOp, c.itemsRead = 0, nil, 0
}

func (c *counter) stats() stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := stats{Calls: c.calls, ItemsRead: c.itemsRead, ByOp: map[string]int{}}
	for op, n := range c.byOp {
		st.ByOp[op] = n
		switch op {
		case "GetItem", "Query", "Scan", "BatchGetItem":
			st.Reads += n
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
			st.Writes += n
		}
	}
	return st
}

// call counts one request and decides whether it fails.
func (c *counter) call(op string) (failBefore, failAfter bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.byOp == nil {
		c.byOp = map[string]int{}
	}
	c.byOp[op]++
	if c.failAt > 0 && c.calls >= c.failAt && (!c.failOnce || c.calls == c.failAt) {
		if c.calls == c.failAt && c.failAfter {
			return false, true
		}
		return true, false
	}
	return false, false
}

func (c *counter) read(n int) {
	c.mu.Lock()
	c.itemsRead += n
	c.mu.Unlock()
}

func do[In, Out any](c *counter, op string, ctx context.Context, in In, f func(context.Context, In, ...func(*dynamodb.Options)) (Out, error), opts []func(*dynamodb.Options)) (Out, error) {
	c.mu.Lock()
	hook := c.before
	c.mu.Unlock()
	if hook != nil {
		hook(op, in)
	}
	before, after := c.call(op)
	if before {
		var zero Out
		return zero, fmt.Errorf("%s: %w", op, errCrash)
	}
	out, err := f(ctx, in, opts...)
	if after {
		var zero Out
		return zero, fmt.Errorf("%s (answer lost): %w", op, errCrash)
	}
	return out, err
}

func (c *counter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := do(c, "GetItem", ctx, in, c.next.GetItem, o)
	if err == nil && len(out.Item) > 0 {
		c.read(1)
	}
	return out, err
}

func (c *counter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return do(c, "PutItem", ctx, in, c.next.PutItem, o)
}

func (c *counter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return do(c, "UpdateItem", ctx, in, c.next.UpdateItem, o)
}

func (c *counter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return do(c, "DeleteItem", ctx, in, c.next.DeleteItem, o)
}

func (c *counter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := do(c, "Query", ctx, in, c.next.Query, o)
	if err == nil {
		c.read(len(out.Items))
	}
	return out, err
}

func (c *counter) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := do(c, "Scan", ctx, in, c.next.Scan, o)
	if err == nil {
		c.read(len(out.Items))
	}
	return out, err
}

func (c *counter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := do(c, "BatchGetItem", ctx, in, c.next.BatchGetItem, o)
	if err == nil {
		for _, items := range out.Responses {
			c.read(len(items))
		}
	}
	return out, err
}

func (c *counter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return do(c, "BatchWriteItem", ctx, in, c.next.BatchWriteItem, o)
}

func (c *counter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return do(c, "TransactWriteItems", ctx, in, c.next.TransactWriteItems, o)
}

func (c *counter) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return do(c, "CreateTable", ctx, in, c.next.CreateTable, o)
}

func (c *counter) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return do(c, "DescribeTable", ctx, in, c.next.DescribeTable, o)
}
