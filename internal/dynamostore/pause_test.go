package dynamostore

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/priority"
)

func pausedScopes(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, p := range snapshot(t, s).Pauses {
		out = append(out, p.Scope)
	}
	return out
}

// TestPauseIsApartFromPins: a pin's tier, its removal and its expiry leave
// a pause alone; resume lifts it and leaves no item behind.
func TestPauseIsApartFromPins(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	const scope = "project#acme/x"
	if err := s.SetPaused(ctx, scope, true, t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []priority.Pin{{Scope: scope, Tier: "0"}, {Scope: scope, Tier: "1", ExpiresAt: "1"}} {
		if err := s.PutPin(ctx, p); err != nil {
			t.Fatal(err)
		}
		if got := pausedScopes(t, s); !slices.Equal(got, []string{scope}) {
			t.Errorf("after pin %+v: paused %v, want %s", p, got, scope)
		}
	}
	if err := s.DeletePin(ctx, scope); err != nil {
		t.Fatal(err)
	}
	if got := pausedScopes(t, s); !slices.Equal(got, []string{scope}) {
		t.Errorf("after pin --delete: paused %v, want %s", got, scope)
	}
	if err := s.SetPaused(ctx, scope, false, t0); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, s)
	if len(snap.Pauses)+len(snap.Pins)+len(snap.Warnings) != 0 {
		t.Errorf("after resume: pauses %v, pins %v, warnings %q; want none", snap.Pauses, snap.Pins, snap.Warnings)
	}
}

// TestLegacyPauseOnAPinItem: a pin item an older version paused (its
// paused attribute) still pauses, with a warning; pin and pin --delete carry
// it over to a pause item; pause or resume moves it off the pin item.
func TestLegacyPauseOnAPinItem(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	legacy := func(scope, tier string) {
		it := map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}, attrPaused: &types.AttributeValueMemberBOOL{Value: true}}
		if tier != "" {
			it[attrTier] = &types.AttributeValueMemberN{Value: tier}
		}
		if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.Pins), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	legacy("account#old", "")
	legacy("project#acme/x", "1")
	snap := snapshot(t, s)
	if got := pausedScopes(t, s); !slices.Equal(got, []string{"account#old", "project#acme/x"}) {
		t.Errorf("legacy pauses: got %v", got)
	}
	if len(snap.Pins) != 1 || snap.Pins[0].Scope != "project#acme/x" || snap.Pins[0].Tier != "1" {
		t.Errorf("pins: got %+v, want the tier of project#acme/x alone (account#old only paused)", snap.Pins)
	}
	if w := strings.Join(snap.Warnings, "\n"); !strings.Contains(w, `pin item "account#old" holds a pause`) || !strings.Contains(w, "evalsched pause") {
		t.Errorf("warnings %q, want the legacy pause named with how to move it", snap.Warnings)
	}
	// pin --delete of the legacy item keeps the pause, now its own item.
	if err := s.DeletePin(ctx, "project#acme/x"); err != nil {
		t.Fatal(err)
	}
	// pause moves the other one.
	if err := s.SetPaused(ctx, "account#old", true, t0); err != nil {
		t.Fatal(err)
	}
	snap = snapshot(t, s)
	if got := pausedScopes(t, s); !slices.Equal(got, []string{"account#old", "project#acme/x"}) {
		t.Errorf("after moving: paused %v", got)
	}
	if len(snap.Pins)+len(snap.Warnings) != 0 {
		t.Errorf("after moving: pins %+v warnings %q, want none", snap.Pins, snap.Warnings)
	}
}
