package dynamostore

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

type av = types.AttributeValue

func s(v string) av { return &types.AttributeValueMemberS{Value: v} }
func n(v string) av { return &types.AttributeValueMemberN{Value: v} }
func bl(v bool) av  { return &types.AttributeValueMemberBOOL{Value: v} }
func put(t testing.TB, table string, item map[string]av) {
	t.Helper()
	_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMalformedConsoleEditsWarnAndThePassGoesOn writes items as an operator
// would in the console, typos included.
func TestMalformedConsoleEditsWarnAndThePassGoesOn(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	models := []struct {
		item map[string]av
		want string // in the warning; "" = valid
	}{
		{map[string]av{"model": s("ok"), "enabled": bl(true), "min_limit": n("2"), "max_limit": n("20"), "target_depth": n("40"), "note": s("fine")}, ""},
		{map[string]av{"model": s("enabled-text"), "enabled": s("true")}, `enabled is the String "true", want a Boolean`},
		{map[string]av{"model": s("negative"), "max_limit": n("-3")}, "max_limit -3 must be an integer ≥ 1"},
		{map[string]av{"model": s("min-above-max"), "min_limit": n("50"), "max_limit": n("10")}, "min_limit 50 is above max_limit 10"},
		{map[string]av{"model": s("target-text"), "target_depth": s("forty")}, `target_depth is the String "forty", want a Number`},
		{map[string]av{"model": s("fraction"), "limit_pin": n("2.5")}, "limit_pin is the Number 2.5, want an integer"},
		{map[string]av{"model": s("typo"), "max_limt": n("10")}, `unknown attribute "max_limt"`},
	}
	for _, m := range models {
		put(t, st.tables.Models, m.item)
	}
	pins := []map[string]av{
		{"scope": s("account#acme"), "tier": n("0"), "note": s("launch week")},
		{"scope": s("project#lab/sweep"), "tier": s("urgent")},
		{"scope": s("batch#lab/sweep/b1"), "tier": s("1"), "expires_at": s("next week")},
		{"scope": s("project#acme/x"), "tier": n("1.5")},
	}
	for _, p := range pins {
		put(t, st.tables.Pins, p)
	}
	// Jobs for the valid model and for a malformed one.
	submit(t, st, batch("acme", "x", "b1", "ok", -1, 5))
	submit(t, st, batch("acme", "x", "b2", "negative", -1, 5))

	snap := snapshot(t, st)
	for _, m := range models {
		if m.want == "" {
			continue
		}
		name := m.item["model"].(*types.AttributeValueMemberS).Value
		found := false
		for _, w := range snap.Warnings {
			found = found || (strings.Contains(w, `"`+name+`"`) && strings.Contains(w, m.want))
		}
		if !found {
			t.Errorf("no warning for %s with %q in %q", name, m.want, snap.Warnings)
		}
	}
	if len(snap.Warnings) != len(models)-1 {
		t.Errorf("got %d warnings, want %d: %q", len(snap.Warnings), len(models)-1, snap.Warnings)
	}
	var names []string
	for _, m := range snap.Models {
		names = append(names, m.Config.Name)
	}
	if strings.Join(names, ",") != "ok" {
		t.Errorf("got models %v, want only the valid one (a malformed item's jobs wait)", names)
	}
	if got := snap.Pins; len(got) != 4 || got[0] != (priority.Pin{Scope: "account#acme", Tier: "0", Note: "launch week"}) ||
		got[2].Tier != "1.5" || got[3].Tier != "urgent" || got[1].ExpiresAt != "next week" {
		t.Errorf("got pins %+v, want the raw text of each, sorted by scope", got)
	}

	// The real pass: the valid model's jobs launch, the warnings are
	// reported, nothing fails.
	l := &passfake.Launcher{}
	sch := &scheduler.Scheduler{Store: st, Depths: passfake.Depths{"ok": 0}, Launcher: l, Clock: passfake.NewClock(t0), Config: scheduler.DefaultConfig()}
	rep, err := sch.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Launched != 5 {
		t.Errorf("got %d launched, want the 5 of the valid model", rep.Launched)
	}
	var pinWarnings int
	for _, w := range rep.Plan.Warnings {
		if strings.HasPrefix(w, "pin ") {
			pinWarnings++
		}
	}
	if pinWarnings != 3 {
		t.Errorf("got %d pin warnings, want 3 (urgent, 1.5, next week): %q", pinWarnings, rep.Plan.Warnings)
	}
	if !strings.Contains(strings.Join(rep.Plan.Warnings, "\n"), `model "negative" has waiting jobs but its model item is malformed (max_limit -3 must be an integer ≥ 1)`) {
		t.Errorf("got %q, want the malformed model's jobs reported waiting", rep.Plan.Warnings)
	}
	check(t, st)
}

func TestPutModelAndPinRoundTrip(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	if err := st.PutModel(ctx, scheduler.ModelConfig{Name: "gpt", MinLimit: 5, MaxLimit: 2}); err == nil {
		t.Error("PutModel took min above max")
	}
	for _, p := range []priority.Pin{
		{Scope: "account#a", Tier: "2", ExpiresAt: "1796000000", Note: "n"},
		{Scope: "project#a/p", Tier: "urgent", ExpiresAt: "2026-12-01T00:00:00Z"},
	} {
		if err := st.PutPin(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeletePin(ctx, "nope"); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, st)
	if len(snap.Pins) != 2 || snap.Pins[0] != (priority.Pin{Scope: "account#a", Tier: "2", ExpiresAt: "1796000000", Note: "n"}) ||
		snap.Pins[1].Tier != "urgent" || snap.Pins[1].ExpiresAt != "2026-12-01T00:00:00Z" {
		t.Errorf("got %+v", snap.Pins)
	}
	if err := st.DeletePin(ctx, "account#a"); err != nil {
		t.Fatal(err)
	}
	if snap := snapshot(t, st); len(snap.Pins) != 1 {
		t.Errorf("got %+v after delete, want one pin", snap.Pins)
	}
}

// TestNumbersAsStringsReadAlike: every numeric console field reads a String
// of decimal digits as that number, exactly as a pin's tier does, and
// refuses anything else in a String with a warning naming the field.
func TestNumbersAsStringsReadAlike(t *testing.T) {
	st, _ := newStore(t)
	put(t, st.tables.Models, map[string]av{"model": s("as-numbers"), "enabled": bl(true),
		"min_limit": n("2"), "max_limit": n("20"), "limit_pin": n("9"), "initial_limit": n("3"), "target_depth": n("40"), "provider_concurrency": n("250")})
	put(t, st.tables.Models, map[string]av{"model": s("as-strings"), "enabled": bl(true),
		"min_limit": s("2"), "max_limit": s("20"), "limit_pin": s("9"), "initial_limit": s("3"), "target_depth": s("40"), "provider_concurrency": s("250")})
	for field, bad := range map[string]string{"limit_pin": "9.5", "max_limit": "+20", "min_limit": " 2", "initial_limit": "three", "target_depth": "4e1", "provider_concurrency": "-250"} {
		put(t, st.tables.Models, map[string]av{"model": s("bad-" + strings.ReplaceAll(field, "_", "-")), field: s(bad)})
	}
	put(t, st.tables.Pins, map[string]av{"scope": s("account#a"), "tier": n("0")})
	put(t, st.tables.Pins, map[string]av{"scope": s("account#b"), "tier": s("0")})
	put(t, st.tables.Pins, map[string]av{"scope": s("account#c"), "tier": s("+0")})

	snap := snapshot(t, st)
	byName := map[string]scheduler.ModelConfig{}
	for _, m := range snap.Models {
		byName[m.Config.Name] = m.Config
	}
	numbers, strs := byName["as-numbers"], byName["as-strings"]
	strs.Name = numbers.Name
	if numbers.LimitPin != 9 || numbers.ProviderConcurrency != 250 || numbers != strs {
		t.Errorf("as Numbers %+v, as Strings %+v: want the same, limit_pin 9, provider_concurrency 250", byName["as-numbers"], byName["as-strings"])
	}
	for _, field := range []string{"limit_pin", "max_limit", "min_limit", "initial_limit", "target_depth", "provider_concurrency"} {
		name := "bad-" + strings.ReplaceAll(field, "_", "-")
		if _, ok := byName[name]; ok {
			t.Errorf("%s was read; want it skipped", name)
		}
		if reason := snap.Skipped[name]; !strings.HasPrefix(reason, field+" is the String") || !strings.Contains(reason, "String of decimal digits") {
			t.Errorf("%s: skipped for %q, want the field %s named and the rule", name, reason, field)
		}
	}
	pins, warns := priority.Compile(snap.Pins, 3, t0)
	if tierA, _ := pins.Tier("a", "p", "b", -1, 2); tierA != 0 {
		t.Errorf("Number tier 0 read as %d", tierA)
	}
	if tierB, _ := pins.Tier("b", "p", "b", -1, 2); tierB != 0 {
		t.Errorf("String tier \"0\" read as %d, want 0 as the Number", tierB)
	}
	if len(warns) != 1 || warns[0].Scope != "account#c" {
		t.Errorf("warnings %v, want account#c's \"+0\" alone", warns)
	}
}
