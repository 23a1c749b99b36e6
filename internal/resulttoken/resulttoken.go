package resulttoken

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
)

// Bits is the token's strength: 24 random bytes.
const Bits = 192

// Len is the length of a token's text: base64url without padding.
const Len = Bits / 6

// Token is one attempt's result token. Its zero value is no token.
type Token string

// redacted is what a token prints as.
const redacted = "[redacted]"

// Reveal is the token's value: for the container's environment and the
// result message, nowhere else.
func (t Token) Reveal() string { return string(t) }

// Format prints "[redacted]" for every verb, so %v, %+v and %#v of a
// struct holding a token do not show it.
func (t Token) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// LogValue keeps the token out of slog output.
func (t Token) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText keeps the token out of JSON and any text encoding.
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Source draws a new token for each claim.
type Source func() Token

// New draws a token from crypto/rand (which does not fail on supported
// platforms; it panics if it ever does).
func New() Token {
	var b [Bits / 8]byte
	_, _ = rand.Read(b[:])
	return Token(base64.RawURLEncoding.EncodeToString(b[:]))
}

// Seeded is a deterministic Source for the simulator and tests: the same
// seed gives the same tokens in the same order. Never for a deployment.
func Seeded(seed uint64) Source {
	rng := mrand.New(mrand.NewPCG(seed, 0x7e57))
	var mu sync.Mutex // a store may claim from several goroutines
	return func() Token {
		mu.Lock()
		defer mu.Unlock()
		var b [Bits / 8]byte
		for i := 0; i < len(b); i += 8 {
			v := rng.Uint64()
			for k := 0; k < 8; k++ {
				b[i+k] = byte(v >> (8 * k))
			}
		}
		return Token(base64.RawURLEncoding.EncodeToString(b[:]))
	}
}

// Equal compares a sent token with the stored one in constant time, so
// the time of a refusal says nothing of how much of a guess was right.
// An empty token equals nothing.
func Equal(sent, stored Token) bool {
	if sent == "" || stored == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(sent), []byte(stored)) == 1
}

// Valid reports whether s has a token's form: Len characters of the
// base64url alphabet.
func Valid(s string) bool {
	if len(s) != Len {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
