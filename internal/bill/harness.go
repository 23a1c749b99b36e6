package bill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/results"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// phases splits the meter's usage by the pass's store calls: the Snapshot,
// the Commit (of which the model states), the launch records.
type phases struct {
	*dynamostore.Store
	meter                                          *Meter
	snapshot, commit, states, record, other, depth Usage
}

func (p *phases) reset() {
	p.meter.Take()
	p.snapshot, p.commit, p.states, p.record, p.other, p.depth = Usage{}, Usage{}, Usage{}, Usage{}, Usage{}, Usage{}
}

// metered is the pass's depth reader, its DynamoDB usage (the readings
// item's read) kept apart.
func (p *phases) metered(r scheduler.DepthReader) scheduler.DepthReader { return depthPhase{p, r} }

type depthPhase struct {
	p *phases
	r scheduler.DepthReader
}

func (d depthPhase) Depths(ctx context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	d.p.other = d.p.other.Plus(d.p.meter.Take())
	out, err := d.r.Depths(ctx, models, now)
	d.p.depth = d.p.depth.Plus(d.p.meter.Take())
	return out, err
}

func (p *phases) Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error) {
	p.other = p.other.Plus(p.meter.Take())
	s, err := p.Store.Snapshot(ctx, now)
	p.snapshot = p.snapshot.Plus(p.meter.Take())
	return s, err
}

func (p *phases) Commit(ctx context.Context, plan scheduler.Plan, read scheduler.Versions) (scheduler.Committed, error) {
	p.other = p.other.Plus(p.meter.Take())
	c, err := p.Store.Commit(ctx, plan, read)
	u := p.meter.Take()
	p.commit = p.commit.Plus(u)
	st := Usage{Requests: u.ByOp[OpModelStates], WRU: u.UnitsByOp[OpModelStates],
		ByOp: map[string]int{OpModelStates: u.ByOp[OpModelStates]}, UnitsByOp: map[string]float64{OpModelStates: u.UnitsByOp[OpModelStates]}}
	if st.Requests == 0 {
		st = Usage{}
	}
	p.states = p.states.Plus(st)
	return c, err
}

func (p *phases) RecordLaunches(ctx context.Context, now time.Time, rs []scheduler.LaunchResult) error {
	p.other = p.other.Plus(p.meter.Take())
	err := p.Store.RecordLaunches(ctx, now, rs)
	p.record = p.record.Plus(p.meter.Take())
	return err
}

// parallel runs f for 0..n-1, 8 at a time, and returns the first error.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx, i); err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// jobSpec is job j of a batch: an env of about 100 bytes, as the intake
// tests' messages.
func jobSpec(j int) job.JobSpec {
	return job.JobSpec{Key: fmt.Sprintf("task-%06d", j), Env: map[string]string{
		"TASK_ID": fmt.Sprintf("%06d", j), "SPLIT": "test", "PROMPT_SET": fmt.Sprintf("mmlu-pro-2026-%06d", j),
	}}
}

// message is a version-1 batch message of n jobs (jobSpec's).
func message(batch, model string, n int) string {
	type js struct {
		Key string            `json:"key"`
		Env map[string]string `json:"env"`
	}
	m := struct {
		Version int    `json:"version"`
		Account string `json:"account"`
		Project string `json:"project"`
		Batch   string `json:"batch"`
		Model   string `json:"model"`
		Jobs    []js   `json:"jobs"`
	}{1, "acme", "evals", batch, model, nil}
	for j := range n {
		s := jobSpec(j)
		m.Jobs = append(m.Jobs, js{s.Key, s.Env})
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// stateChange is the EventBridge event ECS sends for the fake's task at
// status: the task started a minute before now and, when stopped, exited 0.
func stateChange(task httpfake.Task, status string, now time.Time) map[string]any {
	var env []map[string]string
	for _, k := range slices.Sorted(maps.Keys(task.Env)) {
		env = append(env, map[string]string{"name": k, "value": task.Env[k]})
	}
	container := map[string]any{"name": "sandbox", "lastStatus": status}
	detail := map[string]any{
		"taskArn": task.ARN, "startedBy": task.StartedBy, "group": task.Group, "lastStatus": status,
		"version": slices.Index(lifecycle, status) + 1, "createdAt": now.Add(-2 * time.Minute),
		"containers": []any{container},
		"overrides":  map[string]any{"containerOverrides": []any{map[string]any{"name": "sandbox", "environment": env}}},
	}
	if slices.Index(lifecycle, status) >= slices.Index(lifecycle, "RUNNING") {
		detail["startedAt"] = now.Add(-time.Minute)
	}
	if status == "STOPPED" {
		container["exitCode"] = 0
		detail["stopCode"], detail["stoppedReason"], detail["stoppedAt"] = "EssentialContainerExited", "Essential container in task exited", now
	}
	return map[string]any{"version": "0", "source": "aws.ecs", "detail-type": "ECS Task State Change", "time": now, "detail": detail}
}

// passLogBytes is the runner's pass log lines of rep (JSON, as in Lambda).
func passLogBytes(rep scheduler.Report) int {
	var w countingWriter
	log := slog.New(slog.NewJSONHandler(&w, nil)).With("shard", 0)
	for i, l := range rep.Lines(scheduler.LogModelsPerLine) {
		msg := "pass"
		if i > 0 {
			msg = "pass models"
		}
		log.Info(msg, "pass", l)
	}
	return w.n
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// modelStateBytes is the billed size of model's state item.
func modelStateBytes(ctx context.Context, db dynamostore.DynamoDBAPI, t dynamostore.Tables, model string) (int, error) {
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(t.State)})
	if err != nil {
		return 0, err
	}
	for _, it := range out.Items {
		if strings.HasPrefix(text(it["pk"]), modelStatePrefix) && text(it["sk"]) == model {
			return dynamostore.ItemBytes(it), nil
		}
	}
	return 0, nil
}

func dropTables(ctx context.Context, db *dynamodb.Client, t dynamostore.Tables) {
	for _, n := range []string{t.State, t.Models, t.Pins} {
		_, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)})
	}
}

// EMFCounter reads EMF documents (one JSON object a line) and keeps the
// distinct metrics they publish: namespace, name, dimension names and values.
type EMFCounter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	metrics map[string]bool
	// perModel holds the names of the metrics with a Model dimension.
	perModel map[string]bool
	models   map[string]bool
}

// Write takes documents; a partial line waits for its end.
func (c *EMFCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	for {
		line, err := c.buf.ReadBytes('\n')
		if err != nil {
			c.buf.Write(line)
			return len(p), nil
		}
		c.take(line)
	}
}

func (c *EMFCounter) take(line []byte) {
	var doc map[string]any
	if json.Unmarshal(line, &doc) != nil {
		return
	}
	meta, _ := doc["_aws"].(map[string]any)
	dirs, _ := meta["CloudWatchMetrics"].([]any)
	if c.metrics == nil {
		c.metrics, c.perModel, c.models = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	for _, d := range dirs {
		dir, _ := d.(map[string]any)
		ns, _ := dir["Namespace"].(string)
		sets, _ := dir["Dimensions"].([]any)
		ms, _ := dir["Metrics"].([]any)
		for _, s := range sets {
			names, _ := s.([]any)
			var dims []string
			model := ""
			for _, n := range names {
				name, _ := n.(string)
				v := fmt.Sprint(doc[name])
				dims = append(dims, name+"="+v)
				if name == "Model" {
					model = v
				}
			}
			for _, m := range ms {
				mm, _ := m.(map[string]any)
				name, _ := mm["Name"].(string)
				c.metrics[ns+"|"+name+"|"+strings.Join(dims, ",")] = true
				if model != "" {
					c.perModel[name+"|"+strings.Join(dims, ",")[len("Model="+model):]] = true
					c.models[model] = true
				}
			}
		}
	}
}

// EMFCount is what the documents published.
type EMFCount struct {
	Distinct        int      // metrics (name and dimension values)
	PerModel        []string // names of the metrics published per model
	Account         int      // metrics without a Model dimension
	ModelsPublished int
}

// Count returns the distinct metrics seen.
func (c *EMFCounter) Count() EMFCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := EMFCount{Distinct: len(c.metrics), ModelsPublished: len(c.models)}
	for k := range c.perModel {
		out.PerModel = append(out.PerModel, strings.TrimSuffix(k, "|"))
	}
	slices.Sort(out.PerModel)
	for k := range c.metrics {
		if !strings.Contains(k, "Model=") {
			out.Account++
		}
	}
	return out
}

// resultsHandler is the results function's handler as measured: a refused
// result goes to dlq (kept, not sent) rather than a nil queue's panic.
func resultsHandler(store results.Recorder, dlq *deadLetters, log *slog.Logger, now func() time.Time) *results.Handler {
	return &results.Handler{Store: store, DLQ: dlq, DLQURL: "measured-dlq", Log: log, Now: now}
}

// deadLetters keeps the reasons of the messages sent to it.
type deadLetters struct {
	mu      sync.Mutex
	reasons []string
}

func (d *deadLetters) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	why := "no reason"
	if a, ok := in.MessageAttributes[intake.AttrReason]; ok {
		why = aws.ToString(a.StringValue)
	}
	d.reasons = append(d.reasons, why)
	return &sqs.SendMessageOutput{}, nil
}
