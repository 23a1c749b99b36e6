package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/scheduler"
)

type metric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string     `json:"Namespace"`
	Dimensions [][]string `json:"Dimensions"`
	Metrics    []metric   `json:"Metrics"`
}

type meta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Detail is how many metrics a model gets: each metric a model publishes is
// a CloudWatch custom metric ($0.30 a month, billed by the hour it has
// data), so at the seed's 241 busy models each per-model metric is ~$72 a
// month (evalsched cost, docs/cost.md).
type Detail string

// The details.
const (
	// Full publishes every per-model value as a metric: the pass's ten
	// and the task events' four job timings, by Model.
	Full Detail = "full"
	// Essential publishes per model only what the alarms and the
	// dashboard read by model — JobLimit, Running, Waiting, BreakerOpen
	// (the depth is the gateway's own metric: the dashboard reads it
	// there) — and the job timings without the Model dimension (one set
	// for the account). The other values stay in the same documents as
	// properties, for Logs Insights.
	Essential Detail = "essential"
	// Lean publishes no per-model metric: each busy model's values are
	// plain fields of one JSON log line (no metric declaration), read by
	// the dashboard's Logs Insights widget; the alarms and the dashboard's
	// graphs read the account's totals (Running, Waiting, Starting,
	// BreakersOpen, AdmittedTier*). At the seed's 241 busy models this is
	// $289 a month less than Essential.
	Lean Detail = "lean"
)

// essential are the per-model metrics published at Essential.
var essential = map[string]bool{"JobLimit": true, "Running": true, "Waiting": true, "BreakerOpen": true}

// WriteShard emits one EMF document for the pass, one of the totals over
// the models, and one per model with work,
// for the scheduler's shard (0 when it is not sharded: the runner writes every
// pass this way). Every document carries the property Shard; the pass metrics
// are published twice, without a dimension (the account's view: the dashboard
// and the alarms that read them are unchanged) and with the dimension Shard,
// so an alarm can tell one stalled shard from a healthy rest. The per-model
// metrics keep the dimension Model alone — a model lives in one shard, and the
// dashboard's SEARCH schema {namespace,Model} matches that dimension set
// exactly. Its per-model values are metrics as detail says.
func WriteShard(w io.Writer, namespace string, shard int, detail Detail, rep scheduler.Report) error {
	ts := rep.At.UnixMilli()
	enc := json.NewEncoder(w)
	pass := map[string]any{
		"PassDuration":  float64(rep.Duration.Milliseconds()),
		"Claimed":       rep.Claimed,
		"Launched":      rep.Launched,
		"LaunchRetried": rep.Retried,
		"LaunchFailed":  rep.Failed,
		"LaunchUnknown": rep.Unknown,
		"Warnings":      len(rep.Plan.Warnings),
	}
	d := doc(namespace, ts, [][]string{{}, {"Shard"}}, pass, map[string]string{"PassDuration": "Milliseconds"})
	d["Shard"] = strconv.Itoa(shard)
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("write pass metrics: %w", err)
	}
	// The account's totals over the models, without a dimension: what the
	// dashboard shows of the tasks starting and the admissions by tier
	// (a handful of metrics, where by model they were a few per model).
	// BreakersOpen (the models whose breaker is not closed) is what the
	// breaker alarm reads, at every detail.
	totals := map[string]any{"Starting": 0, "Running": 0, "Waiting": 0, "BreakersOpen": 0}
	for _, m := range rep.Plan.Models {
		totals["Starting"] = totals["Starting"].(int) + m.Starting
		totals["Running"] = totals["Running"].(int) + m.Running
		totals["Waiting"] = totals["Waiting"].(int) + m.Waiting
		if p := m.State.Breaker.Phase; p != "" && p != breaker.Closed {
			totals["BreakersOpen"] = totals["BreakersOpen"].(int) + 1
		}
		for tier, n := range m.ByTier {
			k := fmt.Sprintf("AdmittedTier%d", tier)
			v, _ := totals[k].(int)
			totals[k] = v + n
		}
	}
	d = doc(namespace, ts, [][]string{{}}, totals, nil)
	d["Shard"] = strconv.Itoa(shard)
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("write the models' totals: %w", err)
	}
	for _, m := range rep.Plan.Models {
		if m.Running+m.Starting+m.Waiting == 0 {
			continue
		}
		open := 0
		if p := m.State.Breaker.Phase; p != "" && p != breaker.Closed {
			open = 1
		}
		vals := map[string]any{
			"JobLimit": m.State.Limit.Limit, "Running": m.Running, "Starting": m.Starting,
			"Waiting": m.Waiting, "Admitted": m.Admitted, "BreakerOpen": open,
		}
		if !m.Depth.At.IsZero() {
			vals["GatewayDepth"] = m.Depth.Value
		}
		for tier, n := range m.ByTier {
			vals[fmt.Sprintf("AdmittedTier%d", tier)] = n
		}
		if detail == Lean {
			// A log line, not a metric document: the same fields, no _aws.
			vals["Model"], vals["LimitReason"], vals["Shard"] = m.Model, m.Limit.Reason, strconv.Itoa(shard)
			if err := enc.Encode(vals); err != nil {
				return fmt.Errorf("write the values of %s: %w", m.Model, err)
			}
			continue
		}
		var props map[string]any
		if detail == Essential {
			props = map[string]any{}
			for k, v := range vals {
				if !essential[k] {
					props[k] = v
					delete(vals, k)
				}
			}
		}
		d := doc(namespace, ts, [][]string{{"Model"}}, vals, nil)
		maps.Copy(d, props) // in the document, not metrics
		d["Model"] = m.Model
		d["LimitReason"] = m.Limit.Reason // a property, not a metric: searchable in Logs Insights
		d["Shard"] = strconv.Itoa(shard)  // a property: which scheduler steers the model
		if err := enc.Encode(d); err != nil {
			return fmt.Errorf("write metrics of %s: %w", m.Model, err)
		}
	}
	return nil
}

// doc is one EMF document of the values under the dimension sets (each
// set publishes every metric once more; {} is the set without a dimension).
func doc(namespace string, ts int64, dimSets [][]string, vals map[string]any, units map[string]string) map[string]any {
	d := map[string]any{}
	var ms []metric
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		unit := units[name]
		if unit == "" {
			unit = "Count"
		}
		ms = append(ms, metric{Name: name, Unit: unit})
		d[name] = vals[name]
	}
	d["_aws"] = meta{Timestamp: ts, CloudWatchMetrics: []directive{{Namespace: namespace, Dimensions: dimSets, Metrics: ms}}}
	return d
}

// WriteValues emits one EMF document of the given values at time at, with
// the dimensions (nil: none) and properties (in the document, not
// dimensions: nil for none); values named *Seconds have unit Seconds,
// *Share None, the rest Count. The task-events function writes per-job
// timings with it, the intake its counts.
func WriteValues(w io.Writer, namespace string, at time.Time, dims, props map[string]string, vals map[string]float64) error {
	names := slices.Sorted(maps.Keys(dims))
	anyVals := make(map[string]any, len(vals))
	units := map[string]string{}
	for k, v := range vals {
		anyVals[k] = v
		switch {
		case strings.HasSuffix(k, "Seconds"):
			units[k] = "Seconds"
		case strings.HasSuffix(k, "Share"):
			units[k] = "None"
		default:
			units[k] = "Count"
		}
	}
	if names == nil {
		names = []string{} // the set without a dimension: [], not null
	}
	d := doc(namespace, at.UnixMilli(), [][]string{names}, anyVals, units)
	for k, v := range props {
		d[k] = v
	}
	for k, v := range dims {
		d[k] = v
	}
	return json.NewEncoder(w).Encode(d)
}
