package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The two top-level documents stay short enough to read (#43): the README
// says what, why and where; BENCHMARKS.md holds only what stands now, each
// figure with its command and target. Designs live in docs/ and history in
// version control.
func TestTopLevelDocumentsStayShort(t *testing.T) {
	for name, max := range map[string]int{"README.md": 300, "BENCHMARKS.md": 300} {
		data, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n > max {
			t.Errorf("%s is %d lines, over %d: move the detail to a document in docs/ and link it", name, n, max)
		}
	}
}
