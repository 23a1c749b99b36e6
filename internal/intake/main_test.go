package intake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// One DynamoDB Local and one fauxqs serve the whole test binary, started by
// the first test that needs them; each test gets its own tables and queues.
var (
	servers struct {
		once      sync.Once
		err       error
		ddb, sqs  *localservers.Server
		ddbClient *dynamodb.Client
		sqsClient *sqs.Client
	}
	seq atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range []*localservers.Server{servers.ddb, servers.sqs} {
		if s != nil {
			s.Stop()
		}
	}
	os.Exit(code)
}

func start(t testing.TB) {
	t.Helper()
	servers.once.Do(func() {
		if servers.sqs, servers.err = localservers.StartSQS(); servers.err != nil {
			return
		}
		servers.sqsClient = sqsClient(servers.sqs.Endpoint)
		if servers.ddb, servers.err = localservers.StartDynamoDB(); servers.err != nil {
			return
		}
		servers.ddbClient, servers.err = dynamostore.LocalClient(context.Background(), servers.ddb.Endpoint)
	})
	if servers.err != nil {
		t.Fatal(servers.err)
	}
}

// sqsClient is a real SQS client for fauxqs: dummy credentials, a fixed
// region, one try (a failure in a test is the answer, not a blip).
func sqsClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("local", "local", ""),
		RetryMaxAttempts: 1,
	})
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// rig is one test's world: fresh tables behind a counting client, a fresh
// dead-letter queue, and a handler writing its logs and metrics to buffers.
type rig struct {
	t       testing.TB
	db      *countingDB
	store   *dynamostore.Store
	dlq     string
	h       *intake.Handler
	logs    bytes.Buffer
	metrics bytes.Buffer
}

func newRig(t testing.TB) *rig {
	t.Helper()
	start(t)
	ctx := context.Background()
	n := seq.Add(1)
	tables := dynamostore.DefaultTables(fmt.Sprintf("intake%03d-", n))
	db := &countingDB{DynamoDBAPI: servers.ddbClient}
	store := dynamostore.New(db, tables, scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 100, InitialLimit: 10})
	if err := store.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	// DynamoDB Local slows down as its in-memory database grows.
	t.Cleanup(func() {
		for _, name := range []string{tables.State, tables.Models, tables.Pins} {
			_, _ = servers.ddbClient.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	r := &rig{t: t, db: db, store: store, dlq: createQueue(t, fmt.Sprintf("intake-dlq-%03d", n))}
	r.h = &intake.Handler{
		Store:   store,
		DLQ:     servers.sqsClient,
		Config:  intake.Config{Batch: batchmsg.DefaultConfig(), DLQURL: r.dlq, Namespace: "evalsched"},
		Log:     slog.New(slog.NewJSONHandler(&r.logs, nil)),
		Metrics: &r.metrics,
		Now:     func() time.Time { return t0 },
	}
	db.reset() // count the handler's calls, not the tables'
	return r
}

func createQueue(t testing.TB, name string) string {
	t.Helper()
	out, err := servers.sqsClient.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// invoke runs the handler as the Lambda runtime would, on a JSON payload.
func (r *rig) invoke(payload []byte) events.SQSEventResponse {
	r.t.Helper()
	return invokeCtx(r.t, context.Background(), r.h, payload)
}

func invokeCtx(t testing.TB, ctx context.Context, h *intake.Handler, payload []byte) events.SQSEventResponse {
	t.Helper()
	out, err := lambda.NewHandler(h.Handle).Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return resp
}

// fixture reads a file of events/.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureEvent reads a file of events/ as an event, to pick records from.
func fixtureEvent(t testing.TB, name string) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	if err := json.Unmarshal(fixture(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func payload(t testing.TB, records ...events.SQSMessage) []byte {
	t.Helper()
	b, err := json.Marshal(events.SQSEvent{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func failures(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// waiting counts the waiting jobs per queue, "account/project/batch model",
// as the scheduler will see them.
func (r *rig) waiting() map[string]int {
	r.t.Helper()
	out := map[string]int{}
	for _, q := range r.queues() {
		out[q.Account+"/"+q.Project+"/"+q.Batch+" "+q.Model] = q.Waiting
	}
	return out
}

// tiers returns the submitted tier per queue, keyed as by waiting.
func (r *rig) tiers() map[string]int {
	r.t.Helper()
	out := map[string]int{}
	for _, q := range r.queues() {
		out[q.Account+"/"+q.Project+"/"+q.Batch+" "+q.Model] = q.SubmittedTier
	}
	return out
}

func (r *rig) queues() []scheduler.Queue {
	r.t.Helper()
	snap, err := r.store.Snapshot(context.Background(), t0)
	if err != nil {
		r.t.Fatal(err)
	}
	return snap.Queues
}

// job reads one stored job.
func (r *rig) job(account, project, batch, key string) dynamostore.Job {
	r.t.Helper()
	j, ok, err := r.store.Job(context.Background(), job.JobID(account, project, batch, key))
	if err != nil || !ok {
		r.t.Fatalf("job %s/%s/%s %s: found %v, %v", account, project, batch, key, ok, err)
	}
	return j
}

// deadLetters receives every message of the DLQ, by source message id.
func (r *rig) deadLetters() map[string]sqstypes.Message {
	r.t.Helper()
	out := map[string]sqstypes.Message{}
	for {
		res, err := servers.sqsClient.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.dlq), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
			VisibilityTimeout: 300,
		})
		if err != nil {
			r.t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return out
		}
		for _, m := range res.Messages {
			id := aws.ToString(m.MessageAttributes[intake.AttrSourceMessageID].StringValue)
			if _, dup := out[id]; dup {
				r.t.Errorf("message %s dead-lettered twice", id)
			}
			out[id] = m
		}
	}
}

// counts decodes the handler's EMF documents, summed.
func (r *rig) counts() intake.Counts {
	r.t.Helper()
	var sum intake.Counts
	dec := json.NewDecoder(bytes.NewReader(r.metrics.Bytes()))
	for dec.More() {
		var c intake.Counts
		if err := dec.Decode(&c); err != nil {
			r.t.Fatal(err)
		}
		sum.Messages += c.Messages
		sum.Jobs += c.Jobs
		sum.Rejected += c.Rejected
		sum.Conflicts += c.Conflicts
		sum.Retried += c.Retried
		sum.Parts += c.Parts
	}
	return sum
}

// logLines decodes the handler's log lines.
func (r *rig) logLines() []map[string]any {
	r.t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.logs.Bytes()))
	for dec.More() {
		var l map[string]any
		if err := dec.Decode(&l); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// countingDB counts the store's DynamoDB requests by operation.
type countingDB struct {
	dynamostore.DynamoDBAPI
	mu     sync.Mutex
	writes map[string]int // write calls by operation
	ops    map[string]bool
}

func (c *countingDB) reset() {
	c.mu.Lock()
	c.writes, c.ops = map[string]int{}, map[string]bool{}
	c.mu.Unlock()
}

func (c *countingDB) count(op string) {
	c.mu.Lock()
	c.writes[op]++
	c.ops[op] = true
	c.mu.Unlock()
}

func (c *countingDB) read(op string) {
	c.mu.Lock()
	c.ops[op] = true
	c.mu.Unlock()
}

// operations lists the operations called since the last reset.
func (c *countingDB) operations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.ops))
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.read("GetItem")
	return c.DynamoDBAPI.GetItem(ctx, in, o...)
}

func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.read("Query")
	return c.DynamoDBAPI.Query(ctx, in, o...)
}

func (c *countingDB) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.read("Scan")
	return c.DynamoDBAPI.Scan(ctx, in, o...)
}

func (c *countingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.read("BatchGetItem")
	return c.DynamoDBAPI.BatchGetItem(ctx, in, o...)
}

// writeCalls returns the write calls since the last reset, and by operation.
func (c *countingDB) writeCalls() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, by := 0, map[string]int{}
	for op, k := range c.writes {
		n += k
		by[op] = k
	}
	return n, by
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.count("PutItem")
	return c.DynamoDBAPI.PutItem(ctx, in, o...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count("UpdateItem")
	return c.DynamoDBAPI.UpdateItem(ctx, in, o...)
}

func (c *countingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.count("DeleteItem")
	return c.DynamoDBAPI.DeleteItem(ctx, in, o...)
}

func (c *countingDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.count("BatchWriteItem")
	return c.DynamoDBAPI.BatchWriteItem(ctx, in, o...)
}

func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.count("TransactWriteItems")
	return c.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
}

// throttledOnce is the real store, except that the first Submit of one batch
// fails as DynamoDB fails a throttled call: a transient error, nothing
// written.
type throttledOnce struct {
	intake.Submitter
	batch string
	done  atomic.Bool
}

func (s *throttledOnce) Submit(ctx context.Context, b job.BatchSpec, now time.Time) (int, error) {
	if b.Batch == s.batch && s.done.CompareAndSwap(false, true) {
		return 0, fmt.Errorf("submit batch %s/%s/%s: lock: %w", b.Account, b.Project, b.Batch,
			&ddbtypes.ProvisionedThroughputExceededException{Message: aws.String("The level of configured provisioned throughput for the table was exceeded")})
	}
	return s.Submitter.Submit(ctx, b, now)
}
