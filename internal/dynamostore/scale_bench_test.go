package dynamostore

// The store at the seed system's scale, against DynamoDB Local
// (numbers in BENCHMARKS.md, "At the seed system's scale").
//
//	make bench         PassAtScale (10,000 and 1,000,000 waiting), JobLifecycle, SubmitMessage
//	make bench-scale   + 1,000,000 waiting populated through Submit, PassLimits
//
// Every request goes through a meter that asks DynamoDB for its consumed
// capacity (ReturnConsumedCapacity TOTAL) and counts requests by phase of
// the pass. DynamoDB Local computes consumed capacity as AWS does for single
// operations, index writes included, but reports 2 units for any
// TransactWriteItems whatever its items: transactional write units are
// computed from item sizes (logItemSizes) rather than read from the meter.

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// scaleEnv enables the cases that take more than a few minutes (make
// bench-scale): populating 1,000,000 jobs through Submit, and the limits of
// one scheduler.
const scaleEnv = "EVALSCHED_BENCH_SCALE"

// --- the meter ---------------------------------------------------------

// usage is what one phase of a pass asked of DynamoDB.
type usage struct {
	Requests  int
	ByOp      map[string]int
	UnitsByOp map[string]float64
	RRU, WRU  float64 // read and write request units (= capacity units)
	ItemsRead int
	TxItems   int // items written inside transactions
}

func (u *usage) add(o usage) {
	u.Requests += o.Requests
	u.RRU += o.RRU
	u.WRU += o.WRU
	u.ItemsRead += o.ItemsRead
	u.TxItems += o.TxItems
	if u.ByOp == nil {
		u.ByOp, u.UnitsByOp = map[string]int{}, map[string]float64{}
	}
	for op, n := range o.ByOp {
		u.ByOp[op] += n
	}
	for op, n := range o.UnitsByOp {
		u.UnitsByOp[op] += n
	}
}

// meter is a DynamoDBAPI that asks for and sums the consumed capacity of
// every request, per phase. A latency, when set, delays every request: a
// phase then takes about latency × its requests on the critical path
// longer, which measures that path.
type meter struct {
	next    DynamoDBAPI
	latency time.Duration

	mu    sync.Mutex
	phase string
	by    map[string]*usage
}

func newMeter(next DynamoDBAPI) *meter {
	return &meter{next: next, phase: "other", by: map[string]*usage{}}
}

func (m *meter) setPhase(p string) {
	m.mu.Lock()
	m.phase = p
	m.mu.Unlock()
}

// take returns the usage by phase since the last take and starts afresh.
func (m *meter) take() map[string]usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]usage{}
	for p, u := range m.by {
		out[p] = *u
	}
	m.by = map[string]*usage{}
	return out
}

func (m *meter) record(op string, read bool, units float64, items, txItems int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.by[m.phase]
	if u == nil {
		u = &usage{ByOp: map[string]int{}, UnitsByOp: map[string]float64{}}
		m.by[m.phase] = u
	}
	u.Requests++
	u.ByOp[op]++
	u.UnitsByOp[op] += units
	if read {
		u.RRU += units
	} else {
		u.WRU += units
	}
	u.ItemsRead += items
	u.TxItems += txItems
}

func (m *meter) delay() {
	if m.latency > 0 {
		time.Sleep(m.latency)
	}
}

func units(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	return aws.ToFloat64(c.CapacityUnits)
}

func unitsOf(cs []types.ConsumedCapacity) float64 {
	var n float64
	for i := range cs {
		n += units(&cs[i])
	}
	return n
}

const total = types.ReturnConsumedCapacityTotal

func (m *meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.GetItem(ctx, in, o...)
	if err == nil {
		m.record("GetItem", true, units(out.ConsumedCapacity), min(1, len(out.Item)), 0)
	} else {
		m.record("GetItem", true, 0, 0, 0)
	}
	return out, err
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.Query(ctx, in, o...)
	if err == nil {
		m.record("Query", true, units(out.ConsumedCapacity), len(out.Items), 0)
	} else {
		m.record("Query", true, 0, 0, 0)
	}
	return out, err
}

func (m *meter) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.Scan(ctx, in, o...)
	if err == nil {
		m.record("Scan", true, units(out.ConsumedCapacity), len(out.Items), 0)
	} else {
		m.record("Scan", true, 0, 0, 0)
	}
	return out, err
}

func (m *meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.BatchGetItem(ctx, in, o...)
	if err == nil {
		n := 0
		for _, items := range out.Responses {
			n += len(items)
		}
		m.record("BatchGetItem", true, unitsOf(out.ConsumedCapacity), n, 0)
	} else {
		m.record("BatchGetItem", true, 0, 0, 0)
	}
	return out, err
}

func (m *meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.PutItem(ctx, in, o...)
	var u float64
	if err == nil {
		u = units(out.ConsumedCapacity)
	}
	m.record("PutItem", false, u, 0, 0)
	return out, err
}

func (m *meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.UpdateItem(ctx, in, o...)
	var u float64
	if err == nil {
		u = units(out.ConsumedCapacity)
	}
	m.record("UpdateItem", false, u, 0, 0)
	return out, err
}

func (m *meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.DeleteItem(ctx, in, o...)
	var u float64
	if err == nil {
		u = units(out.ConsumedCapacity)
	}
	m.record("DeleteItem", false, u, 0, 0)
	return out, err
}

func (m *meter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.BatchWriteItem(ctx, in, o...)
	var u float64
	if err == nil {
		u = unitsOf(out.ConsumedCapacity)
	}
	m.record("BatchWriteItem", false, u, 0, 0)
	return out, err
}

func (m *meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = total
	m.delay()
	out, err := m.next.TransactWriteItems(ctx, in, o...)
	var u float64
	if err == nil {
		u = unitsOf(out.ConsumedCapacity)
	}
	op := "TransactWriteItems"
	if len(in.TransactItems) > 0 && in.TransactItems[0].Update != nil && strings.HasPrefix(text(in.TransactItems[0].Update.Key[attrPK]), pkModels+"#") {
		op += "(states)" // Commit's model states; the others are claims, events, registrations
	}
	m.record(op, false, u, 0, len(in.TransactItems))
	return out, err
}

func (m *meter) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return m.next.CreateTable(ctx, in, o...)
}

func (m *meter) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return m.next.DescribeTable(ctx, in, o...)
}

// --- the seed system's shape ---------------------------------------------

// scale is the shape of the state a pass reads: models, batches (one
// queue each) spread over projects, perQueue waiting jobs in each queue.
type scale struct {
	Models, Batches, Projects, PerQueue int
}

func (sc scale) waiting() int { return sc.Batches * sc.PerQueue }

func (sc scale) model(i int) string { return fmt.Sprintf("model-%03d", i) }

// spec is batch i: the accounts, projects, models and tiers round-robin, as
// internal/scheduler's BenchmarkDecide spreads them. Each job's env is
// about 100 bytes, like the intake test's messages.
func (sc scale) spec(i int) job.BatchSpec {
	b := job.BatchSpec{
		Account: fmt.Sprintf("acct-%d", i%7), Project: fmt.Sprintf("proj-%04d", i%sc.Projects),
		Batch: fmt.Sprintf("batch-%05d", i), Model: sc.model(i % sc.Models), Tier: i % 3,
		TaskDefinition: "eval-sandbox:7", TimeoutSeconds: 3600,
		Jobs: make([]job.JobSpec, sc.PerQueue),
	}
	for k := range b.Jobs {
		b.Jobs[k] = job.JobSpec{Key: fmt.Sprintf("task-%06d", k), Env: map[string]string{
			"TASK_ID": fmt.Sprintf("%06d", k), "SPLIT": "test", "PROMPT_SET": fmt.Sprintf("mmlu-pro-2026-%06d", k),
		}}
	}
	return b
}

// modelConfig steers every model from a limit of 50 (BenchmarkDecide's);
// with the depth at its target the limit holds.
func (sc scale) modelConfig(i int) scheduler.ModelConfig {
	return scheduler.ModelConfig{Name: sc.model(i), Enabled: true, MinLimit: 1, MaxLimit: 10000, TargetDepth: 40, InitialLimit: 50}
}

func putModels(tb testing.TB, s *Store, sc scale) {
	tb.Helper()
	err := parallel(context.Background(), sc.Models, func(ctx context.Context, i int) error {
		return s.PutModel(ctx, sc.modelConfig(i))
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// populateBySubmit submits every batch through Submit, 8 at a time (the
// intake runs up to that many messages at once), and returns how long it took.
func populateBySubmit(tb testing.TB, s *Store, sc scale) time.Duration {
	tb.Helper()
	start := time.Now()
	err := parallel(context.Background(), sc.Batches, func(ctx context.Context, i int) error {
		b := sc.spec(i)
		n, err := s.Submit(ctx, b, t0)
		if err == nil && n != len(b.Jobs) {
			err = fmt.Errorf("batch %d: %d created, want %d", i, n, len(b.Jobs))
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

// populateDirect writes the items that populateBySubmit leaves behind,
// byte for byte (TestDirectPopulationIsWhatSubmitWrites), except the job
// items at positions claimable and above: what a pass reads is the active
// index, the queue items, a queue's chunk and the job items at its cursor,
// never the jobs behind it (DESIGN.md), so those are the only job items it
// can tell apart. The benchmark checks every pass claimed all it granted,
// so a pass that reached a missing job would fail it, not go unnoticed.
// Queues get their seq in batch order (Submit's come in arrival order).
func populateDirect(tb testing.TB, s *Store, sc scale, claimable int) time.Duration {
	tb.Helper()
	start := time.Now()
	ctx := context.Background()
	submitAt := stamp(t0)
	put := func(reqs *[]types.WriteRequest, v any) {
		item, err := attributevalue.MarshalMap(v)
		if err != nil {
			tb.Fatal(err)
		}
		*reqs = append(*reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	// Per model: its state item (as Submit's registration leaves it: the
	// model's name only) and its counters at zero.
	var reqs []types.WriteRequest
	for i := range sc.Models {
		m := sc.model(i)
		st := key(modelsPK(m), m)
		st[attrModel] = &types.AttributeValueMemberS{Value: m}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: st}})
		c := key(countersPK(m), skCounters)
		c[attrModel] = &types.AttributeValueMemberS{Value: m}
		for _, n := range []string{"ok_total", "pf_total"} {
			c[n] = &types.AttributeValueMemberN{Value: "0"}
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: c}})
	}
	seq := key(pkSeq, pkSeq)
	seq["n"] = &types.AttributeValueMemberN{Value: fmt.Sprint(sc.Batches)}
	reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: seq}})
	if err := s.batchWrite(ctx, s.tables.State, reqs); err != nil {
		tb.Fatal(err)
	}
	// Per batch: its item, its queue's item and chunks, the claimable jobs.
	const perCall = 64 // batches per batchWrite: its 8 calls at a time stay full
	err := parallel(ctx, (sc.Batches+perCall-1)/perCall, func(ctx context.Context, g int) error {
		var reqs []types.WriteRequest
		for i := g * perCall; i < min((g+1)*perCall, sc.Batches); i++ {
			b := sc.spec(i)
			k := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
			pk, n := queuePK(k), int64(len(b.Jobs))
			for start := 0; start < len(b.Jobs); start += chunkSize {
				c := chunkItem{PK: pk, SK: chunkSK(int64(start)), Start: int64(start)}
				for pos := start; pos < min(start+chunkSize, len(b.Jobs)); pos++ {
					js := b.Jobs[pos]
					id := job.JobID(b.Account, b.Project, b.Batch, js.Key)
					c.IDs = append(c.IDs, id)
					if pos < claimable {
						put(&reqs, jobItem{
							PK: jobPK(id), SK: skJob, ID: id, Account: b.Account, Project: b.Project, Batch: b.Batch,
							Key: js.Key, Model: b.Model, Env: js.Env, TaskDefinition: b.TaskDefinition,
							TimeoutSeconds: b.TimeoutSeconds, MaxAttempts: cmp.Or(b.MaxAttempts, 3), Attempt: 1,
							State: job.Waiting, Queue: pk, Pos: int64(pos), SubmitAt: submitAt,
						})
					}
				}
				put(&reqs, c)
			}
			put(&reqs, queueItem{PK: pk, SK: skQueue, Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model,
				Tier: b.Tier, Seq: int64(i + 1), Size: n, Next: 0, Waiting: n, Backs: 0, Active: activeKey(b.Model)})
			qk := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}
			put(&reqs, catalogItem{PK: pkCatalog, SK: catalogSK(qk), Queue: pk, Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model, Seq: int64(i + 1)})
			bi := key(batchPK(b.Account, b.Project, b.Batch), skBatch)
			bi["account"] = &types.AttributeValueMemberS{Value: b.Account}
			bi["project"] = &types.AttributeValueMemberS{Value: b.Project}
			bi["batch"] = &types.AttributeValueMemberS{Value: b.Batch}
			bi["jobs"] = &types.AttributeValueMemberN{Value: fmt.Sprint(n)}
			terms, err := attributevalue.Marshal(toTermsItem(b.Terms()))
			if err != nil {
				return err
			}
			bi[attrTerms] = terms
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: bi}})
		}
		return s.batchWrite(ctx, s.tables.State, reqs)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

// scanItems reads every item of the state table by key ("pk|sk").
func scanItems(tb testing.TB, s *Store) map[string]map[string]types.AttributeValue {
	tb.Helper()
	items, err := New(client, s.tables, defaults()).scan(context.Background(), s.tables.State)
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]map[string]types.AttributeValue, len(items))
	for _, it := range items {
		out[text(it[attrPK])+"|"+text(it[attrSK])] = it
	}
	return out
}

// TestDirectPopulationIsWhatSubmitWrites: the benchmark's direct population
// writes exactly the items Submit writes (queues, chunks, jobs, counters,
// model states, batches, the sequence), and with claimable = 2 exactly those
// minus the job items at positions 2 and above.
func TestDirectPopulationIsWhatSubmitWrites(t *testing.T) {
	sc := scale{Models: 3, Batches: 5, Projects: 2, PerQueue: 503} // two chunks per queue
	viaSubmit, _ := newStore(t)
	for i := range sc.Batches { // one at a time: seq in batch order
		submit(t, viaSubmit, sc.spec(i))
	}
	want := scanItems(t, viaSubmit)

	for _, claimable := range []int{sc.PerQueue, 2} {
		direct, _ := newStore(t)
		populateDirect(t, direct, sc, claimable)
		got := scanItems(t, direct)
		var missing, extra, differ []string
		for k, w := range want {
			g, ok := got[k]
			switch {
			case !ok && strings.HasSuffix(k, "|"+skJob) && jobPos(t, w) >= int64(claimable):
				// left out on purpose
			case !ok:
				missing = append(missing, k)
			case !reflect.DeepEqual(g, w):
				differ = append(differ, fmt.Sprintf("%s: got %v, want %v", k, g, w))
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				extra = append(extra, k)
			}
		}
		if len(missing)+len(extra)+len(differ) > 0 {
			slices.Sort(missing)
			slices.Sort(extra)
			slices.Sort(differ)
			t.Errorf("claimable %d: %d items missing %.3q, %d extra %.3q, %d differ %.2q",
				claimable, len(missing), missing, len(extra), extra, len(differ), differ)
		}
		t.Logf("claimable %d: %d items written, Submit wrote %d", claimable, len(got), len(want))
	}
}

// TestChunkCacheIsBounded: a Store that has cached maxCachedChunks queues'
// chunks forgets them before caching another, and still claims.
func TestChunkCacheIsBounded(t *testing.T) {
	s, _ := newStore(t)
	b := batch("lab", "sweep", "b1", "gpt", -1, 3)
	submit(t, s, b)
	for i := range maxCachedChunks {
		s.chunks[fmt.Sprint("QUEUE#other#", i)] = chunkItem{IDs: make([]string, chunkSize)}
	}
	if jobs := commit(t, s, grant(t0, b, 2)); len(jobs) != 2 {
		t.Fatalf("got %d claimed, want 2", len(jobs))
	}
	if len(s.chunks) != 1 {
		t.Errorf("got %d chunks cached, want 1 (the cache emptied, then took the claim's)", len(s.chunks))
	}
}

func jobPos(t testing.TB, it map[string]types.AttributeValue) int64 {
	n, bad := integer(it["pos"])
	if bad != "" {
		t.Fatalf("pos: %s", bad)
	}
	return n
}

// --- one pass at scale ---------------------------------------------------

// phased times and meters the store's phases of a pass; the pass's other
// steps (depths, Decide, launch) fall between them.
type phased struct {
	*Store
	m    *meter
	wall map[string]time.Duration
}

func (p *phased) enter(phase string) func() {
	p.m.setPhase(phase)
	start := time.Now()
	return func() { p.wall[phase] += time.Since(start); p.m.setPhase("other") }
}

func (p *phased) Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error) {
	defer p.enter("snapshot")()
	return p.Store.Snapshot(ctx, now)
}

func (p *phased) Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error) {
	defer p.enter("commit")()
	return p.Store.Commit(ctx, plan, read)
}

func (p *phased) RecordLaunches(ctx context.Context, now time.Time, rs []scheduler.LaunchResult) error {
	defer p.enter("record")()
	return p.Store.RecordLaunches(ctx, now, rs)
}

// instant launches every job at once; ECS's rate is BenchmarkLaunchRate's
// (internal/ecslauncher).
type instant struct{ last []scheduler.LaunchResult }

func (l *instant) Launch(_ context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	l.last = l.last[:0]
	for _, j := range jobs {
		l.last = append(l.last, scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: "arn:aws:ecs:us-east-1:123456789012:task/sandbox/" + j.ID})
	}
	return l.last
}

// passResult is the mean over the passes of a benchmark.
type passResult struct {
	Passes             int
	Wall               time.Duration
	CPU                time.Duration // this process's user and system time during the passes
	Phases             map[string]time.Duration
	Use                map[string]usage
	All                usage
	Events             usage // the task events of the jobs launched (started, stopped)
	Claimed, Grants    int
	Models, Queues     int
	ChunksCached       int
	EMFBytes, LogBytes int    // the last pass's EMF documents and its pass log line
	HeapAfter          uint64 // live heap after the passes, after a GC
	PeakHeap, BaseHeap uint64
}

// benchPasses runs the real scheduler.Pass over a populated store once per
// iteration. Between passes (untimed) every launched task starts and ends,
// as task events would: the slots free, so each pass admits its launch
// budget again and acknowledges outcomes, as in the steady state.
func benchPasses(b *testing.B, sc scale, populate func(b *testing.B, s *Store) time.Duration, cfg scheduler.Config, latency time.Duration) passResult {
	tables := newTables(b)
	plain := New(dynamoDB(b), tables, defaults())
	putModels(b, plain, sc)
	took := populate(b, plain)
	b.Logf("%d models, %d batches in %d projects, %d waiting: populated in %v (%.0f jobs/s)",
		sc.Models, sc.Batches, sc.Projects, sc.waiting(), took.Round(time.Second), float64(sc.waiting())/took.Seconds())
	b.ReportMetric(took.Seconds(), "populate-s")
	res := runPasses(b, tables, sc, cfg, passSetup{latency: latency, start: t0})
	logItemSizes(b, plain, sc)
	return res
}

// passSetup is how runPasses runs: every request delayed by latency, the
// store scoped to shard of shards (shards ≤ 1: all models), the clock from
// start.
type passSetup struct {
	latency       time.Duration
	shards, shard int
	start         time.Time
}

// runPasses runs the real scheduler.Pass once per benchmark iteration over
// populated tables, metered by phase; between passes (untimed) the launched
// tasks start and end through the store, so each pass admits its budget again.
func runPasses(b *testing.B, tables Tables, sc scale, cfg scheduler.Config, ps passSetup) passResult {
	ctx := context.Background()
	m := newMeter(dynamoDB(b))
	m.latency = ps.latency
	store := New(m, tables, defaults())
	store.ScopeToShard(ps.shard, ps.shards)
	em := newMeter(dynamoDB(b))
	events := New(em, tables, defaults()) // the task-events function's work, metered apart

	at := passfake.Depths{}
	for i := range sc.Models {
		at[sc.model(i)] = 40 // at the target: the limits hold
	}
	p := &phased{Store: store, m: m, wall: map[string]time.Duration{}}
	l := &instant{}
	clk := passfake.NewClock(ps.start)
	sched := &scheduler.Scheduler{Store: p, Depths: at, Launcher: l, Clock: clk, Config: cfg}

	res := passResult{Phases: map[string]time.Duration{}, Use: map[string]usage{}}
	runtime.GC()
	res.BaseHeap = readMetric(heapMetricName)
	m.take()
	for b.Loop() {
		b.StopTimer()
		clk.Add(10 * time.Second)
		stop := samplePeak()
		b.StartTimer()

		cpu0 := cpuTime()
		start := time.Now()
		var rep scheduler.Report
		var err error
		// The label follows the pass into the goroutines it starts, for
		// go tool pprof -tagfocus pass:1.
		pprof.Do(ctx, pprof.Labels("pass", "1"), func(ctx context.Context) { rep, err = sched.Pass(ctx) })
		wall := time.Since(start)
		res.CPU += cpuTime() - cpu0

		b.StopTimer()
		res.PeakHeap = max(res.PeakHeap, stop())
		if err != nil {
			b.Fatal(err)
		}
		granted := rep.Plan.Total()
		if rep.Claimed != granted || rep.Launched != rep.Claimed || granted == 0 {
			b.Fatalf("pass %d: granted %d, claimed %d, launched %d: want all granted claimed and launched", res.Passes+1, granted, rep.Claimed, rep.Launched)
		}
		res.Passes++
		res.Wall += wall
		res.Claimed += rep.Claimed
		for _, mp := range rep.Plan.Models {
			if ps.shards > 1 && scheduler.ShardOf(mp.Model, ps.shards) != ps.shard {
				b.Fatalf("shard %d of %d planned model %s, shard %d's", ps.shard, ps.shards, mp.Model, scheduler.ShardOf(mp.Model, ps.shards))
			}
			res.Grants += len(mp.Grants)
		}
		for ph, u := range m.take() {
			x := res.Use[ph]
			x.add(u)
			res.Use[ph] = x
			res.All.add(u)
		}
		if res.Passes == 1 {
			res.Models = len(rep.Plan.Models)
		}
		res.EMFBytes, res.LogBytes = logSizes(b, rep)
		// The tasks start and end (untimed; metered apart, as the
		// task-events function's work).
		results := slices.Clone(l.last)
		err = parallel(ctx, len(results), func(ctx context.Context, i int) error {
			r := results[i]
			if err := events.TaskStarted(ctx, r.JobID, r.Attempt, clk.Now().Add(2*time.Second)); err != nil {
				return err
			}
			return events.TaskStopped(ctx, r.JobID, r.Attempt, job.Exit{}, clk.Now().Add(5*time.Second))
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range em.take() {
			res.Events.add(u)
		}
		b.StartTimer()
	}
	for ph, d := range p.wall {
		res.Phases[ph] = d
	}
	store.mu.Lock()
	res.ChunksCached = len(store.chunks)
	store.mu.Unlock()
	scoped := New(dynamoDB(b), tables, defaults())
	scoped.ScopeToShard(ps.shard, ps.shards)
	snap, err := scoped.Snapshot(ctx, clk.Now())
	if err != nil {
		b.Fatal(err)
	}
	res.Queues = len(snap.Queues)
	runtime.GC()
	res.HeapAfter = readMetric(heapMetricName)
	runtime.KeepAlive(store)
	return res
}

// report turns a result into the benchmark's metrics, per pass.
func (r passResult) report(b *testing.B, sc scale, cfg scheduler.Config) {
	n := float64(r.Passes)
	per := func(v float64) float64 { return v / n }
	claimed := per(float64(r.Claimed))
	target := float64(sc.Models)/100 + float64(sc.Batches)/100 + claimed/25 + 20
	b.ReportMetric(per(float64(r.All.Requests)), "req/pass")
	b.ReportMetric(target, "target-req/pass")
	b.ReportMetric(per(r.All.RRU), "RRU/pass")
	// DynamoDB Local's count: its transactions report 2 units each.
	b.ReportMetric(per(r.All.WRU), "local-WRU/pass")
	b.ReportMetric(claimed, "admitted/pass")
	b.ReportMetric(per(float64(r.Grants)), "grants/pass")
	for _, ph := range []string{"snapshot", "commit", "record"} {
		b.ReportMetric(per(float64(r.Use[ph].Requests)), ph+"-req/pass")
		b.ReportMetric(per(float64(r.Phases[ph].Milliseconds())), ph+"-ms/pass")
	}
	b.ReportMetric(per(float64(r.CPU.Milliseconds())), "cpu-ms/pass")
	b.ReportMetric(float64(r.PeakHeap-min(r.PeakHeap, r.BaseHeap))/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(r.HeapAfter)/(1<<20), "live-heap-MB")

	b.Logf("%d passes, %v each (%v of this process's CPU): %d models, %d queues active after; launch budget %d",
		r.Passes, (r.Wall / time.Duration(r.Passes)).Round(time.Millisecond), (r.CPU / time.Duration(r.Passes)).Round(time.Millisecond),
		r.Models, r.Queues, cfg.MaxLaunchesPerPass)
	for _, ph := range slices.Sorted(maps.Keys(r.Use)) {
		u := r.Use[ph]
		b.Logf("  %-8s %6.1f ms  %7.1f requests %v  %8.1f RRU %8.1f local WRU %v  %7.1f items read  %6.1f items in transactions",
			ph, per(float64(r.Phases[ph].Microseconds()))/1000, per(float64(u.Requests)), perOp(u.ByOp, n),
			per(u.RRU), per(u.WRU), unitsOp(u.UnitsByOp, n), per(float64(u.ItemsRead)), per(float64(u.TxItems)))
	}
	if r.Claimed > 0 {
		e, k := r.Events, float64(r.Claimed)
		b.Logf("  task events (started + stopped) per job: %.2f requests %v, %.2f RRU, %.2f local WRU",
			float64(e.Requests)/k, perOp(e.ByOp, k), e.RRU/k, e.WRU/k)
	}
	b.Logf("  logs per pass: EMF %d bytes, pass log line %d bytes", r.EMFBytes, r.LogBytes)
	b.Logf("  per pass: %.1f requests (target %.1f), %.1f RRU, %.1f local WRU, %.1f admitted in %.1f grants; %d chunks cached; live heap %.1f MiB, pass peak +%.1f MiB",
		per(float64(r.All.Requests)), target, per(r.All.RRU), per(r.All.WRU), claimed, per(float64(r.Grants)),
		r.ChunksCached, float64(r.HeapAfter)/(1<<20), float64(r.PeakHeap-min(r.PeakHeap, r.BaseHeap))/(1<<20))
}

func unitsOp(by map[string]float64, n float64) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %.3g", op, by[op]/n))
	}
	return "units[" + strings.Join(parts, ", ") + "]"
}

func perOp(by map[string]int, n float64) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %.3g", op, float64(by[op])/n))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// seed is the seed system: 241 models, 10,000 active batches in 2,000
// projects.
var seed = scale{Models: 241, Batches: 10_000, Projects: 2_000}

// BenchmarkPassAtScale is one full pass (Snapshot, depths, Decide, Commit,
// launch, RecordLaunches) of the seed system against DynamoDB Local,
// admitting its launch budget of 200, with 10,000 and with 1,000,000 jobs
// waiting behind the same 10,000 queues. The requests and read units must
// be the same for both.
func BenchmarkPassAtScale(b *testing.B) {
	cfg := scheduler.DefaultConfig()
	cases := []struct {
		name     string
		perQueue int
		populate func(b *testing.B, s *Store, sc scale) time.Duration
		slow     bool
	}{
		{"waiting=10000/submit", 1, func(b *testing.B, s *Store, sc scale) time.Duration { return populateBySubmit(b, s, sc) }, false},
		// 1,000,000 through Submit takes ~15 min on DynamoDB Local: the
		// items a pass can read are written directly (populateDirect).
		{"waiting=1000000/direct", 100, func(b *testing.B, s *Store, sc scale) time.Duration { return populateDirect(b, s, sc, 4) }, false},
		{"waiting=1000000/submit", 100, func(b *testing.B, s *Store, sc scale) time.Duration { return populateBySubmit(b, s, sc) }, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.slow && os.Getenv(scaleEnv) == "" {
				b.Skipf("takes ~20 minutes: set %s=1 (make bench-scale)", scaleEnv)
			}
			sc := seed
			sc.PerQueue = c.perQueue
			b.ReportAllocs()
			r := benchPasses(b, sc, func(b *testing.B, s *Store) time.Duration { return c.populate(b, s, sc) }, cfg, 0)
			r.report(b, sc, cfg)
		})
	}
}

// BenchmarkPassLimits measures how far one scheduler goes (make
// bench-scale): the seed system with every request delayed by 25 ms (the
// critical path in requests: the extra time over 25 ms), a launch budget of
// 1,000 (100 jobs a second), and 2,000 models over 20,000 batches.
func BenchmarkPassLimits(b *testing.B) {
	if os.Getenv(scaleEnv) == "" {
		b.Skipf("takes ~15 minutes: set %s=1 (make bench-scale)", scaleEnv)
	}
	cases := []struct {
		sc      scale
		budget  int
		latency time.Duration
	}{
		{scale{Models: 241, Batches: 10_000, Projects: 2_000, PerQueue: 100}, 200, 25 * time.Millisecond},
		{scale{Models: 241, Batches: 10_000, Projects: 2_000, PerQueue: 100}, 1000, 0},
		{scale{Models: 2_000, Batches: 20_000, Projects: 4_000, PerQueue: 100}, 200, 0},
		{scale{Models: 2_000, Batches: 20_000, Projects: 4_000, PerQueue: 100}, 1000, 0},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("models=%d/batches=%d/budget=%d/latency=%v", c.sc.Models, c.sc.Batches, c.budget, c.latency), func(b *testing.B) {
			cfg := scheduler.DefaultConfig()
			cfg.MaxLaunchesPerPass = c.budget
			cfg.GlobalMaxRunning = 1_000_000 // the budget, not the cap, binds
			b.ReportAllocs()
			r := benchPasses(b, c.sc, func(b *testing.B, s *Store) time.Duration { return populateDirect(b, s, c.sc, 4) }, cfg, c.latency)
			r.report(b, c.sc, cfg)
		})
	}
}

// --- one job's life, in bulk ----------------------------------------------

// BenchmarkJobLifecycle meters what each step of a job's life costs when
// jobs move in bulk (a 1,000-job message; claims of 90 a transaction, as a
// pass granting one big batch makes; its launches recorded; each task's
// RUNNING and STOPPED events): requests, read and write units per job.
func BenchmarkJobLifecycle(b *testing.B) {
	ctx := context.Background()
	tables := newTables(b)
	m := newMeter(dynamoDB(b))
	s := New(m, tables, defaults())
	const jobs = 1000
	steps := []string{"submit", "claim", "record", "started", "stopped"}
	use := map[string]*usage{}
	for _, st := range steps {
		use[st] = &usage{}
	}
	take := func(step string) {
		for _, u := range m.take() {
			use[step].add(u)
		}
	}
	n := 0
	for b.Loop() {
		n++
		bs := batch("lab", "sweep", fmt.Sprintf("b%d", n), "gpt", -1, jobs)
		for k := range bs.Jobs {
			bs.Jobs[k].Env = map[string]string{"TASK_ID": fmt.Sprintf("%06d", k), "SPLIT": "test", "PROMPT_SET": fmt.Sprintf("mmlu-pro-2026-%06d", k)}
		}
		m.take()
		submit(b, s, bs)
		take("submit")
		at := t0.Add(time.Duration(n) * 10 * time.Second)
		snap, err := s.Snapshot(ctx, at)
		if err != nil {
			b.Fatal(err)
		}
		m.take()
		claimed := commitRead(b, s, grant(at, bs, jobs), snap.Versions) // conditioned on the versions read
		take("claim")
		if len(claimed) != jobs {
			b.Fatalf("claimed %d, want %d", len(claimed), jobs)
		}
		launchAll(b, s, claimed)
		take("record")
		for _, j := range claimed {
			if err := s.TaskStarted(ctx, j.ID, j.Attempt, at.Add(time.Minute)); err != nil {
				b.Fatal(err)
			}
		}
		take("started")
		for _, j := range claimed {
			if err := s.TaskStopped(ctx, j.ID, j.Attempt, job.Exit{}, at.Add(20*time.Minute)); err != nil {
				b.Fatal(err)
			}
		}
		take("stopped")
	}
	k := float64(n * jobs)
	var all usage
	for _, st := range steps {
		u := use[st]
		all.add(*u)
		b.Logf("%-8s per job: %.3f requests %v, %.2f RRU, %.2f local WRU %v", st, float64(u.Requests)/k, perOp(u.ByOp, k), u.RRU/k, u.WRU/k, unitsOp(u.UnitsByOp, k))
	}
	b.ReportMetric(float64(all.Requests)/k, "req/job")
	b.ReportMetric(all.RRU/k, "RRU/job")
	b.ReportMetric(all.WRU/k, "local-WRU/job") // its transactions report 2 units each
}

// --- intake: one 10,000-job message ---------------------------------------

// BenchmarkSubmitMessage ingests one 10,000-job message into DynamoDB Local:
// the first message of a batch, and the fifth 10,000-job part of one (whose
// jobs Submit must first look up). Peak heap is sampled every millisecond
// and compared with the size of the message's JSON.
func BenchmarkSubmitMessage(b *testing.B) {
	for _, part := range []int{1, 5} {
		b.Run(fmt.Sprintf("part=%d", part), func(b *testing.B) {
			ctx := context.Background()
			tables := newTables(b)
			m := newMeter(dynamoDB(b))
			s := New(m, tables, defaults())
			const jobs = 10_000
			msg := func(p int) job.BatchSpec {
				bs := job.BatchSpec{Account: "acme", Project: "search-evals", Model: "gpt-5.5", Tier: -1, Jobs: make([]job.JobSpec, jobs)}
				for k := range bs.Jobs {
					i := (p-1)*jobs + k
					bs.Jobs[k] = job.JobSpec{Key: fmt.Sprintf("task-%06d", i), Env: map[string]string{
						"TASK_ID": fmt.Sprintf("%06d", i), "SPLIT": "test", "PROMPT_SET": fmt.Sprintf("mmlu-pro-2026-%06d", i),
					}}
				}
				return bs
			}
			size := messageSize(b, msg(1))
			var (
				use          usage
				took, cpu    time.Duration
				peak, before uint64
				n            int
			)
			for b.Loop() {
				b.StopTimer()
				n++
				name := fmt.Sprintf("sweep-%d", n)
				for p := 1; p < part; p++ { // the earlier parts, unmetered
					bs := msg(p)
					bs.Batch = name
					if _, err := New(client, tables, defaults()).Submit(ctx, bs, t0); err != nil {
						b.Fatal(err)
					}
				}
				bs := msg(part)
				bs.Batch = name
				m.take()
				runtime.GC()
				base := readMetric(heapMetricName)
				stop := samplePeak()
				b.StartTimer()

				start, cpu0 := time.Now(), cpuTime()
				created, err := s.Submit(ctx, bs, t0)
				took += time.Since(start)
				cpu += cpuTime() - cpu0

				b.StopTimer()
				p := stop()
				peak, before = max(peak, p-min(p, base)), base
				if err != nil || created != jobs {
					b.Fatalf("created %d, %v; want %d", created, err, jobs)
				}
				for _, u := range m.take() {
					use.add(u)
				}
				b.StartTimer()
			}
			k := float64(n)
			writes := use.ByOp["BatchWriteItem"] + use.ByOp["TransactWriteItems"] + use.ByOp["UpdateItem"] + use.ByOp["PutItem"]
			reads := use.ByOp["BatchGetItem"] + use.ByOp["Query"] + use.ByOp["GetItem"]
			b.ReportMetric(float64(writes)/k, "write-calls/msg")
			b.ReportMetric(float64(jobs)*k/float64(writes), "jobs/write-call")
			b.ReportMetric(float64(reads)/k, "read-calls/msg")
			b.ReportMetric(use.WRU/k/jobs, "WRU/job") // BatchWriteItem: counted right
			b.ReportMetric(use.RRU/k/jobs, "RRU/job")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(peak)/float64(size), "peak-heap/msg-bytes")
			b.ReportMetric(took.Seconds()/k, "s/msg")
			b.ReportMetric(cpu.Seconds()/k, "cpu-s/msg")
			b.Logf("part %d: %d-byte message, %.0f ms; %v; %.2f WRU and %.2f RRU a job; peak heap +%.1f MiB (%.1f× the message; heap before %.1f MiB)",
				part, size, took.Seconds()/k*1000, perOp(use.ByOp, k), use.WRU/k/jobs, use.RRU/k/jobs, float64(peak)/(1<<20), float64(peak)/float64(size), float64(before)/(1<<20))
		})
	}
}

// messageSize is the size of the version-1 JSON message of a batch.
func messageSize(tb testing.TB, b job.BatchSpec) int {
	tb.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"version":1,"account":%q,"project":%q,"batch":%q,"model":%q,"jobs":[`, b.Account, b.Project, "sweep-1", b.Model)
	for i, j := range b.Jobs {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"key":%q,"env":{`, j.Key)
		names := slices.Sorted(maps.Keys(j.Env))
		for k, n := range names {
			if k > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "%q:%q", n, j.Env[n])
		}
		sb.WriteString("}}")
	}
	sb.WriteString("]}")
	return sb.Len()
}

// logSizes is what a pass writes to its log group: the EMF documents
// (internal/emf) and the runner's "pass" line (JSON).
func logSizes(tb testing.TB, rep scheduler.Report) (emfBytes, logBytes int) {
	tb.Helper()
	var e, l countingWriter
	if err := emf.WriteShard(&e, "evalsched", 0, emf.Full, rep); err != nil {
		tb.Fatal(err)
	}
	for _, line := range rep.Lines(scheduler.LogModelsPerLine) {
		slog.New(slog.NewJSONHandler(&l, nil)).Info("pass", "pass", line)
	}
	return e.n, l.n
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// logItemSizes logs the sizes DynamoDB bills by (attribute names and
// values; ± a few bytes) of batch 0's items and its model's.
func logItemSizes(tb testing.TB, s *Store, sc scale) {
	tb.Helper()
	b := sc.spec(0)
	q := queuePK(scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model})
	id := job.JobID(b.Account, b.Project, b.Batch, b.Jobs[0].Key)
	waiting, err := attributevalue.MarshalMap(jobItem{
		PK: jobPK(id), SK: skJob, ID: id, Account: b.Account, Project: b.Project, Batch: b.Batch,
		Key: b.Jobs[0].Key, Model: b.Model, Env: b.Jobs[0].Env, TaskDefinition: b.TaskDefinition,
		TimeoutSeconds: b.TimeoutSeconds, MaxAttempts: 3, Attempt: 1, State: job.Waiting, Queue: q, SubmitAt: stamp(t0),
	})
	if err != nil {
		tb.Fatal(err)
	}
	parts := []string{fmt.Sprintf("job as submitted %d B", ItemBytes(waiting))}
	for _, k := range []struct{ what, pk, sk string }{
		{"job of batch 0 now", jobPK(id), skJob},
		{"queue", q, skQueue},
		{"chunk", q, chunkSK(0)},
		{"model state", modelsPK(b.Model), b.Model},
		{"model counters", countersPK(b.Model), skCounters},
	} {
		res, err := s.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.tables.State), Key: key(k.pk, k.sk)})
		if err != nil {
			tb.Fatal(err)
		}
		if len(res.Item) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d B", k.what, ItemBytes(res.Item)))
		}
	}
	tb.Logf("  item sizes: %s", strings.Join(parts, ", "))
}

// --- heap sampling ---------------------------------------------------------

// cpuTime is the user and system time this process used so far: the
// client's work, not DynamoDB Local's (another process).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const heapMetricName = "/memory/classes/heap/objects:bytes"

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// samplePeak samples the heap's objects every millisecond until the
// returned function is called, which returns the highest value seen.
func samplePeak() func() uint64 {
	done, result := make(chan struct{}), make(chan uint64)
	go func() {
		peak := readMetric(heapMetricName)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				result <- max(peak, readMetric(heapMetricName))
				return
			case <-tick.C:
				peak = max(peak, readMetric(heapMetricName))
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}
