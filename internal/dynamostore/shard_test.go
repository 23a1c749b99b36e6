package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/scheduler"
)

func TestQueueModel(t *testing.T) {
	for pk, want := range map[string]string{
		queuePK(scheduler.QueueKey{Account: "acme", Project: "p", Batch: "b-17", Model: "gpt-5.5"}): "gpt-5.5",
		queuePK(scheduler.QueueKey{Account: "a", Project: "b", Batch: "c", Model: "m/x:y"}):         "m/x:y",
		"QUEUE#": "",
	} {
		if got := queueModel(pk); got != want {
			t.Errorf("queueModel(%q): got %q, want %q", pk, got, want)
		}
	}
}

// keyRecorder is a DynamoDBAPI that records the partition keys of the items
// each BatchGetItem asks for, and the partitions each Query reads.
type keyRecorder struct {
	DynamoDBAPI
	mu         sync.Mutex
	pks        []string
	partitions []string
}

func (r *keyRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.mu.Lock()
	for k, v := range in.ExpressionAttributeValues {
		if k == ":pk" || k == ":a" {
			r.partitions = append(r.partitions, text(v))
		}
	}
	r.mu.Unlock()
	return r.DynamoDBAPI.Query(ctx, in, o...)
}

func (r *keyRecorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	r.mu.Lock()
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			r.pks = append(r.pks, text(k[attrPK]))
		}
	}
	r.mu.Unlock()
	return r.DynamoDBAPI.BatchGetItem(ctx, in, o...)
}

func (r *keyRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pks
	r.pks = nil
	return out
}

// With two shards: claude-opus-4.8 and gemini-3-pro are shard 0's,
// gpt-5.5 and llama-4-405b shard 1's (scheduler.TestShardOfIsStable).
var shardModels = [2][]string{{"claude-opus-4.8", "gemini-3-pro"}, {"gpt-5.5", "llama-4-405b"}}

// shardStore is a store over tables scoped to shard k of 2, reading
// through a key recorder.
func shardStore(tables Tables, shard int) (*Store, *keyRecorder) {
	r := &keyRecorder{DynamoDBAPI: client}
	s := New(r, tables, defaults())
	s.ScopeToShard(shard, 2)
	return s, r
}

// Two shards' stores over the same tables: each Snapshot sees its models
// and its queues, and asks DynamoDB for no item of the other shard's
// (counters, queue items); each InFlight lists its jobs; Cancel, an
// operator's action, is not scoped.
func TestShardStoresSeeTheirModelsOnly(t *testing.T) {
	ctx := context.Background()
	tables := newTables(t)
	all := New(client, tables, defaults())
	for i, m := range []string{"claude-opus-4.8", "gpt-5.5", "gemini-3-pro", "llama-4-405b"} {
		submit(t, all, batch("acme", "p", "b"+string(rune('1'+i)), m, -1, 3))
	}
	// A model with an operator item and no jobs is its shard's too.
	if err := all.PutModel(ctx, scheduler.ModelConfig{Name: "mistral-large", Enabled: true, MinLimit: 1, MaxLimit: 10, InitialLimit: 5}); err != nil {
		t.Fatal(err)
	}
	mistral := scheduler.ShardOf("mistral-large", 2)

	for shard := range 2 {
		s, rec := shardStore(tables, shard)
		snap, err := s.Snapshot(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		var models, queues []string
		for _, m := range snap.Models {
			models = append(models, m.Config.Name)
		}
		for _, q := range snap.Queues {
			queues = append(queues, q.Model)
		}
		want := slices.Clone(shardModels[shard])
		if shard == mistral {
			want = append(want, "mistral-large")
			slices.Sort(want)
		}
		if !slices.Equal(models, want) {
			t.Errorf("shard %d: got models %v, want %v", shard, models, want)
		}
		if slices.Sort(queues); !slices.Equal(queues, shardModels[shard]) {
			t.Errorf("shard %d: got queues of %v, want %v", shard, queues, shardModels[shard])
		}
		// Not one item of the other shard's was read by key: no counters,
		// no queue item.
		var counters int
		for _, pk := range rec.take() {
			var m string
			switch {
			case strings.HasPrefix(pk, "QUEUE#"):
				m = queueModel(pk)
			case strings.HasPrefix(pk, "MODEL#"):
				m = strings.TrimPrefix(pk, "MODEL#")
				counters++
			}
			if m != "" && scheduler.ShardOf(m, 2) != shard {
				t.Errorf("shard %d read %s, shard %d's", shard, pk, scheduler.ShardOf(m, 2))
			}
		}
		if want := len(models); counters != want {
			t.Errorf("shard %d: read %d counters items, want its models' %d", shard, counters, want)
		}
		// Its Queries read only its buckets of the model states and of
		// the active index: 6 of 12 each.
		// (Plus the pauses, one small partition every shard reads.)
		rec.mu.Lock()
		parts := slices.DeleteFunc(rec.partitions, func(p string) bool { return p == pkPauses })
		rec.partitions = nil
		rec.mu.Unlock()
		if len(parts) != 12 {
			t.Errorf("shard %d queried %d partitions %v, want 6 of model states and 6 of the index", shard, len(parts), parts)
		}
		for _, part := range parts {
			i := strings.LastIndexByte(part, '#')
			b, err := strconv.Atoi(part[i+1:])
			if err != nil || b%2 != shard {
				t.Errorf("shard %d queried %s: another shard's bucket", shard, part)
			}
		}
	}

	// The unscoped store still sees everything.
	snap, err := all.Snapshot(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Models) != 5 || len(snap.Queues) != 4 {
		t.Errorf("unscoped: got %d models, %d queues; want 5 and 4", len(snap.Models), len(snap.Queues))
	}

	// Jobs in flight: each shard lists its own.
	for i, m := range []string{"claude-opus-4.8", "gpt-5.5", "gemini-3-pro", "llama-4-405b"} {
		b := batch("acme", "p", "b"+string(rune('1'+i)), m, -1, 3)
		if jobs := commit(t, all, grant(t0, b, 1)); len(jobs) != 1 {
			t.Fatalf("claim of %s: got %d jobs, want 1", m, len(jobs))
		}
	}
	for shard := range 2 {
		s, _ := shardStore(tables, shard)
		jobs, err := s.InFlight(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var models []string
		for _, j := range jobs {
			models = append(models, j.Model)
		}
		if slices.Sort(models); !slices.Equal(models, shardModels[shard]) {
			t.Errorf("shard %d: got jobs in flight of %v, want one of each of %v", shard, models, shardModels[shard])
		}
	}
	if jobs, err := all.InFlight(ctx); err != nil || len(jobs) != 4 {
		t.Errorf("unscoped: got %d in flight, %v; want 4", len(jobs), err)
	}

	// An operator's cancel through a shard's store spans every model.
	s0, _ := shardStore(tables, 0)
	if n, err := s0.Cancel(ctx, scheduler.Scope{Account: "acme"}, t0); err != nil || n != 8 {
		t.Errorf("cancel through shard 0's store: got %d, %v; want the 8 waiting jobs of all four models", n, err)
	}
}

// Two shards' passes over the same tables at the same time: each claims
// and launches its own models' jobs, and neither's Commit is stale (they
// write different model state items).
func TestShardPassesSideBySide(t *testing.T) {
	ctx := context.Background()
	tables := newTables(t)
	all := New(client, tables, defaults())
	for i, m := range []string{"claude-opus-4.8", "gpt-5.5", "gemini-3-pro", "llama-4-405b"} {
		submit(t, all, batch("acme", "p", "b"+string(rune('1'+i)), m, -1, 30))
	}
	c := passfake.NewClock(t0)
	d := passfake.Depths{}
	for _, ms := range shardModels {
		for _, m := range ms {
			d[m] = 40
		}
	}
	var scheds [2]*scheduler.Scheduler
	var launchers [2]*passfake.Launcher
	caps := scheduler.Caps{GlobalMaxRunning: 25, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}
	for k := range 2 {
		s, _ := shardStore(tables, k)
		share := caps.Share(k, 2)
		cfg := scheduler.DefaultConfig()
		cfg.GlobalMaxRunning, cfg.MaxLaunchesPerPass = share.GlobalMaxRunning, share.MaxLaunchesPerPass
		launchers[k] = &passfake.Launcher{}
		scheds[k] = &scheduler.Scheduler{Store: s, Depths: d, Launcher: launchers[k], Clock: c, Config: cfg}
	}
	for pass := range 3 {
		var wg sync.WaitGroup
		var errs [2]error
		for k := range 2 {
			wg.Go(func() { _, errs[k] = scheds[k].Pass(ctx) })
		}
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				t.Fatalf("pass %d, shard %d: %v", pass, k, err)
			}
		}
		c.Add(10 * time.Second)
	}
	for k, l := range launchers {
		models := l.Models()
		// Each model's initial limit is 10; the shard's share of the cap
		// (13 and 12) binds first.
		n := models[shardModels[k][0]] + models[shardModels[k][1]]
		if len(models) != 2 || n != caps.Share(k, 2).GlobalMaxRunning {
			t.Errorf("shard %d launched %v, want its two models' jobs up to its share %d", k, models, caps.Share(k, 2).GlobalMaxRunning)
		}
	}
}

// With a shard count that does not divide the buckets (5), each shard reads
// every bucket and keeps its own models: together the shards see every
// model and queue exactly once.
func TestShardsNotDividingTheBucketsStillPartition(t *testing.T) {
	tables := newTables(t)
	all := New(client, tables, defaults())
	names := []string{"claude-opus-4.8", "gpt-5.5", "gemini-3-pro", "llama-4-405b", "mistral-large", "qwen-3"}
	for i, m := range names {
		submit(t, all, batch("acme", "p", fmt.Sprintf("b%d", i), m, -1, 2))
	}
	seen := map[string]int{}
	queues := 0
	for shard := range 5 {
		s := New(client, tables, defaults())
		s.ScopeToShard(shard, 5)
		snap := snapshot(t, s)
		for _, m := range snap.Models {
			if scheduler.ShardOf(m.Config.Name, 5) != shard {
				t.Errorf("shard %d sees %s, shard %d's", shard, m.Config.Name, scheduler.ShardOf(m.Config.Name, 5))
			}
			seen[m.Config.Name]++
		}
		queues += len(snap.Queues)
	}
	for _, m := range names {
		if seen[m] != 1 {
			t.Errorf("model %s seen by %d shards, want 1", m, seen[m])
		}
	}
	if queues != len(names) {
		t.Errorf("the shards saw %d queues, want %d", queues, len(names))
	}
}

// The shards' load reports round-trip through the table, one item a shard
// rewritten each pass; a report edited into nonsense is skipped with a
// warning (its shard then counts as silent).
func TestShardLoadsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	at := t0.Add(10 * time.Second)
	for _, l := range []scheduler.ShardLoad{
		{Shard: 1, Held: 40, Demand: 900, At: t0},
		{Shard: 0, Held: 12, Demand: 30, At: t0},
		{Shard: 1, Held: 55, Demand: 800, At: at}, // its next pass
	} {
		if err := s.PutShardLoad(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.State), Item: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pkShards}, attrSK: &types.AttributeValueMemberS{Value: "002"},
		"shard": &types.AttributeValueMemberS{Value: "two"},
	}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ShardLoads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []scheduler.ShardLoad{{Shard: 0, Held: 12, Demand: 30, At: t0}, {Shard: 1, Held: 55, Demand: 800, At: at}}
	if !slices.EqualFunc(got, want, func(a, b scheduler.ShardLoad) bool {
		return a.Shard == b.Shard && a.Held == b.Held && a.Demand == b.Demand && a.At.Equal(b.At)
	}) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	check(t, s)
}
