package resulttoken

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestNewIsValidAndFresh(t *testing.T) {
	seen := map[Token]bool{}
	for range 1000 {
		tok := New()
		if !Valid(tok.Reveal()) {
			t.Fatalf("New() = %q, not a token's form", tok.Reveal())
		}
		if seen[tok] {
			t.Fatalf("New() repeated %q", tok.Reveal())
		}
		seen[tok] = true
	}
}

func TestSeededRepeatsForItsSeed(t *testing.T) {
	a, b, c := Seeded(7), Seeded(7), Seeded(8)
	for i := range 10 {
		x, y, z := a(), b(), c()
		if x != y {
			t.Fatalf("draw %d: seed 7 gave %q and %q", i, x.Reveal(), y.Reveal())
		}
		if x == z {
			t.Fatalf("draw %d: seeds 7 and 8 agree", i)
		}
		if !Valid(x.Reveal()) {
			t.Fatalf("Seeded drew %q, not a token's form", x.Reveal())
		}
	}
}

func TestEqual(t *testing.T) {
	tok := New()
	for _, tc := range []struct {
		name         string
		sent, stored Token
		want         bool
	}{
		{"same", tok, tok, true},
		{"other", New(), tok, false},
		{"prefix", tok[:Len-1], tok, false},
		{"missing", "", tok, false},
		{"none stored", tok, "", false},
		{"both empty", "", "", false},
	} {
		if got := Equal(tc.sent, tc.stored); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A token held in a struct that is printed, logged or encoded whole
// stays hidden.
func TestTokenNeverPrints(t *testing.T) {
	tok := New()
	holder := struct {
		ID    string
		Token Token
	}{"job", tok}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "job", holder, "token", tok)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "job", holder, "token", tok)
	js, _ := json.Marshal(holder)
	for _, out := range []string{
		fmt.Sprint(tok), fmt.Sprintf("%s %q %x %v %+v %#v %d", tok, tok, tok, holder, holder, holder, tok),
		logged.String(), string(js),
	} {
		if strings.Contains(out, tok.Reveal()) {
			t.Errorf("the token shows in %s", out)
		}
		if !strings.Contains(out, redacted) {
			t.Errorf("%s does not say the token was redacted", out)
		}
	}
}

func TestValid(t *testing.T) {
	for _, s := range []string{"", strings.Repeat("a", Len-1), strings.Repeat("a", Len+1), strings.Repeat("a", Len-1) + "=", strings.Repeat("a", Len-1) + "+"} {
		if Valid(s) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
	if !Valid(strings.Repeat("aZ9-_", Len/5) + strings.Repeat("x", Len%5)) {
		t.Error("a token of base64url characters is not valid")
	}
}
