package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// ScopeHelp says what a SCOPE is, for the -h of the commands that take one.
const ScopeHelp = `SCOPE is ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH, by the names the
batches were submitted with (e.g. acme, acme/search, acme/search/b17): the
scope holds every batch under it. The first two "/" separate the names, so
only a batch name may hold "/" here. Not the pin item's form: "project#A/P"
is what pin takes, not pause, resume or cancel.`

// ParseScope reads ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH and
// returns it with its pin-item form ("project#A/P"). Names may hold "/"
// themselves; the first two separators split them.
func ParseScope(arg string) (scheduler.Scope, string, error) {
	if kind, rest, ok := strings.Cut(arg, "#"); ok {
		return scheduler.Scope{}, "", fmt.Errorf("scope %q is in a pin item's form (%s#…); here a scope is ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH, e.g. %q", arg, kind, rest)
	}
	parts := strings.SplitN(arg, "/", 3)
	for _, p := range parts {
		if p == "" {
			return scheduler.Scope{}, "", fmt.Errorf("scope %q has an empty name; want ACCOUNT, ACCOUNT/PROJECT or ACCOUNT/PROJECT/BATCH", arg)
		}
	}
	var scope scheduler.Scope
	var pin string
	switch len(parts) {
	case 1:
		scope, pin = scheduler.Scope{Account: parts[0]}, "account#"+arg
	case 2:
		scope, pin = scheduler.Scope{Account: parts[0], Project: parts[1]}, "project#"+arg
	default:
		scope, pin = scheduler.Scope{Account: parts[0], Project: parts[1], Batch: parts[2]}, "batch#"+arg
	}
	if reason := priority.CheckScope(pin); reason != "" {
		return scheduler.Scope{}, "", fmt.Errorf("scope %q: %s", arg, strings.TrimPrefix(reason, "scope "))
	}
	return scope, pin, nil
}

// ScopeReader is what a scope's checks need of the store.
type ScopeReader interface {
	Batches(ctx context.Context, scope scheduler.Scope) ([]dynamostore.BatchCounts, error)
	Snapshot(ctx context.Context, now time.Time) (scheduler.Snapshot, error)
}

// HasBatches tells whether any batch lies inside the scope: one listed by
// batches, or one with waiting jobs (a batch registered before batches
// were listed has only those).
func HasBatches(ctx context.Context, st ScopeReader, scope scheduler.Scope, now time.Time) (bool, error) {
	rows, err := st.Batches(ctx, scope)
	if err != nil || len(rows) > 0 {
		return len(rows) > 0, err
	}
	snap, err := st.Snapshot(ctx, now)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(snap.Queues, func(q scheduler.Queue) bool { return scope.Matches(q.Key()) }), nil
}

// Pauser is what Pause needs of the store.
type Pauser interface {
	ScopeReader
	SetPaused(ctx context.Context, scope string, paused bool, now time.Time) error
}

// ErrNoBatches is Pause's refusal of a scope with no batch.
type ErrNoBatches struct{ Scope string }

func (e ErrNoBatches) Error() string {
	return fmt.Sprintf("%s has no batches (evalsched batches lists them); to pause it before its first batch arrives, add --allow-empty", e.Scope)
}

// Pause pauses (or, with pause false, resumes) the scope typed as arg and
// tells whether it was paused before. A pause of a scope with no batch is
// refused unless allowEmpty: it is more often a typo than a plan.
func Pause(ctx context.Context, st Pauser, arg string, pause, allowEmpty bool, now time.Time) (was bool, err error) {
	scope, key, err := ParseScope(arg)
	if err != nil {
		return false, err
	}
	snap, err := st.Snapshot(ctx, now)
	if err != nil {
		return false, err
	}
	was = slices.ContainsFunc(snap.Pauses, func(p scheduler.Pause) bool { return p.Scope == key })
	if pause && !was && !allowEmpty {
		ok, err := HasBatches(ctx, st, scope, now)
		if err != nil {
			return was, err
		}
		if !ok {
			return was, ErrNoBatches{arg}
		}
	}
	return was, st.SetPaused(ctx, key, pause, now)
}
