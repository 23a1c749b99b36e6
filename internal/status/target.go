package status

import (
	"context"
	"errors"
	"slices"
	"strings"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/operator"
)

// ErrNotATarget is why's target that is neither a job id nor a scope with a
// batch.
var ErrNotATarget = errors.New("not ACCOUNT/PROJECT/BATCH[/KEY]")

// JobOfTarget is the job id that why's target names: the target itself
// when it is a job id, the job of ACCOUNT/PROJECT/BATCH/KEY, or "" when
// the target names a batch.
func JobOfTarget(ctx context.Context, st batchLister, target string) (string, error) {
	if isJobID(target) {
		return target, nil
	}
	scope, _, err := operator.ParseScope(target)
	if err != nil || scope.Batch == "" {
		return "", ErrNotATarget
	}
	rows, err := ListBatches(ctx, st, scope)
	if err != nil {
		return "", err
	}
	if slices.ContainsFunc(rows, func(r BatchRow) bool { return r.Batch == target }) {
		return "", nil
	}
	// Not a batch: ACCOUNT/PROJECT/BATCH/KEY, the last name a job's key.
	if i := strings.LastIndex(target, "/"); strings.Count(target, "/") >= 3 {
		b, _, _ := operator.ParseScope(target[:i])
		return domain.JobID(b.Account, b.Project, b.Batch, target[i+1:]), nil
	}
	return "", nil
}

// isJobID tells a job id (32 lowercase hex characters) from a batch.
func isJobID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
