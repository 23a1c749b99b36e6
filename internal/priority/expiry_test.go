package priority

import (
	"strings"
	"testing"
	"time"
)

func TestExpiryAt(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	if at, err := ExpiryAt("2h", now); err != nil || !at.Equal(now.Add(2*time.Hour)) {
		t.Errorf("2h: %v %v", at, err)
	}
	if at, err := ExpiryAt("2026-12-05T00:00:00Z", now); err != nil || !at.Equal(now.Add(12*time.Hour)) {
		t.Errorf("RFC 3339: %v %v", at, err)
	}
	for s, want := range map[string]string{"-1h": "not in the future", "0s": "not in the future", "2026-12-04T11:00:00Z": "not in the future", "soon": "neither a duration"} {
		if _, err := ExpiryAt(s, now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ExpiryAt(%q) = %v, want an error saying %q", s, err, want)
		}
	}
}
