package bill

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/depthbridge"
)

// Item is one line of the bill.
type Item struct {
	Service    string  `json:"service"`
	What       string  `json:"what"`
	USD        float64 `json:"per_month_usd"`
	Arithmetic string  `json:"arithmetic"`
	// timed: the line depends on measured time (Lambda durations, the
	// bytes of logged durations) and varies from run to run.
	timed bool
}

// Bill is a month's bill for a load.
type Bill struct {
	Total float64 `json:"total_usd_month"`
	Items []Item  `json:"items"`
}

// Bridge is the gateway depth bridge's publishing (internal/depthbridge,
// at its defaults), and its one Fargate task. With Readings, one write of
// the readings item every PublishEvery (Measured.ReadingsPut). Otherwise
// every model it has seen, Metrics high-resolution CloudWatch datapoints
// a second (depth, in service, and errors and calls when the error rate
// is on; zeros for idle models), sent every PublishEvery in PutMetricData
// calls of up to depthbridge.MaxDatums.
type Bridge struct {
	Readings bool
	Metrics  int // per model, without Readings
}

// lambda platform lines (START, END, REPORT) of one invocation, assumed.
const platformLogBytes = 350

// sqsPollers is the long-polling receives a Lambda SQS event source makes
// on an idle queue: 5 pollers, each a 20-s receive (assumed from AWS's
// documented 5 initial pollers), per minute.
const sqsPollsPerMinute = 5 * 3

// Compute multiplies the measured counts by the load and the prices.
func Compute(load Load, ms Measured, dep Deployment, br Bridge) Bill {
	var b Bill
	passes, jobs := load.PassesPerMonth(), load.JobsPerMonth()
	minutes := month.Minutes()
	messages := math.Ceil(jobs / float64(load.JobsPerMessage))
	k := float64(ms.Claimed)
	add := func(service, what string, usd float64, format string, args ...any) {
		b.Items = append(b.Items, Item{Service: service, What: what, USD: math.Round(usd*100) / 100, Arithmetic: fmt.Sprintf(format, args...)})
	}
	timed := func() { b.Items[len(b.Items)-1].timed = true }
	rru, wru := DynamoRead.USD/1e6, DynamoWrite.USD/1e6

	// DynamoDB.
	snap := ms.SnapshotFixed + ms.SnapshotPerBatch*float64(load.ActiveBatches)
	add("DynamoDB", "pass: Snapshot reads", snap*passes*rru,
		"(%.1f RRU + %.4f RRU × %d active batches) × %s passes × $%.3f/M", ms.SnapshotFixed, ms.SnapshotPerBatch, load.ActiveBatches, num(passes), DynamoRead.USD)
	states := ms.PassFixed.UnitsByOp[OpModelStates]
	add("DynamoDB", "pass: model-state writes", states*passes*wru,
		"%.0f WRU a pass (%d single writes; item %d B) × %s passes × $%.3f/M", states, ms.PassFixed.ByOp[OpModelStates], ms.ModelStateItemBytes, num(passes), DynamoWrite.USD)
	if ms.DepthRead.Requests > 0 {
		add("DynamoDB", "pass: the bridge's readings item (eventually consistent)", ms.DepthRead.RRU*passes*rru,
			"%.1f RRU (%d Query) a pass × %s passes × $%.3f/M", ms.DepthRead.RRU, ms.DepthRead.Requests, num(passes), DynamoRead.USD)
	}
	// The Snapshot counts each model's starting and running jobs in the
	// inflight index, the reconciler's read: priced per entry as the
	// reconciler's is.
	inflight := load.InFlight()
	perEntry := ms.Reconcile.RRU / float64(max(1, ms.ReconcileInFlight))
	add("DynamoDB", "pass: the inflight index (each model's starting and running jobs)", perEntry*inflight*passes*rru,
		"%.3f RRU × %s jobs in flight × %s passes × $%.3f/M", perEntry, num(inflight), num(passes), DynamoRead.USD)
	otherR := ms.PassFixed.RRU - ms.DepthRead.RRU - ms.SnapshotAt[1].Use.RRU - perEntry*float64(ms.PassInFlight)
	if otherR > 0.01 {
		add("DynamoDB", "pass: reads beyond the fitted Snapshot (the states written since)", otherR*passes*rru, "%.1f RRU a pass × %s passes × $%.3f/M", otherR, num(passes), DynamoRead.USD)
	}
	add("DynamoDB", "scheduler lease", minutes*(ms.Lease.WRU*wru+ms.Lease.RRU*rru),
		"%s invocations × (%.0f WRU + %.0f RRU: %d requests an invocation)", num(minutes), ms.Lease.WRU, ms.Lease.RRU, ms.Lease.Requests)
	perJob := func(u Usage, n float64) (float64, float64) { return u.WRU / n, u.RRU / n }
	sw, sr := perJob(ms.Submit, float64(load.JobsPerMessage))
	cw, cr := perJob(ms.Claim.Plus(ms.Record), k)
	n := float64(ms.JobsMeasured)
	ew, er := perJob(ms.Events, n)
	rw, rr := perJob(ms.Result, n)
	jw, jr := sw+cw+ew+rw, sr+cr+er+rr
	add("DynamoDB", "jobs: submit, claim and launch record, task events, result", jobs*(jw*wru+jr*rru),
		"%s jobs × (%.2f WRU [submit %.2f, claim+record %.2f, events %.2f, result %.2f] × $%.3f/M + %.2f RRU × $%.3f/M)",
		num(jobs), jw, sw, cw, ew, rw, DynamoWrite.USD, jr, DynamoRead.USD)
	add("DynamoDB", "reconciler: the in-flight index once a minute", perEntry*inflight*minutes*rru,
		"%.3f RRU × %s jobs in flight × %s runs × $%.3f/M", perEntry, num(inflight), num(minutes), DynamoRead.USD)
	const jobBytes, retentionDays = 510, 90
	gb := (float64(load.Waiting) + jobs*retentionDays/30) * jobBytes / 1e9
	add("DynamoDB", "storage with PITR", gb*(DynamoStorage.USD+DynamoPITR.USD),
		"(%s waiting + %s ended in %d days) × %d B = %.1f GB × ($%.2f + $%.2f PITR)", num(float64(load.Waiting)), num(jobs*retentionDays/30), retentionDays, jobBytes, gb, DynamoStorage.USD, DynamoPITR.USD)

	// Lambda.
	gbs := func(mb int, sec float64) float64 { return float64(mb) / 1024 * sec }
	add("Lambda", "scheduler: always on", gbs(dep.SchedulerMB, 60)*minutes*LambdaGBs.USD+minutes*LambdaRequests.USD/1e6,
		"%d MB × 60 s × %s invocations = %s GB-s × $%.10f + requests", dep.SchedulerMB, num(minutes), num(gbs(dep.SchedulerMB, 60)*minutes), LambdaGBs.USD)
	evInv := float64(ms.EventInvocations) * jobs
	evMs := math.Ceil(ms.EventMillis)
	add("Lambda", "task events", evInv*(gbs(dep.TaskEventsMB, evMs/1000)*LambdaGBs.USD+LambdaRequests.USD/1e6),
		"%d events a job × %s jobs = %s invocations × (%d MB × %.0f ms measured + $%.2f/M requests)", ms.EventInvocations, num(jobs), num(evInv), dep.TaskEventsMB, evMs, LambdaRequests.USD)
	timed()
	resInv := jobs / 10
	add("Lambda", "results", resInv*(gbs(dep.ResultsMB, 10*ms.ResultMillis/1000)*LambdaGBs.USD+LambdaRequests.USD/1e6),
		"%s jobs in invocations of 10 × (%d MB × 10 × %.1f ms measured + requests)", num(jobs), dep.ResultsMB, ms.ResultMillis)
	timed()
	add("Lambda", "intake", messages*(gbs(dep.IntakeMB, ms.SubmitMillis/1000)*LambdaGBs.USD+LambdaRequests.USD/1e6),
		"%s messages of %d jobs × (%d MB × %.2f s measured + requests)", num(messages), load.JobsPerMessage, dep.IntakeMB, ms.SubmitMillis/1000)
	timed()

	// SQS.
	chunks := math.Ceil(float64(ms.MessageBytes) / 65536)
	sqsReq := messages*(2*chunks+1) + jobs*1.2 + 2*sqsPollsPerMinute*minutes
	add("SQS", "intake and results queues", math.Max(0, sqsReq-1e6)*SQSRequests.USD/1e6,
		"%s messages × (2 × %.0f 64-KB chunks + 1 delete) + %s results × 1.2 (send; receive and delete in 10s) + 2 queues × %d idle polls × %s min = %s requests − 1 M free",
		num(messages), chunks, num(jobs), sqsPollsPerMinute, num(minutes), num(sqsReq))

	// CloudWatch.
	perModel, account := len(ms.EMF.PerModel), ms.EMF.Account
	metrics := perModel*load.ActiveModels + account + dep.MetricFilters
	add("CloudWatch", "custom metrics (EMF, log metric filters)", float64(metrics)*CWMetric.USD,
		"(%d a model [%s] × %d active models + %d others + %d from metric filters) = %d metrics × $%.2f",
		perModel, strings.Join(ms.EMF.PerModel, ", "), load.ActiveModels, account, dep.MetricFilters, metrics, CWMetric.USD)
	if ms.MetricQueries > 0 {
		q := float64(ms.MetricQueries) * float64(load.ActiveModels) / float64(max(1, ms.BusyModels))
		add("CloudWatch", "GetMetricData (gateway depth)", q*passes*CWGetMetricData.USD/1000,
			"%.0f queries a pass (%d models with work, %d calls) × %s passes × $%.2f/1,000", q, ms.BusyModels, ms.MetricCalls, num(passes), CWGetMetricData.USD)
	}
	logBytes := float64(ms.PassLogBytes)*passes + float64(ms.EventLogBytes+ms.ResultLogBytes)*jobs +
		float64(ms.SubmitLogBytes)*messages + platformLogBytes*(minutes+evInv+resInv+messages)
	add("CloudWatch", "logs ingested", logBytes/1e9*CWLogsIngest.USD,
		"(%s B a pass × %s passes + %d B a job [events %d, result %d] × %s jobs + %d B a message + %d B a Lambda invocation) = %.1f GB × $%.2f",
		num(float64(ms.PassLogBytes)), num(passes), ms.EventLogBytes+ms.ResultLogBytes, ms.EventLogBytes, ms.ResultLogBytes, num(jobs), ms.SubmitLogBytes, platformLogBytes, logBytes/1e9, CWLogsIngest.USD)
	timed()
	add("CloudWatch", "alarms and dashboard", float64(dep.Alarms)*CWAlarm.USD+float64(dep.Dashboards)*CWDashboard.USD,
		"%d alarms × $%.2f + %d dashboard × $%.2f", dep.Alarms, CWAlarm.USD, dep.Dashboards, CWDashboard.USD)
	bc := depthbridge.Config{}.WithDefaults()
	every, iv := time.Duration(bc.PublishEvery), time.Duration(bc.Interval)
	if br.Readings {
		writes := float64(month / every)
		add("DynamoDB", "gateway depth bridge: the readings item", ms.ReadingsPut.WRU*writes*wru,
			"%.0f WRU (%d PutItem, %d models) every %v × %s × $%.3f/M", ms.ReadingsPut.WRU, ms.ReadingsPut.Requests, load.Models, every, num(writes), DynamoWrite.USD)
	}
	if br.Metrics > 0 {
		perPublish := math.Ceil(float64(every/iv) * float64(load.Models*br.Metrics) / depthbridge.MaxDatums)
		reqs := perPublish * float64(month/every)
		add("CloudWatch", "gateway depth bridge: PutMetricData", reqs*CWPutMetricData.USD/1000,
			"ceil(%d s × %d models × %d metrics / %d datapoints a call) = %.0f calls every %v × %s = %s calls × $%.2f/1,000",
			int(every/iv), load.Models, br.Metrics, depthbridge.MaxDatums, perPublish, every, num(float64(month/every)), num(reqs), CWPutMetricData.USD)
		datums := br.Metrics * load.Models
		add("CloudWatch", "gateway depth bridge: its custom metrics", float64(datums)*CWMetric.USD,
			"%d models × %d metrics = %d metrics × $%.2f", load.Models, br.Metrics, datums, CWMetric.USD)
	}
	if (br.Readings || br.Metrics > 0) && dep.BridgeVCPU > 0 {
		hours := month.Hours()
		add("ECS", "gateway depth bridge: its Fargate task (ARM64)", hours*(dep.BridgeVCPU*FargateVCPU.USD+dep.BridgeGB*FargateGB.USD),
			"%.0f h × (%.2f vCPU × $%.5f + %.2f GB × $%.5f)", hours, dep.BridgeVCPU, FargateVCPU.USD, dep.BridgeGB, FargateGB.USD)
	}
	for _, it := range b.Items {
		b.Total += it.USD
	}
	b.Total = math.Round(b.Total*100) / 100
	return b
}

// num writes n with thousands separators, or in millions past ten million.
func num(n float64) string {
	if math.Abs(n) >= 1e7 {
		return fmt.Sprintf("%.1f M", n/1e6)
	}
	s := fmt.Sprintf("%.0f", n)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// WriteMarkdown writes the bill as a table, then the prices.
func (b Bill) WriteMarkdown(w io.Writer, load Load) {
	fmt.Fprintf(w, "Load: %s jobs a week (%s a month), %d models of which %d active, a pass every %v (%s a month), %d active batches, %s waiting, jobs of %v (%s in flight), messages of %d jobs.\n\n",
		num(load.JobsPerWeek), num(load.JobsPerMonth()), load.Models, load.ActiveModels, load.PassInterval, num(load.PassesPerMonth()),
		load.ActiveBatches, num(float64(load.Waiting)), load.JobLength, num(load.InFlight()), load.JobsPerMessage)
	fmt.Fprintln(w, "| service | what | a month | arithmetic |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	for _, it := range b.Items {
		fmt.Fprintf(w, "| %s | %s | $%.2f | %s |\n", it.Service, it.What, it.USD, it.Arithmetic)
	}
	fmt.Fprintf(w, "| **total** | | **$%.2f** | |\n\n", b.Total)
	fmt.Fprintln(w, "| price | us-east-1, on demand | source | read |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, p := range Prices() {
		fmt.Fprintf(w, "| %s | $%g per %s | %s | %s |\n", p.Name, p.USD, p.Per, p.Source, p.Date)
	}
}

// Options are the configuration choices a bill is for.
type Options struct {
	InService, ErrorRate bool // the gateway metrics the pass reads besides the depth
	Bridge               bool // count the gateway depth bridge's publishing
	// CloudWatchDepth: the pass reads GetMetricData (GatewayDepthSource
	// cloudwatch), the bridge, if counted, publishing metrics; otherwise
	// it reads the bridge's readings item (the default with the bridge).
	CloudWatchDepth bool
}

// Recommended is the configuration the operator guide recommends: the
// in-service and error-rate metrics read, written by the bridge to its
// readings item.
var Recommended = Options{InService: true, ErrorRate: true, Bridge: true}

// Run measures the code at load under the deployment against the DynamoDB
// at endpoint and returns the month's bill.
func Run(ctx context.Context, endpoint string, load Load, dep Deployment, o Options) (Bill, Measured, error) {
	readings := o.Bridge && !o.CloudWatchDepth
	ms, err := Measure(ctx, endpoint, load, Setup{
		ModelMetrics: dep.ModelMetrics, InService: o.InService, ErrorRate: o.ErrorRate, TaskStatuses: dep.TaskStatuses,
		Readings: readings,
	})
	if err != nil {
		return Bill{}, ms, err
	}
	br := Bridge{Readings: readings}
	if o.Bridge && !readings {
		br.Metrics = 1
		if o.InService {
			br.Metrics++
		}
		if o.ErrorRate {
			br.Metrics += 2
		}
	}
	return Compute(load, ms, dep, br), ms, nil
}
