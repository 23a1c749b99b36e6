package priority

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// pin builds a valid pin for scope at tier; tests override what they probe.
func pin(scope, tier string) Pin { return Pin{Scope: scope, Tier: tier} }

func TestCompileSkips(t *testing.T) {
	tests := []struct {
		name   string
		pin    Pin
		reason string
	}{
		{"missing tier", pin("account#acme", ""), "tier is missing"},
		{"fractional tier", pin("account#acme", "1.5"), `tier "1.5" is not an integer 0..2`},
		{"word tier", pin("project#acme/x", "urgent"), `tier "urgent" is not an integer 0..2`},
		{"negative tier", pin("account#acme", "-1"), `tier "-1" is not an integer 0..2`},
		{"tier above range", pin("account#acme", "3"), `tier "3" is not an integer 0..2`},
		{"tier with space", pin("account#acme", " 1"), `tier " 1" is not an integer 0..2`},
		{"tier with plus sign", pin("account#acme", "+1"), `tier "+1" is not an integer 0..2`}, // decimal digits only, as in every numeric console field
		{"no kind", pin("acme", "1"), `scope has no kind; want "account#A", "project#A/P" or "batch#A/P/B"`},
		{"unknown kind", pin("team#acme", "1"), `scope kind "team" is not account, project or batch`},
		{"kind in wrong case", pin("Account#acme", "1"), `scope kind "Account" is not account, project or batch`},
		{"no names", pin("batch#", "1"), `scope has no names after "batch#"`},
		{"space in name", pin("account#ac me", "1"), `scope has character ' ' outside A-Z a-z 0-9 . _ : / -`},
		{"second hash", pin("account#a#b", "1"), `scope has character '#' outside A-Z a-z 0-9 . _ : / -`},
		{"non-ascii", pin("account#acmé", "1"), `scope has character 'é' outside A-Z a-z 0-9 . _ : / -`},
		{"leading slash", pin("project#/x", "1"), `scope has an empty name (leading, trailing or double "/")`},
		{"trailing slash", pin("account#acme/", "1"), `scope has an empty name (leading, trailing or double "/")`},
		{"double slash", pin("batch#acme//b", "1"), `scope has an empty name (leading, trailing or double "/")`},
		{"project without project", pin("project#acme", "1"), `project scope needs 2 names separated by "/"`},
		{"batch with two names", pin("batch#acme/x", "1"), `batch scope needs 3 names separated by "/"`},
		{"account too long", pin("account#"+strings.Repeat("a", 129), "1"), "scope is longer than 1 names of at most 128 characters"},
		{"bad expires_at", Pin{Scope: "account#acme", Tier: "1", ExpiresAt: "tomorrow"}, `expires_at "tomorrow" is neither unix seconds nor RFC 3339`},
		{"expires_at without zone", Pin{Scope: "account#acme", Tier: "1", ExpiresAt: "2027-01-01T00:00:00"}, `expires_at "2027-01-01T00:00:00" is neither unix seconds nor RFC 3339`},
		{"expired at now, epoch", Pin{Scope: "account#acme", Tier: "1", ExpiresAt: "1795946400"}, "expired at 2026-11-29T10:00:00Z"},
		{"expired at now, RFC 3339", Pin{Scope: "account#acme", Tier: "1", ExpiresAt: "2026-11-29T11:00:00+01:00"}, "expired at 2026-11-29T10:00:00Z"},
		{"expired long ago", Pin{Scope: "account#acme", Tier: "1", ExpiresAt: "0"}, "expired at 1970-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, warnings := Compile([]Pin{tt.pin}, 3, now)
			if table.Len() != 0 {
				t.Errorf("Len() = %d, want 0", table.Len())
			}
			want := Warning{Scope: tt.pin.Scope, Reason: tt.reason}
			if len(warnings) != 1 || warnings[0] != want {
				t.Errorf("warnings = %q, want [%q]", warnings, want)
			}
		})
	}
}

func TestCompileKeeps(t *testing.T) {
	tests := []struct {
		name string
		pin  Pin
	}{
		{"account", pin("account#acme", "0")},
		{"project", pin("project#acme/x", "2")},
		{"batch", pin("batch#acme/x/b-1", "1")},
		{"every allowed character", pin("account#AZaz09._:-", "1")},
		{"names with slashes", pin("batch#acme/team/x/2026/b", "1")},
		{"longest account", pin("account#"+strings.Repeat("a", 128), "1")},
		{"tier with a leading zero", pin("account#acme", "01")},
		{"expires a second after now", Pin{Scope: "account#acme", Tier: "1", ExpiresAt: "1795946401"}},
		{"expires later, RFC 3339", Pin{Scope: "account#acme", Tier: "1", ExpiresAt: "2026-11-29T10:00:01Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, warnings := Compile([]Pin{tt.pin}, 3, now)
			if table.Len() != 1 || len(warnings) != 0 {
				t.Errorf("Len() = %d, warnings = %q; want 1 pin, no warnings", table.Len(), warnings)
			}
		})
	}
}

func TestCompileNoTiers(t *testing.T) {
	table, warnings := Compile([]Pin{pin("account#acme", "0")}, 0, now)
	want := Warning{Scope: "account#acme", Reason: `tier "0" cannot apply: no tiers are configured`}
	if table.Len() != 0 || len(warnings) != 1 || warnings[0] != want {
		t.Errorf("Len() = %d, warnings = %q; want 0 pins, [%q]", table.Len(), warnings, want)
	}
}

func TestCompileDuplicates(t *testing.T) {
	pins := []Pin{
		pin("account#acme", "urgent"), // invalid: does not claim the scope
		pin("account#acme", "2"),      // first valid: wins
		pin("project#acme/x", "1"),
		pin("account#acme", "0"),                           // later duplicate
		{Scope: "account#acme", Tier: "1", ExpiresAt: "1"}, // invalid for its own reason
	}
	table, warnings := Compile(pins, 3, now)
	want := []Warning{
		{"account#acme", `tier "urgent" is not an integer 0..2`},
		{"account#acme", "duplicate scope: an earlier pin (tier 2) wins"},
		{"account#acme", "expired at 1970-01-01T00:00:01Z"},
	}
	if len(warnings) != len(want) {
		t.Fatalf("warnings = %q, want %q", warnings, want)
	}
	for i := range want {
		if warnings[i] != want[i] {
			t.Errorf("warnings[%d] = %q, want %q", i, warnings[i], want[i])
		}
	}
	if table.Len() != 2 {
		t.Errorf("Len() = %d, want 2", table.Len())
	}
	if got, src := table.Tier("acme", "y", "b", -1, 1); got != 2 || src != SourceAccountPin {
		t.Errorf("Tier = %d, %s; want 2, %s", got, src, SourceAccountPin)
	}
}

func TestTier(t *testing.T) {
	table, warnings := Compile([]Pin{
		pin("account#acme", "2"),
		pin("project#acme/x", "1"),
		pin("batch#acme/x/b1", "0"),
		pin("project#team/a/b", "0"), // account "team/a", project "b" — or account "team", project "a/b"
	}, 3, now)
	if len(warnings) != 0 {
		t.Fatalf("warnings = %q, want none", warnings)
	}
	tests := []struct {
		name                    string
		account, project, batch string
		submitted, def          int
		want                    int
		source                  Source
	}{
		{"batch pin beats project pin", "acme", "x", "b1", 2, 1, 0, SourceBatchPin},
		{"project pin beats account pin", "acme", "x", "b2", 2, 1, 1, SourceProjectPin},
		{"account pin beats submitted", "acme", "y", "b1", 0, 1, 2, SourceAccountPin},
		{"submitted beats default", "other", "x", "b1", 0, 1, 0, SourceSubmitted},
		{"default when nothing submitted", "other", "x", "b1", -1, 1, 1, SourceDefault},
		{"submitted above range is clamped", "other", "x", "b1", 7, 1, 2, SourceSubmitted},
		{"submitted at top of range", "other", "x", "b1", 2, 0, 2, SourceSubmitted},
		{"slash in account name", "team/a", "b", "b1", -1, 2, 0, SourceProjectPin},
		{"slash in project name", "team", "a/b", "b1", -1, 2, 0, SourceProjectPin},
		{"batch pin does not leak to sibling", "acme", "x", "b10", -1, 2, 1, SourceProjectPin},
		{"account pin does not match prefix", "acm", "x", "b1", -1, 2, 2, SourceDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, source := table.Tier(tt.account, tt.project, tt.batch, tt.submitted, tt.def)
			if got != tt.want || source != tt.source {
				t.Errorf("Tier(%q, %q, %q, %d, %d) = %d, %q; want %d, %q",
					tt.account, tt.project, tt.batch, tt.submitted, tt.def, got, source, tt.want, tt.source)
			}
		})
	}
}

func TestZeroTable(t *testing.T) {
	var table Table
	if got, source := table.Tier("acme", "x", "b", 1, 0); got != 0 || source != SourceDefault {
		t.Errorf("Tier = %d, %q; want 0, %q", got, source, SourceDefault)
	}
	if table.Len() != 0 {
		t.Errorf("Len() = %d, want 0", table.Len())
	}
}

func TestWarningString(t *testing.T) {
	w := Warning{Scope: "project#acme/x", Reason: `tier "urgent" is not an integer 0..2`}
	want := `pin "project#acme/x" skipped: tier "urgent" is not an integer 0..2`
	if got := w.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}

// FuzzCompile reads pins as lines of "scope|tier|expires_at".
func FuzzCompile(f *testing.F) {
	f.Add("account#acme|1|\nproject#acme/x|0|1795946401\nbatch#acme/x/b|2|", 3, int64(1795946400), "acme", "x", "b", 5, 1)
	f.Add("project#acme|urgent|\naccount#acme|1.5|tomorrow\naccount#acme|0|0", 3, int64(0), "acme", "", "", -1, 0)
	f.Add("batch#a//b|1|\nteam#x|0|\naccount#a|0|\naccount#a|1|", 1, int64(-5), "a", "a", "a", 0, 0)
	f.Add("account#é|\x00|2026-11-29T10:00:00Z", 0, int64(1795946400), "é", "/", "#", 2, 0)
	f.Fuzz(func(t *testing.T, lines string, tiers int, unix int64, account, project, batch string, submitted, def int) {
		tiers %= 8 // a few tiers, sometimes none or negative
		var pins []Pin
		for _, line := range strings.Split(lines, "\n") {
			fields := append(strings.SplitN(line, "|", 3), "", "")
			pins = append(pins, Pin{Scope: fields[0], Tier: fields[1], ExpiresAt: fields[2]})
		}
		table, warnings := Compile(pins, tiers, time.Unix(unix, 0))

		if got, want := table.Len()+len(warnings), len(pins); got != want {
			t.Errorf("Len() + len(warnings) = %d, want %d pins", got, want)
		}
		// Warnings follow input order, each naming its pin's scope.
		next := 0
		for _, w := range warnings {
			for next < len(pins) && pins[next].Scope != w.Scope {
				next++
			}
			if next == len(pins) {
				t.Fatalf("warning %q names no pin at or after input %d", w, next)
			}
			next++
			if w.Reason == "" || !strings.Contains(w.String(), strconv.Quote(w.Scope)) {
				t.Errorf("warning %q: want a reason and the scope", w)
			}
		}
		again, warningsAgain := Compile(pins, tiers, time.Unix(unix, 0))
		if again.Len() != table.Len() || len(warningsAgain) != len(warnings) {
			t.Errorf("second Compile: Len() %d, %d warnings; want %d, %d",
				again.Len(), len(warningsAgain), table.Len(), len(warnings))
		}

		// Ask for the fuzzed names and for names read off each scope, so
		// that pins are hit as well as missed.
		queries := [][3]string{{account, project, batch}}
		for _, p := range pins {
			_, names, _ := strings.Cut(p.Scope, "#")
			parts := append(strings.SplitN(names, "/", 3), "", "")
			queries = append(queries, [3]string{parts[0], parts[1], parts[2]})
		}
		for _, q := range queries {
			tier, source := table.Tier(q[0], q[1], q[2], submitted, def)
			if 0 <= def && def < tiers && (tier < 0 || tier >= tiers) {
				t.Errorf("Tier(%q, %q, %q, %d, %d) = %d from %q, want 0..%d",
					q[0], q[1], q[2], submitted, def, tier, source, tiers-1)
			}
		}
	})
}
