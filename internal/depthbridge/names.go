package depthbridge

import (
	"strings"

	"github.com/evalsched/evalsched/internal/batchmsg"
)

// Normalize maps a gateway's model name to the name jobs use, or reports
// that it has none (the name is dropped). The rule, in order:
//
//  1. The target's models table, then the configuration's: a name found
//     maps to its value as written ("" drops it).
//  2. Not found and the target is only_mapped: dropped.
//  3. Otherwise lowercased if lowercase is set, and every byte outside a
//     job name's characters (A-Z a-z 0-9 . _ : / -, batchmsg's rule) becomes
//     "-". A result that is still not a valid job model name (empty, or over
//     128 characters) is dropped: truncating it could merge two models.
//
// Jobs' model names are case-sensitive, so lowercasing is off by default.
func Normalize(name string, t Target, c Config) (string, bool) {
	for _, table := range []map[string]string{t.Models, c.Models} {
		if v, ok := table[name]; ok {
			return v, v != "" && batchmsg.NameRule(v) == ""
		}
	}
	if t.OnlyMapped {
		return "", false
	}
	if c.Lowercase {
		name = strings.ToLower(name)
	}
	b := []byte(name)
	for i, ch := range b {
		if !batchmsg.NameChar(ch) {
			b[i] = '-'
		}
	}
	out := string(b)
	return out, batchmsg.NameRule(out) == ""
}
