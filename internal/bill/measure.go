package bill

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/dynamolease"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/gatewaydepth"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/reconcile/ecstasks"
	"github.com/evalsched/evalsched/internal/resultmsg"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// Setup is the deployment measured: what template.yaml and the README's
// recommended configuration set.
type Setup struct {
	ModelMetrics emf.Detail
	// The gateway metrics the pass reads besides the depth (the README
	// recommends the in-service and error-rate metrics: on).
	InService, ErrorRate bool
	// TaskStatuses are the lastStatus values of the ECS task state changes
	// the EventBridge rule delivers (nil: every one).
	TaskStatuses []string
	// Readings: the pass reads the bridge's readings item (package
	// depthitem, GatewayDepthSource dynamodb) instead of GetMetricData.
	Readings bool
}

// Measured is what the real code asked of AWS at the measured scale, per
// unit of work.
type Measured struct {
	// Snapshot is the pass's read: SnapshotFixed plus SnapshotPerBatch a
	// queue in the active index, fitted on two sizes.
	SnapshotFixed, SnapshotPerBatch float64 // read units
	SnapshotAt                      [2]MeasuredSnapshot
	// Pass is one steady pass at ActiveModels models, launching the load's
	// jobs a pass: its requests other than the claims' (PassFixed) and its
	// claims and launch records (Claim, Record, per job).
	PassFixed     Usage
	Claimed       int // jobs of the measured pass
	Claim, Record Usage
	// Metric queries the pass asked GetMetricData for, and in how many calls.
	MetricQueries, MetricCalls int
	BusyModels                 int
	// With Setup.Readings: the pass's read of the readings item (part of
	// PassFixed) and one write of it by the bridge, every model in it.
	DepthRead, ReadingsPut Usage
	// One job's life after its claim: the task events the rule delivers
	// and their invocations, the result.
	Events            Usage
	EventInvocations  int // per job
	EventMillis       float64
	Result            Usage
	ResultMillis      float64
	Submit            Usage // a message of JobsPerMessage jobs
	SubmitMillis      float64
	MessageBytes      int
	Reconcile         Usage
	Lease             Usage // one scheduler invocation's
	ReconcileInFlight int
	// PassInFlight is the jobs in flight when the last measured pass
	// began: its Snapshot read them from the inflight index.
	PassInFlight         int
	EMF                  EMFCount
	PassLogBytes         int // EMF documents and the pass log line of one pass
	EventLogBytes        int // per job: task events' lines and EMF
	ResultLogBytes       int // per job
	SubmitLogBytes       int // per message
	ModelStateItemBytes  int
	JobsMeasured         int
	MeasuredActiveModels int
}

// MeasuredSnapshot is one Snapshot's read at a number of active batches.
type MeasuredSnapshot struct {
	Batches int
	Use     Usage
}

var tableSeq atomic.Int64

// Measure runs the real code against the DynamoDB at endpoint (DynamoDB
// Local) and the ECS and CloudWatch fakes, at the load scaled down where it
// must be: every model item, ActiveModels busy models, up to 1,000 active
// batches (the Snapshot's read is fitted on two sizes and extrapolated),
// a pass launching the load's jobs a pass.
func Measure(ctx context.Context, endpoint string, load Load, setup Setup) (Measured, error) {
	var ms Measured
	raw, err := dynamostore.LocalClient(ctx, endpoint)
	if err != nil {
		return ms, err
	}
	meter := NewMeter(raw)
	tables := dynamostore.DefaultTables(fmt.Sprintf("cost%d-", tableSeq.Add(1)))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	defaults := scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 10000, TargetDepth: 40, InitialLimit: 50}
	plain := dynamostore.New(raw, tables, defaults)
	if err := plain.CreateTables(ctx); err != nil {
		return ms, err
	}
	defer dropTables(ctx, raw, tables)
	store := dynamostore.New(meter, tables, defaults)
	store.Log = quiet
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	model := func(i int) string { return fmt.Sprintf("model-%03d", i) }
	for i := range load.Models {
		if err := plain.PutModel(ctx, scheduler.ModelConfig{Name: model(i), Enabled: true, MinLimit: 1, MaxLimit: 10000, TargetDepth: 40, InitialLimit: 50}); err != nil {
			return ms, err
		}
	}
	ms.MeasuredActiveModels = load.ActiveModels

	counter := &EMFCounter{} // every EMF document the functions write

	// 1. Intake: one message of JobsPerMessage jobs through the handler.
	var intakeLog countingWriter
	ih := &intake.Handler{
		Store:   store,
		Config:  intake.Config{Batch: batchmsg.Config{Tiers: 3, DefaultTier: 2, DefaultTaskDefinition: "eval-sandbox:1"}, Namespace: "evalsched"},
		Log:     slog.New(slog.NewJSONHandler(&intakeLog, nil)),
		Metrics: io.MultiWriter(&intakeLog, counter),
		Now:     func() time.Time { return at },
	}
	body := message("intake", model(0), load.JobsPerMessage)
	ms.MessageBytes = len(body)
	meter.Take()
	start := time.Now()
	resp, err := ih.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: body}}})
	ms.SubmitMillis = float64(time.Since(start).Microseconds()) / 1000
	if err != nil || len(resp.BatchItemFailures) > 0 {
		return ms, fmt.Errorf("intake: %v, %d failures", err, len(resp.BatchItemFailures))
	}
	ms.Submit = meter.Take()
	ms.SubmitLogBytes = intakeLog.n

	// 2. The active batches, two sizes, each a queue of a few jobs, spread
	// over the active models; the Snapshot read at each.
	batches := min(load.ActiveBatches, 1000)
	sizes := [2]int{batches / 2, batches}
	populated := 1 // the intake's
	const perBatch = 4
	for k, n := range sizes {
		err := parallel(ctx, n-populated, func(ctx context.Context, i int) error {
			i += populated
			b := job.BatchSpec{Account: fmt.Sprintf("acct-%d", i%7), Project: fmt.Sprintf("proj-%04d", i%200),
				Batch: fmt.Sprintf("batch-%05d", i), Model: model(i % load.ActiveModels), Tier: i % 3,
				TaskDefinition: "eval-sandbox:1", TimeoutSeconds: 3600}
			for j := range perBatch {
				b.Jobs = append(b.Jobs, jobSpec(j))
			}
			_, err := plain.Submit(ctx, b, at)
			return err
		})
		if err != nil {
			return ms, fmt.Errorf("populate: %w", err)
		}
		populated = n
		meter.Take()
		if _, err := store.Snapshot(ctx, at); err != nil {
			return ms, err
		}
		ms.SnapshotAt[k] = MeasuredSnapshot{Batches: n, Use: meter.Take()}
	}
	a, b := ms.SnapshotAt[0], ms.SnapshotAt[1]
	ms.SnapshotPerBatch = (b.Use.RRU - a.Use.RRU) / float64(b.Batches-a.Batches)
	ms.SnapshotFixed = b.Use.RRU - ms.SnapshotPerBatch*float64(b.Batches)

	// 3. The pass: the real scheduler with the gateway depth reader on the
	// CloudWatch fake and the ECS launcher on the ECS fake.
	cw, ecsFake := httpfake.NewCloudWatch(), httpfake.NewECS()
	defer cw.Close()
	defer ecsFake.Close()
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	cwc := cloudwatch.New(cloudwatch.Options{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(cw.URL())})
	// The SDK's standard retries: a loaded machine's loopback sometimes
	// drops a read, and ECS calls are not billed, so a retry moves nothing.
	ecsc := ecs.New(ecs.Options{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(ecsFake.URL())})
	gw := gatewaydepth.Config{}
	if setup.InService {
		gw.InServiceMetricName = "InService"
	}
	if setup.ErrorRate {
		gw.ErrorMetricName, gw.CallsMetricName = "Errors", "Calls"
	}
	clock := passfake.NewClock(at)
	cfg := scheduler.DefaultConfig()
	cfg.MaxLaunchesPerPass = max(1, int(math.Round(load.JobsPerPass())))
	launcher := ecslauncher.New(ecsc, ecslauncher.Config{Cluster: "sandbox", Subnets: []string{"subnet-1"}, ContainerName: "sandbox",
		DefaultTaskDefinition: "eval-sandbox:1", Rate: 1e6, Burst: 1e6}, quiet)
	ph := &phases{Store: store, meter: meter}
	var depths scheduler.DepthReader = gatewaydepth.New(cwc, gw)
	readings := &depthitem.Writer{API: raw, Table: tables.State} // the bridge's writes, metered once below
	if setup.Readings {
		depths = &depthitem.Reader{API: meter, Table: tables.State}
	}
	sched := &scheduler.Scheduler{Store: ph, Depths: ph.metered(depths), Launcher: launcher, Clock: clock, Config: cfg, Log: quiet}
	const passes = 3
	var last scheduler.Report
	var emfOut countingWriter
	for p := range passes {
		now := clock.Add(load.PassInterval)
		for i := range load.ActiveModels {
			for s := 5; s <= 30; s += 5 { // the gateway at its target depth, busy, without errors
				t := now.Add(-time.Duration(s) * time.Second)
				cw.Put(model(i), t, 40)
				cw.PutMetric("InService", model(i), t, 100)
				cw.PutMetric("Calls", model(i), t, 50)
				cw.PutMetric("Errors", model(i), t, 0)
			}
		}
		if setup.Readings {
			// The bridge's period: every model it has seen, the busy ones
			// at the same readings.
			items := map[string]scheduler.Depth{}
			for i := range load.Models {
				at := now.Add(-5 * time.Second)
				items[model(i)] = scheduler.Depth{Value: 40, At: at, InService: 100, InServiceAt: at, ErrorRate: 0, Calls: 50, ErrorAt: at}
			}
			if p == passes-1 {
				readings.API = meter
				meter.Take()
			}
			if err := readings.Put(ctx, now, items); err != nil {
				return ms, fmt.Errorf("readings item: %w", err)
			}
			if p == passes-1 {
				ms.ReadingsPut = meter.Take()
			}
		}
		ph.reset()
		ms.PassInFlight = len(ecsFake.Tasks())
		calls0, queries0 := cw.Calls, cw.Queries
		rep, err := sched.Pass(ctx)
		if err != nil {
			return ms, fmt.Errorf("pass %d: %w", p+1, err)
		}
		last = rep
		ms.MetricCalls, ms.MetricQueries = cw.Calls-calls0, cw.Queries-queries0
		emfOut.n = 0
		if err := emf.WriteShard(io.MultiWriter(&emfOut, counter), "evalsched", 0, setup.ModelMetrics, rep); err != nil {
			return ms, err
		}
		ms.PassLogBytes = emfOut.n + passLogBytes(rep)
		if p == passes-1 {
			ms.Claimed = rep.Claimed
			ms.Claim = ph.commit.Minus(ph.states)
			ms.Record = ph.record
			ms.PassFixed = ph.snapshot.Plus(ph.states).Plus(ph.other).Plus(ph.depth)
			ms.DepthRead = ph.depth
		}
	}
	for _, m := range last.Plan.Models {
		if m.Running+m.Starting+m.Waiting > 0 {
			ms.BusyModels++
		}
	}

	// The lease over one invocation's minute (passloop: acquired, renewed
	// before each pass, released), the passes themselves measured above.
	loop := &passloop.Loop{Interval: load.PassInterval, Window: time.Minute, Clock: passfake.NewClock(at), Log: quiet,
		Lease: dynamolease.ForShard(meter, tables.State, 0, "cost"), Pass: func(context.Context) error { return nil }}
	meter.Take()
	if _, err := loop.Run(ctx); err != nil {
		return ms, fmt.Errorf("lease: %w", err)
	}
	ms.Lease = meter.Take()

	// 4. The reconciler, with every launched job in flight.
	rec := &reconcile.Reconciler{Store: store, Tasks: ecstasks.Tasks{ECS: ecsc, Cluster: "sandbox"}, Log: quiet}
	meter.Take()
	rr, err := rec.Run(ctx, clock.Now())
	if err != nil {
		return ms, fmt.Errorf("reconcile: %w", err)
	}
	ms.Reconcile, ms.ReconcileInFlight = meter.Take(), rr.InFlight

	// 5. Each launched job's life: the task events the rule delivers, then
	// its result.
	var evLog countingWriter
	th := &taskevent.Handler{Store: store, Config: taskevent.Config{Container: "sandbox"}, Log: slog.New(slog.NewJSONHandler(&evLog, nil)),
		Metrics: io.MultiWriter(&evLog, counter), Namespace: "evalsched", Detail: setup.ModelMetrics}
	var resLog countingWriter
	dlq := &deadLetters{}
	rh := resultsHandler(store, dlq, slog.New(slog.NewJSONHandler(&resLog, nil)), clock.Now)
	tasks := ecsFake.Tasks()
	var evTook, resTook time.Duration
	var evUse, resUse Usage
	invocations := 0
	for _, t := range tasks {
		meter.Take()
		for _, status := range lifecycle {
			if !delivered(setup.TaskStatuses, status) {
				continue
			}
			invocations++
			raw, _ := json.Marshal(stateChange(t, status, clock.Now()))
			start := time.Now()
			if err := th.Handle(ctx, raw); err != nil {
				return ms, fmt.Errorf("task event %s: %w", status, err)
			}
			evTook += time.Since(start)
		}
		evUse = evUse.Plus(meter.Take())
		id, attempt := t.Env["EVALSCHED_JOB_ID"], 1
		msg, _ := json.Marshal(resultmsg.Message{Version: 1, JobID: id, Attempt: attempt, Pass: true, Token: resulttoken.Token(t.Env["EVALSCHED_RESULT_TOKEN"])})
		start := time.Now()
		if _, err := rh.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: string(msg)}}}); err != nil {
			return ms, fmt.Errorf("result: %w", err)
		}
		resTook += time.Since(start)
		resUse = resUse.Plus(meter.Take())
	}
	if len(dlq.reasons) > 0 {
		return ms, fmt.Errorf("%d results refused to the dead-letter queue, the first: %s", len(dlq.reasons), dlq.reasons[0])
	}
	n := len(tasks)
	if n == 0 {
		return ms, fmt.Errorf("the measured passes launched nothing")
	}
	ms.JobsMeasured = n
	ms.Events, ms.Result = evUse, resUse
	ms.EventInvocations = invocations / n
	ms.EventMillis = float64(evTook.Microseconds()) / 1000 / float64(max(1, invocations))
	ms.ResultMillis = float64(resTook.Microseconds()) / 1000 / float64(n)
	ms.EventLogBytes, ms.ResultLogBytes = evLog.n/n, resLog.n/n
	ms.EMF = counter.Count()
	ms.ModelStateItemBytes, err = modelStateBytes(ctx, raw, tables, model(0))
	return ms, err
}

// lifecycle is the lastStatus values an ECS task state change carries over a
// Fargate task's life, each one event
// (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-lifecycle-explanation.html).
var lifecycle = []string{"PROVISIONING", "PENDING", "ACTIVATING", "RUNNING", "DEACTIVATING", "STOPPING", "DEPROVISIONING", "STOPPED"}

func delivered(statuses []string, s string) bool {
	if statuses == nil {
		return true
	}
	for _, x := range statuses {
		if x == s {
			return true
		}
	}
	return false
}
