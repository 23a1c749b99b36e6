package devstack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamolease"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/results"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/schedulerfn"
	"github.com/evalsched/evalsched/internal/taskevent"
	"github.com/evalsched/evalsched/sandboxkit"
)

// Options shape a local run.
type Options struct {
	DynamoDB string // endpoint; "" starts DynamoDB Local
	SQS      string // endpoint; "" starts fauxqs
	Prefix   string // table prefix (default "evalsched-")
	Speed    float64
	Interval time.Duration // between passes (default 10 s)
	Models   []Model
	Out      io.Writer // the progress lines, the exports, what the log says an operator must see
	// LogFile is where every log line goes, as JSON: the pass log with
	// each model's limit decision and reason, the intake's and the task
	// events' lines ("": a new file in the temporary directory). Run
	// prints its path.
	LogFile string
	// Verbose prints every log line to Out too, not only rejects,
	// conflicts, stored batches, the pass's warnings and errors.
	Verbose bool
	// Log, when set, replaces the log file and the console lines.
	Log *slog.Logger
	// Ready, when set, receives the queue URL once everything runs.
	Ready func(queueURL string)
}

// Run runs the local system until ctx ends.
func Run(ctx context.Context, opt Options) error {
	if opt.Prefix == "" {
		opt.Prefix = "evalsched-"
	}
	if opt.Speed <= 0 {
		opt.Speed = 1
	}
	if opt.Interval == 0 {
		opt.Interval = 10 * time.Second
	}
	if opt.Out == nil {
		opt.Out = os.Stdout
	}
	opt.Out = &lockedWriter{w: opt.Out} // progress, console lines and the world write at once
	log := opt.Log
	if log == nil {
		f, path, err := openLog(opt.LogFile)
		if err != nil {
			return err
		}
		defer f.Close()
		opt.LogFile = path
		log = logTo(f, opt.Out, opt.Verbose)
	}

	// 1. The stand-ins, started unless given.
	if opt.DynamoDB == "" {
		s, err := localservers.StartDynamoDB()
		if err != nil {
			return fmt.Errorf("start DynamoDB Local: %w", err)
		}
		defer s.Stop()
		opt.DynamoDB = s.Endpoint
	}
	if opt.SQS == "" {
		s, err := localservers.StartSQS()
		if err != nil {
			return fmt.Errorf("start fauxqs: %w", err)
		}
		defer s.Stop()
		opt.SQS = s.Endpoint
	}
	ddb, err := dynamostore.LocalClient(ctx, opt.DynamoDB)
	if err != nil {
		return err
	}
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	tables := dynamostore.DefaultTables(opt.Prefix)
	store := dynamostore.New(ddb, tables, cfg.DefaultModel())
	store.Retention = cfg.JobRetention
	if err := store.CreateTables(ctx); err != nil {
		return err
	}
	sq := sqs.New(sqs.Options{Region: dynamostore.LocalRegion, BaseEndpoint: aws.String(opt.SQS),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	queueURL, err := createQueue(ctx, sq, opt.Prefix+"intake")
	if err != nil {
		return err
	}
	dlqURL, err := createQueue(ctx, sq, opt.Prefix+"intake-dlq")
	if err != nil {
		return err
	}
	resultsURL, err := createQueue(ctx, sq, opt.Prefix+"results")
	if err != nil {
		return err
	}
	resultsDLQ, err := createQueue(ctx, sq, opt.Prefix+"results-dlq")
	if err != nil {
		return err
	}

	// 2. The functions' code, wired to the stand-ins and the world.
	cfg.DLQURL = dlqURL
	icfg, err := intake.ConfigFrom(cfg)
	if err != nil {
		return err
	}
	in := &intake.Handler{Store: store, DLQ: sq, Config: icfg, Log: log, Metrics: io.Discard}
	te := &taskevent.Handler{Store: store, Config: taskevent.Config{ProviderErrorCodes: cfg.ProviderErrorCodes}, Log: log}
	res := &results.Handler{Store: store, DLQ: sq, DLQURL: resultsDLQ, Log: log}
	world := newWorld(ctx, opt.Speed, opt.Models, te)
	world.report, world.log = sandboxkit.SQSReporter{Client: sq, QueueURL: resultsURL}, log
	ecsAPI, err := serveECS(world)
	if err != nil {
		return fmt.Errorf("serve the local ECS endpoint: %w", err)
	}
	defer ecsAPI.Close()
	depth, err := startDepthPath(ctx, world, cfg, ddb, tables.State, log)
	if err != nil {
		return fmt.Errorf("start the gateway's depth path: %w", err)
	}
	defer depth.Close()
	printStart(opt, queueURL, dlqURL, resultsURL, ecsAPI.url, depth)
	// One scheduler, a pass every opt.Interval; the world publishes no
	// gateway error rate, so the breaker goes by exit codes alone.
	cfg.PassInterval, cfg.Shards = opt.Interval, 1
	cfg.ErrorMetricName, cfg.CallsMetricName = "", ""
	sc := cfg.Pass(0)
	// The yield step stops tasks still starting as on AWS: the real ECS
	// client's StopTask, over HTTP, to the world's endpoint.
	stopper := &ecslauncher.Stopper{API: localECS(ecsAPI.url), Cluster: "local", Reason: taskevent.YieldReason, Log: log}
	sched := &scheduler.Scheduler{Store: store, Depths: depth.reader, Launcher: world, Clock: schedulerfn.RealClock{}, Config: sc, Log: log,
		Yield: &scheduler.Yield{InFlight: store, Tiers: store, Stopper: stopper}}
	run := &schedulerfn.Runner{
		Scheduler: sched,
		Lease:     func(owner string) passloop.Lease { return dynamolease.New(ddb, tables.State, owner) },
		Clock:     afterTheBridge{},
		Interval:  opt.Interval,
		Passes:    6,
		Log:       log,
	}

	// 3. The loops: the intake and the results functions poll their
	// queues (the sandboxes' verdicts reach the store as on AWS); the
	// scheduler runs invocation after invocation; progress every few
	// passes.
	go poll(ctx, sq, queueURL, "intake", in.Handle, log)
	go poll(ctx, sq, resultsURL, "results", res.Handle, log)
	go progress(ctx, store, opt.Out, 3*opt.Interval)
	if opt.Ready != nil {
		opt.Ready(queueURL)
	}
	for n := 0; ctx.Err() == nil; n++ {
		if _, err := run.Run(ctx, fmt.Sprintf("local-%d", n)); err != nil && ctx.Err() == nil {
			log.Error("scheduler invocation", "err", err)
		}
	}
	world.wg.Wait()
	if opt.LogFile != "" {
		fmt.Fprintf(opt.Out, "evalsched local: stopped; the pass log is in %s\n", opt.LogFile)
	}
	return nil
}

// afterTheBridge is the pass loop's clock: the wall clock 300 ms behind,
// so that each pass slot comes 300 ms after the second's boundary, where
// the bridge writes the period just ended. That write takes tens of
// milliseconds on DynamoDB Local; a pass at the boundary itself read the
// period before, a second older: 20 s of the world at make local's speed.
// The passes themselves keep the wall clock (Scheduler.Clock).
type afterTheBridge struct{ schedulerfn.RealClock }

func (afterTheBridge) Now() time.Time { return time.Now().Add(-300 * time.Millisecond) }

// printStart names the stand-ins, the queues and the log, and what to
// export in another shell for evalsched, boto3 and the AWS CLI.
func printStart(opt Options, queueURL, dlqURL, resultsURL, ecsURL string, depth *depthPath) {
	w, region := opt.Out, dynamostore.LocalRegion
	fmt.Fprintf(w, "evalsched local: DynamoDB Local %s, fauxqs %s (127.0.0.1 only), world speed %g×, a pass every %v\n", opt.DynamoDB, opt.SQS, opt.Speed, opt.Interval)
	fmt.Fprintf(w, "  gateway /metrics  %s (vLLM's format; the bridge writes it every second to the readings item in table %s, which the pass reads)\n", depth.metricsURL, depth.table)
	fmt.Fprintf(w, "  intake queue      %s\n  dead-letter queue %s\n", queueURL, dlqURL)
	fmt.Fprintf(w, "  results queue     %s (the simulated sandboxes send their verdicts there; a sandbox of yours may too)\n", resultsURL)
	if opt.LogFile != "" {
		fmt.Fprintf(w, "  pass log          %s (JSON lines: every limit decision with its reason)\n", opt.LogFile)
	}
	fmt.Fprintf(w, "in another shell (evalsched, the AWS CLI and boto3 read these):\n")
	fmt.Fprintf(w, "  export AWS_REGION=%s AWS_DEFAULT_REGION=%s AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local\n", region, region)
	fmt.Fprintf(w, "  export AWS_ENDPOINT_URL_DYNAMODB=%s AWS_ENDPOINT_URL_SQS=%s EVALSCHED_TABLE_PREFIX=%s\n", opt.DynamoDB, opt.SQS, opt.Prefix)
	fmt.Fprintf(w, "  export EVALSCHED_QUEUE_URL=%s EVALSCHED_DLQ_URL=%s\n", queueURL, dlqURL)
	fmt.Fprintf(w, "  export %s=%s   # for a sandbox run by hand (sandboxkit)\n", sandboxkit.EnvResultQueueURL, resultsURL)
	// The world's ECS endpoint: without it `cancel --stop-running` from
	// that shell would call the real ECS.
	fmt.Fprintf(w, "  export AWS_ENDPOINT_URL_ECS=%s EVALSCHED_CLUSTER=local\n", ecsURL)
	fmt.Fprintf(w, "  evalsched submit batch.json   # to the intake queue\n  evalsched status               # limits, running, waiting, ETAs\n  evalsched dlq                  # what the intake rejected, and why\n")
	fmt.Fprintf(w, "an AWS CLI or SDK that predates AWS_ENDPOINT_URL_* needs the endpoint spelled out:\n")
	fmt.Fprintf(w, "  aws sqs receive-message --endpoint-url %s --queue-url %s --message-attribute-names All\n", opt.SQS, dlqURL)
	fmt.Fprintf(w, "  aws dynamodb scan --endpoint-url %s --table-name %smodels\n", opt.DynamoDB, opt.Prefix)
	fmt.Fprintf(w, "Ctrl-C stops it.\n")
}

// openLog creates the log file, or one in the temporary directory.
func openLog(path string) (*os.File, string, error) {
	if path == "" {
		f, err := os.CreateTemp("", "evalsched-local-"+time.Now().Format("20060102-150405")+"-*.log")
		if err != nil {
			return nil, "", fmt.Errorf("pass log: %w", err)
		}
		return f, f.Name(), nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, "", fmt.Errorf("pass log: %w", err)
	}
	return f, path, nil
}

// lockedWriter serializes writes of whole lines from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func createQueue(ctx context.Context, sq *sqs.Client, name string) (string, error) {
	out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// poll is SQS's event source mapping: receive, invoke, delete what the
// handler did not report as failed.
func poll(ctx context.Context, sq *sqs.Client, url, name string, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), log *slog.Logger) {
	for ctx.Err() == nil {
		// All attributes, as the event source receives them: the dead
		// letters keep the submitter's.
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) == 0 {
			continue
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, intake.Record(m))
		}
		resp, err := handle(ctx, ev)
		if err != nil {
			log.Error(name, "err", err)
			continue
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				_, _ = sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}
}

// progress prints one line per model with work, now and then.
func progress(ctx context.Context, store *dynamostore.Store, out io.Writer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		snap, err := store.Snapshot(ctx, time.Now())
		if err != nil {
			continue
		}
		waiting := map[string]int{}
		for _, q := range snap.Queues {
			waiting[q.Model] += q.Waiting
		}
		for _, m := range snap.Models {
			if m.Running+m.Starting+waiting[m.Config.Name] == 0 {
				continue
			}
			learned := ""
			if c := m.State.Limit.Conc; c > 0 {
				learned = fmt.Sprintf("  provider concurrency %.0f learned", c)
			}
			fmt.Fprintf(out, "%s  %-20s limit %4d  running %4d  starting %4d  waiting %6d%s\n",
				time.Now().Format("15:04:05"), m.Config.Name, m.State.Limit.Limit, m.Running, m.Starting, waiting[m.Config.Name], learned)
		}
	}
}
