package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseScenario: no panic, and every rejection names where it is
// ("scenario: …") — the shipped scenarios are the seeds.
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob("../../../scenarios/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"name":"x","models":[{"name":"m","call_s":{"medain":1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "scenario") {
				t.Fatalf("rejection %q does not say it is the scenario's", err)
			}
			return
		}
		if sc == nil || sc.DurationS <= 0 {
			t.Fatalf("accepted a scenario without a duration: %+v", sc)
		}
	})
}
