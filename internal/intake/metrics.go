package intake

import (
	"fmt"
	"io"
	"time"

	"github.com/evalsched/evalsched/internal/emf"
)

// Counts is what one invocation did, written as one EMF document (as
// internal/emf does for a pass): CloudWatch metrics from a log line, no
// PutMetricData call. Every count is written, zeros too, so an alarm on
// IntakeRejected > 0 has data in quiet periods.
type Counts struct {
	Messages  int `json:"IntakeMessages"`  // records delivered
	Jobs      int `json:"IntakeJobs"`      // jobs created (a redelivery creates none)
	Rejected  int `json:"IntakeRejected"`  // messages dead-lettered as invalid
	Conflicts int `json:"IntakeConflicts"` // messages conflicting with their stored batch, dead-lettered
	Retried   int `json:"IntakeRetried"`   // records reported for redelivery
	Parts     int `json:"IntakeParts"`     // parts of multi-part batches stored
}

// write emits the EMF document, without dimensions.
func (c Counts) write(w io.Writer, namespace string, at time.Time) error {
	vals := map[string]float64{
		"IntakeMessages": float64(c.Messages), "IntakeJobs": float64(c.Jobs), "IntakeRejected": float64(c.Rejected),
		"IntakeConflicts": float64(c.Conflicts), "IntakeRetried": float64(c.Retried), "IntakeParts": float64(c.Parts),
	}
	if err := emf.WriteValues(w, namespace, at, nil, nil, vals); err != nil {
		return fmt.Errorf("write intake metrics: %w", err)
	}
	return nil
}
