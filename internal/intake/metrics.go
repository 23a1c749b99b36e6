package intake

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Counts is what one invocation did, written as one EMF document (as
// internal/emf does for a pass): CloudWatch metrics from a log line, no
// PutMetricData call. Every count is written, zeros too, so an alarm on
// IntakeRejected > 0 has data in quiet periods.
type Counts struct {
	Messages  int `json:"IntakeMessages"`  // records delivered
	Jobs      int `json:"IntakeJobs"`      // jobs created (a redelivery creates none)
	Rejected  int `json:"IntakeRejected"`  // messages dead-lettered as invalid
	Conflicts int `json:"IntakeConflicts"` // messages with jobs conflicting with stored ones
	Retried   int `json:"IntakeRetried"`   // records reported for redelivery
	Parts     int `json:"IntakeParts"`     // parts of multi-part batches stored
}

// metricNames lists the Counts' metrics, sorted as internal/emf sorts them.
var metricNames = []string{"IntakeConflicts", "IntakeJobs", "IntakeMessages", "IntakeParts", "IntakeRejected", "IntakeRetried"}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// write emits the EMF document, without dimensions.
func (c Counts) write(w io.Writer, namespace string, at time.Time) error {
	d := emfDirective{Namespace: namespace, Dimensions: [][]string{{}}}
	for _, n := range metricNames {
		d.Metrics = append(d.Metrics, emfMetric{Name: n, Unit: "Count"})
	}
	doc := struct {
		AWS emfMeta `json:"_aws"`
		Counts
	}{emfMeta{Timestamp: at.UnixMilli(), CloudWatchMetrics: []emfDirective{d}}, c}
	if err := json.NewEncoder(w).Encode(doc); err != nil {
		return fmt.Errorf("write intake metrics: %w", err)
	}
	return nil
}
