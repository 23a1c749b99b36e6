package status

import (
	"context"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// BatchRow is one batch's jobs of one model by state.
type BatchRow struct {
	Batch      string `json:"batch"` // ACCOUNT/PROJECT/BATCH
	Model      string `json:"model"`
	State      string `json:"state"` // waiting, running (none waits), finished (every job ended)
	Registered int    `json:"registered"`
	Waiting    int    `json:"waiting"`
	Starting   int    `json:"starting"` // claimed or launched, not yet running
	Running    int    `json:"running"`
	Succeeded  int    `json:"succeeded"`
	Failed     int    `json:"failed"`
	Cancelled  int    `json:"cancelled"`
	Skipped    int    `json:"skipped,omitempty"` // a sampled batch's rest, once its estimate was good enough
	// ProviderRetries: attempts the provider failed (exit 75) that sent a
	// job back to waiting; not in any state's count.
	ProviderRetries int `json:"provider_retries,omitempty"`
	// SubmittedTier is the tier the batch was sent with (< 0: none), for
	// status --all's tier of a batch none of whose jobs wait.
	SubmittedTier int `json:"-"`
	// PartsArrived of PartsExpected for a batch sent in several messages;
	// both 0 for a batch of one message.
	PartsArrived  int `json:"parts_arrived"`
	PartsExpected int `json:"parts_expected"`
}

func RowOf(c dynamostore.BatchCounts) BatchRow {
	r := BatchRow{
		Batch: c.Account + "/" + c.Project + "/" + c.Batch, Model: c.Model,
		Registered: c.Registered, Waiting: c.Waiting, Starting: c.Starting, Running: c.Running,
		Succeeded: c.Succeeded, Failed: c.Failed, Cancelled: c.Cancelled, Skipped: c.Skipped,
		ProviderRetries: c.ProviderRetries, PartsArrived: c.PartsSeen, PartsExpected: c.Parts, SubmittedTier: c.Tier,
	}
	switch {
	case c.Waiting > 0:
		r.State = "waiting"
	case c.Starting+c.Running > 0 || c.PartsSeen < c.Parts:
		r.State = "running"
	default:
		r.State = "finished"
	}
	return r
}

// batchLister is what batches and why need of the store.
type batchLister interface {
	Batches(ctx context.Context, scope scheduler.Scope) ([]dynamostore.BatchCounts, error)
}

func ListBatches(ctx context.Context, st batchLister, scope scheduler.Scope) ([]BatchRow, error) {
	counts, err := st.Batches(ctx, scope)
	if err != nil {
		return nil, err
	}
	rows := make([]BatchRow, len(counts))
	for i, c := range counts {
		rows[i] = RowOf(c)
	}
	return rows, nil
}
