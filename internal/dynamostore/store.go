package dynamostore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Store is the scheduler's store on DynamoDB. It is safe for concurrent use;
// several Stores (one per Lambda) may share the tables.
type Store struct {
	db       DynamoDBAPI
	tables   Tables
	defaults scheduler.ModelConfig

	// LockTTL is how long Submit holds a batch's lock at most: longer than
	// the intake function's timeout, so a live Submit never loses it.
	LockTTL time.Duration
	// LockWait is how long Submit waits for another Submit of the same
	// batch before it gives up with ErrBusy (SQS then redelivers).
	LockWait time.Duration
	// Log receives what the store recovers from without failing the call
	// (nil: slog.Default()).
	Log *slog.Logger
	// Retention is how long an ended job's item stays: its expires_at
	// (TTLAttribute, epoch seconds) is its end plus this, and DynamoDB's TTL
	// deletes it after (template.yaml). 0 keeps ended jobs for ever.
	Retention time.Duration
	// ResultGrace is how long a sampled batch's job that succeeded may
	// take to report its verdict before its place in the release log is
	// passed over as unmeasured (sampling.Unreported; 0:
	// sampling.DefaultResultGrace). Every store on the tables should use
	// the same.
	ResultGrace time.Duration
	// Tokens draws each claim's result token (nil: resulttoken.New, from
	// crypto/rand; tests may seed it).
	Tokens resulttoken.Source
	// shard of shards, set by ScopeToShard, scopes Snapshot and InFlight to
	// one scheduler shard's models (shards ≤ 1: all). Writes and Cancel are
	// not scoped (an operator's cancel spans every model). See shard.go.
	shard, shards int

	mu sync.Mutex
	// chunks caches the last chunk read per queue: registered chunks never
	// change, so a pass reads a queue's order once per chunkSize claims.
	chunks map[string]chunkItem
}

// versions is this store's scheduler.Versions: what a Snapshot read that
// its Commit conditions the writes on.
type versions struct {
	// token marks the state writes of Commits with these versions, so that
	// retrying the Commit of the same plan passes its own condition.
	token  string
	models map[string]seenModel // what the Snapshot read of each model's state item
	// queues holds the queue items the Snapshot read from the active index,
	// by pk: Commit claims from their cursors without reading them again,
	// conditioned on them.
	queues map[string]queueItem
}

// seenModel is what Commit needs of a model's state item as Snapshot read it.
type seenModel struct {
	ver              int64
	okAcked, pfAcked int64
	state            types.AttributeValue
	learned          learned // as read (none for a malformed edit): Commit writes it only when the pass changed it
}

// New returns a store on the given tables. Models with waiting jobs but no
// operator item take defaults (with their Name set).
func New(client DynamoDBAPI, tables Tables, defaults scheduler.ModelConfig) *Store {
	return &Store{
		db: client, tables: tables, defaults: defaults,
		LockTTL: 16 * time.Minute, LockWait: 2 * time.Minute, Retention: DefaultRetention,
		chunks: map[string]chunkItem{},
	}
}

// expiry sets an ended job's expires_at, unless the store keeps ended jobs.
func (s *Store) expiry(u expression.UpdateBuilder, ended time.Time) expression.UpdateBuilder {
	if s.Retention <= 0 {
		return u
	}
	return u.Set(name(TTLAttribute), value(ended.Add(s.Retention).Unix()))
}

func (s *Store) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// DefaultRetention keeps an ended job 90 days: long enough for `evalsched
// why` and for reruns; the table then holds ~3 months of history (~23 GB at
// 2.5 M jobs a week) instead of growing for ever.
const DefaultRetention = 90 * 24 * time.Hour

// TTLAttribute is the state table's time-to-live attribute: set on a job
// when it ends (and on nothing else).
const TTLAttribute = "expires_at"

// Attribute names used in keys, conditions and indexes.
const (
	attrPK     = "pk"
	attrSK     = "sk"
	attrActive = "active"
	attrSeq    = "seq"
	attrModel  = "model"
	attrScope  = "scope"
	// attrInflight marks a job that holds a slot, keyed for the inflight
	// index: set by a claim, removed when the job ends or goes back to
	// waiting. The value is one of inflightShards partitions.
	attrInflight = "inflight"
	attrClaimed  = "claimed_at"
	// attrCancelling is a cancel's mark on a queue item (cancel.go): no
	// claim takes from the queue while it is set.
	attrCancelling = "cancelling"
)

// inflightShards spreads the inflight index over partitions: claims come in
// bursts of up to the launch rate.
const inflightShards = 8

// inflightShard is the index partition of a job.
func inflightShard(id string) string {
	h := 0
	for _, c := range id {
		h = h*31 + int(c)
	}
	return fmt.Sprintf("INFLIGHT#%d", (h%inflightShards+inflightShards)%inflightShards)
}

// Key layout of the state table; "#" separates names because the intake
// rejects it in account, project, batch and model names (Submit checks too).
const (
	pkModels    = "MODELS" // + "#<bucket>"; sk: model name → model state item
	skCounters  = "COUNTERS"
	skJob       = "JOB"
	skQueue     = "QUEUE"
	skBatch     = "BATCH"
	pkPauses    = "PAUSES"  // sk: the scope ("project#A/P"): one item per pause
	pkCatalog   = "BATCHES" // sk "<a>#<p>#<b>#<model>": one item per queue, for Batches
	pkSeq       = "SEQ"
	chunkPrefix = "CHUNK#"
	backPrefix  = "BACK#"
	activeValue = "QUEUE" // + "#<bucket>": the active index's partitions
)

// buckets spread the model state items and the active index over
// partitions by model, so that a scheduler shard (scheduler.ShardOf) reads
// only its own: bucket b belongs to shard b mod N when N divides buckets
// (1, 2, 3, 4, 6, 12 shards); other shard counts read every bucket and keep
// their models' items.
const buckets = 12

// bucketOf is a model's bucket: ShardOf over buckets, so that
// ShardOf(m, N) = bucketOf(m) mod N for every N dividing buckets.
func bucketOf(model string) int { return scheduler.ShardOf(model, buckets) }

// modelsPK is the partition of a model's state item.
func modelsPK(model string) string { return fmt.Sprintf("%s#%d", pkModels, bucketOf(model)) }

// activeKey is the active index partition of a model's queues.
func activeKey(model string) string { return fmt.Sprintf("%s#%d", activeValue, bucketOf(model)) }

func jobPK(id string) string         { return "JOB#" + id }
func countersPK(model string) string { return "MODEL#" + model }
func batchPK(account, project, batch string) string {
	return "BATCH#" + account + "#" + project + "#" + batch
}
func queuePK(k scheduler.QueueKey) string {
	return "QUEUE#" + k.Account + "#" + k.Project + "#" + k.Batch + "#" + k.Model
}
func catalogSK(k scheduler.QueueKey) string {
	return k.Account + "#" + k.Project + "#" + k.Batch + "#" + k.Model
}
func chunkSK(start int64) string { return fmt.Sprintf("%s%012d", chunkPrefix, start) }
func backSK(pos int64) string    { return fmt.Sprintf("%s%012d", backPrefix, pos) }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberS{Value: sk},
	}
}

// jobItem is one job: pk "JOB#<id>", sk "JOB". Everything a launch needs is
// on it, so a claimed job is returned without further reads.
type jobItem struct {
	PK             string            `dynamodbav:"pk"`
	SK             string            `dynamodbav:"sk"`
	ID             string            `dynamodbav:"id"`
	Account        string            `dynamodbav:"account"`
	Project        string            `dynamodbav:"project"`
	Batch          string            `dynamodbav:"batch"`
	Key            string            `dynamodbav:"key"`
	Model          string            `dynamodbav:"model"`
	Env            map[string]string `dynamodbav:"env,omitempty"`
	TaskDefinition string            `dynamodbav:"task_definition,omitempty"`
	TimeoutSeconds int               `dynamodbav:"timeout_seconds,omitempty"`
	MaxAttempts    int               `dynamodbav:"max_attempts"`
	Attempt        int               `dynamodbav:"attempt"`
	State          job.State         `dynamodbav:"state"`
	Queue          string            `dynamodbav:"queue"` // the queue item's pk
	Pos            int64             `dynamodbav:"pos"`   // place in the queue: submission order
	Tier           int               `dynamodbav:"tier,omitempty"`
	SubmitAt       string            `dynamodbav:"submit_at"`
	ClaimedAt      string            `dynamodbav:"claimed_at,omitempty"` // the claiming pass's time: the pending key
	LaunchedAt     string            `dynamodbav:"launched_at,omitempty"`
	StartedAt      string            `dynamodbav:"started_at,omitempty"`
	EndedAt        string            `dynamodbav:"ended_at,omitempty"`
	TaskARN        string            `dynamodbav:"task_arn,omitempty"`
	Reason         string            `dynamodbav:"reason,omitempty"`
	ExitCode       int               `dynamodbav:"exit_code,omitempty"`
	ProviderError  bool              `dynamodbav:"provider_error,omitempty"`
	Infrastructure bool              `dynamodbav:"infrastructure,omitempty"`
	ExitReason     string            `dynamodbav:"exit_reason,omitempty"`
	Stratum        string            `dynamodbav:"stratum,omitempty"`        // in a sampled batch (sampled.go)
	ResultAttempt  int               `dynamodbav:"result_attempt,omitempty"` // the attempt of the verdict recorded (results.go)
	ResultPass     bool              `dynamodbav:"result_pass,omitempty"`
	// ReleasePos is a sampled job's place in its batch's release log, set
	// by its first claim (sequence.go); nil before it.
	ReleasePos *int64 `dynamodbav:"release_pos,omitempty"`
	// ResultToken is the current attempt's result token, set by its claim
	// (take.go's claimUpdate) and required by RecordResult.
	ResultToken resulttoken.Token `dynamodbav:"result_token,omitempty"`
}

// attrResultToken is the job item's result token attribute.
const attrResultToken = "result_token"

// resultToken draws a claim's result token.
func (s *Store) resultToken() resulttoken.Token {
	if s.Tokens != nil {
		return s.Tokens()
	}
	return resulttoken.New()
}

func (j *jobItem) schedulerJob() scheduler.Job {
	return scheduler.Job{
		ID: j.ID, Account: j.Account, Project: j.Project, Batch: j.Batch, Key: j.Key, Model: j.Model,
		Tier: j.Tier, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, TaskDefinition: j.TaskDefinition,
		TimeoutSeconds: j.TimeoutSeconds, Env: j.Env, SubmittedAt: j.submitted(),
		ResultToken: j.ResultToken,
	}
}

// submitted reads SubmitAt; a malformed one (an item edited by hand) is zero.
func (j *jobItem) submitted() time.Time {
	t, _ := parseStamp(j.SubmitAt)
	return t
}

// queueItem is one batch's jobs of one model: pk "QUEUE#<a>#<p>#<b>#<model>",
// sk "QUEUE". Positions [0, size) are registered jobs in submission order;
// [next, size) were never claimed; retried jobs below next have a back item.
type queueItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Account   string `dynamodbav:"account"`
	Project   string `dynamodbav:"project"`
	Batch     string `dynamodbav:"batch"`
	Model     string `dynamodbav:"model"`
	Tier      int    `dynamodbav:"tier"` // submitted tier, < 0: none
	Seq       int64  `dynamodbav:"seq"`
	Size      int64  `dynamodbav:"size"`
	Next      int64  `dynamodbav:"next"`
	Waiting   int64  `dynamodbav:"waiting"`
	Backs     int64  `dynamodbav:"backs"`
	Active    string `dynamodbav:"active,omitempty"` // set while waiting > 0: the active index key
	LastClaim string `dynamodbav:"last_claim,omitempty"`
	Sampled   bool   `dynamodbav:"sampled,omitempty"` // a sampled batch's: released by stratum (release.go)
	// Cancelling is the token of a cancel under way (cancel.go): claims
	// leave the queue alone while it is set.
	Cancelling string `dynamodbav:"cancelling,omitempty"`
	// The jobs that ended, by outcome, moved in the transactions that end
	// them (not projected into the active index, so they cost it no
	// write). Running jobs are counted from the inflight index (Batches);
	// claimed and launched ones are the rest of size. An item written by
	// an older version may still carry a "running" count: nobody reads it.
	Succeeded int64 `dynamodbav:"succeeded,omitempty"`
	Failed    int64 `dynamodbav:"failed,omitempty"`
	Cancelled int64 `dynamodbav:"cancelled,omitempty"`
	Skipped   int64 `dynamodbav:"skipped,omitempty"` // a sampled batch's rest (sampled.go)
	// ProviderRetries counts the attempts the provider failed (exit 75)
	// that sent a job back to waiting: not an outcome of the batch.
	ProviderRetries int64 `dynamodbav:"provider_retries,omitempty"`
}

// chunkItem lists the job ids of up to chunkSize consecutive positions of a
// queue, registered together: pk the queue's, sk "CHUNK#<start>".
type chunkItem struct {
	PK    string   `dynamodbav:"pk"`
	SK    string   `dynamodbav:"sk"`
	Start int64    `dynamodbav:"start"`
	IDs   []string `dynamodbav:"ids"`
}

func (c chunkItem) covers(pos int64) bool { return c.Start <= pos && pos < c.Start+int64(len(c.IDs)) }

// chunkSize bounds a chunk item to ~17 KB (500 ids of 32 characters).
const chunkSize = 500

// maxCachedChunks bounds the chunk cache of a long-lived Store (a warm
// Lambda sees every queue it ever claims from): at ~25 KB of heap per full
// chunk, at most ~50 MB.
const maxCachedChunks = 2048

// backItem marks a retried job waiting again below the queue's cursor: pk
// the queue's, sk "BACK#<pos>", so a Query returns them oldest first.
type backItem struct {
	PK      string `dynamodbav:"pk"`
	SK      string `dynamodbav:"sk"`
	ID      string `dynamodbav:"id"`
	Pos     int64  `dynamodbav:"pos"`
	Attempt int    `dynamodbav:"attempt"`
}

// countersItem holds a model's counters: pk "MODEL#<model>", sk "COUNTERS".
type countersItem struct {
	Model   string `dynamodbav:"model"`
	OKTotal int64  `dynamodbav:"ok_total"`
	PFTotal int64  `dynamodbav:"pf_total"`
}

// stateItem is a model's scheduler state: pk "MODELS", sk the model name.
type stateItem struct {
	Model   string      `dynamodbav:"model"`
	State   packedState `dynamodbav:"state"`
	Ver     int64       `dynamodbav:"ver"`
	PlanAt  string      `dynamodbav:"plan_at,omitempty"`
	OKAcked int64       `dynamodbav:"ok_acked"`
	PFAcked int64       `dynamodbav:"pf_acked"`
}

// stamp formats a time for items and pending keys: UTC, RFC 3339 with
// nanoseconds, so equal instants give equal strings.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseStamp(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// token returns a fresh random id for locks and idempotent transactions.
func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkName rejects the separator of the key layout.
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if strings.Contains(name, "#") {
		return fmt.Errorf("%s %q contains \"#\"", what, name)
	}
	return nil
}
