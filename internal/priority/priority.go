package priority

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Pin is one pin item as the store read it. Fields keep the operator's raw
// text so a bad console edit can be reported instead of silently lost.
type Pin struct {
	Scope     string // "account#A", "project#A/P" or "batch#A/P/B"
	Tier      string // the tier attribute as text (e.g. "0", "2", "urgent", "1.5"); "" when the attribute is missing
	ExpiresAt string // optional: unix epoch seconds ("1796000000") or RFC 3339; "" = never expires
	Note      string
}

// Warning reports one pin that was skipped and why; it never fails a pass.
type Warning struct{ Scope, Reason string }

// String formats the warning for the pass log, e.g.
// `pin "project#acme/x" skipped: tier "urgent" is not an integer 0..2`.
func (w Warning) String() string {
	return fmt.Sprintf("pin %q skipped: %s", w.Scope, w.Reason)
}

// Source says where a batch's tier came from.
type Source string

// The sources of a tier, from the most specific to the fallback.
const (
	SourceBatchPin   Source = "batch pin"
	SourceProjectPin Source = "project pin"
	SourceAccountPin Source = "account pin"
	SourceSubmitted  Source = "submitted"
	SourceDefault    Source = "default"
)

// Table holds the valid pins of one pass. Build it with Compile; the zero
// Table has no pins and no tiers, so its Tier always returns the default.
type Table struct {
	tiers int
	pins  map[string]int // scope → tier
}

// maxName is the longest account, project or batch name the intake accepts.
const maxName = 128

// kinds maps a scope prefix to the number of names after it.
var kinds = map[string]int{"account": 1, "project": 2, "batch": 3}

// Compile validates pins against the number of tiers at time now. Skips
// (with a Warning each): missing tier, non-integer tier (e.g. "1.5",
// "urgent"), tier out of 0..tiers-1, scope with unknown kind or wrong number
// of parts or empty parts or characters outside `A-Z a-z 0-9 . _ : / -`, an
// unparseable expires_at, an expired pin (expires_at <= now), a duplicate
// scope (the first valid one wins; later ones are reported). Warnings come
// out in input order. Deterministic.
//
// Every pin ends up either in the Table or in exactly one Warning, so
// Len() + len(warnings) == len(pins).
func Compile(pins []Pin, tiers int, now time.Time) (Table, []Warning) {
	t := Table{tiers: tiers, pins: make(map[string]int, len(pins))}
	var warnings []Warning
	for _, p := range pins {
		tier, reason := check(p, tiers, now)
		if prev, dup := t.pins[p.Scope]; reason == "" && dup {
			// The first valid pin wins so that adding a second item for the
			// same scope never silently changes a running schedule.
			reason = fmt.Sprintf("duplicate scope: an earlier pin (tier %d) wins", prev)
		}
		if reason != "" {
			warnings = append(warnings, Warning{Scope: p.Scope, Reason: reason})
			continue
		}
		t.pins[p.Scope] = tier
	}
	return t, warnings
}

// check returns the pin's tier, or a non-empty reason to skip it.
func check(p Pin, tiers int, now time.Time) (int, string) {
	if reason := CheckScope(p.Scope); reason != "" {
		return 0, reason
	}
	tier, reason := parseTier(p.Tier, tiers)
	if reason != "" {
		return 0, reason
	}
	if p.ExpiresAt == "" {
		return tier, ""
	}
	expires, ok := parseTime(p.ExpiresAt)
	if !ok {
		return 0, fmt.Sprintf("expires_at %q is neither unix seconds nor RFC 3339", p.ExpiresAt)
	}
	// A pin that expires exactly now is already gone: expires_at is the
	// first instant the pin no longer applies.
	if !expires.After(now) {
		return 0, "expired at " + expires.UTC().Format(time.RFC3339)
	}
	return tier, ""
}

// CheckScope validates "kind#names" (a pin's or a pause's scope) and
// returns why it is not one, or "". Names may contain "/", so a scope
// cannot be split back into its names; instead it must have at least as many
// separators as its kind needs and no empty name anywhere. Lookups never
// split either: Tier builds the key from the parts it is given.
func CheckScope(scope string) string {
	kind, names, ok := strings.Cut(scope, "#")
	if !ok {
		return `scope has no kind; want "account#A", "project#A/P" or "batch#A/P/B"`
	}
	parts, known := kinds[kind]
	if !known {
		return fmt.Sprintf("scope kind %q is not account, project or batch", kind)
	}
	if names == "" {
		return fmt.Sprintf("scope has no names after %q", kind+"#")
	}
	for _, r := range names {
		if !allowed(r) {
			return fmt.Sprintf("scope has character %q outside A-Z a-z 0-9 . _ : / -", r)
		}
	}
	if names[0] == '/' || names[len(names)-1] == '/' || strings.Contains(names, "//") {
		return `scope has an empty name (leading, trailing or double "/")`
	}
	if strings.Count(names, "/") < parts-1 {
		return fmt.Sprintf("%s scope needs %d names separated by \"/\"", kind, parts)
	}
	if len(names) > parts*maxName+parts-1 {
		return fmt.Sprintf("scope is longer than %d names of at most %d characters", parts, maxName)
	}
	return ""
}

func allowed(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("._:/-", r)
}

// parseTier accepts only a decimal integer in 0..tiers-1: a guess at what
// "urgent" or "1.5" meant could move a batch ahead of work that matters more.
func parseTier(text string, tiers int) (int, string) {
	if text == "" {
		return 0, "tier is missing"
	}
	if tiers <= 0 {
		return 0, fmt.Sprintf("tier %q cannot apply: no tiers are configured", text)
	}
	tier, ok := Decimal(text)
	if !ok || tier >= int64(tiers) {
		return 0, fmt.Sprintf("tier %q is not an integer 0..%d", text, tiers-1)
	}
	return int(tier), ""
}

// Decimal reads a console number written as text, strictly: decimal digits
// only (no sign, space, point or exponent), at most 18 of them. Every
// numeric console field reads a String by it, so "9" is 9 wherever a number
// goes and "+9", " 9" or "9.0" are refused everywhere alike.
func Decimal(text string) (int64, bool) {
	if text == "" || len(text) > 18 {
		return 0, false
	}
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(text, 10, 64)
	return v, err == nil
}

// parseTime reads unix epoch seconds, the form a DynamoDB TTL attribute
// uses, or RFC 3339, the form an operator types.
func parseTime(text string) (time.Time, bool) {
	if sec, ok := Decimal(text); ok {
		return time.Unix(sec, 0), true
	}
	t, err := time.Parse(time.RFC3339, text)
	return t, err == nil
}

// Tier returns the batch's tier: batch pin, else project pin, else account
// pin, else the submitted tier (submitted < 0 means none; a submitted tier
// above tiers-1 is clamped to tiers-1), else def.
//
// def is returned as given; the caller keeps it within 0..tiers-1.
func (t Table) Tier(account, project, batch string, submitted, def int) (int, Source) {
	if len(t.pins) > 0 {
		// 1: batch pin  2: project pin  3: account pin — the most specific wins.
		if tier, ok := t.pins["batch#"+account+"/"+project+"/"+batch]; ok {
			return tier, SourceBatchPin
		}
		if tier, ok := t.pins["project#"+account+"/"+project]; ok {
			return tier, SourceProjectPin
		}
		if tier, ok := t.pins["account#"+account]; ok {
			return tier, SourceAccountPin
		}
	}
	// 4: submitted tier. Clamping rather than ignoring it keeps a batch
	// submitted above the configured tiers at the lowest priority, where the
	// submitter most likely meant it, instead of at the default.
	if submitted >= 0 && t.tiers > 0 {
		return min(submitted, t.tiers-1), SourceSubmitted
	}
	// 5: default.
	return def, SourceDefault
}

// Len returns the number of valid pins.
func (t Table) Len() int { return len(t.pins) }

// ExpiryAt reads when a pin given from the command line lapses: a
// duration from now (2h) or an RFC 3339 time, in the future either way.
func ExpiryAt(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q is not in the future", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (2h) nor an RFC 3339 time", s)
	}
	if !t.After(now) {
		return time.Time{}, fmt.Errorf("%q is not in the future", s)
	}
	return t, nil
}
