package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityBoundariesNameTheirTests: every boundary SECURITY.md states
// (a bullet of its "Boundaries and their tests" section) names at least
// one test, and every test SECURITY.md names exists: a func of that name
// in a _test.go file of the repository. A renamed or deleted test, or a
// boundary added without one, fails here.
func TestSecurityBoundariesNameTheirTests(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)

	// 1. Each boundary names a test.
	_, section, ok := strings.Cut(doc, "\n## Boundaries and their tests\n")
	if !ok {
		t.Fatal(`SECURITY.md has no "## Boundaries and their tests" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	boundaries := 0
	for _, b := range strings.Split(section, "\n- ")[1:] {
		boundaries++
		if !testName.MatchString(b) {
			t.Errorf("SECURITY.md states a boundary without a test: %.80q", b)
		}
	}
	if boundaries < 5 {
		t.Errorf("read %d boundaries from SECURITY.md; the section's bullets were not found", boundaries)
	}

	// 2. Each named test exists.
	defined := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", ".local":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := testName.FindAllStringSubmatch(doc, -1)
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("SECURITY.md names %s, which is no test of the repository", m[1])
		}
	}
	if len(named) < boundaries {
		t.Errorf("SECURITY.md names %d tests for %d boundaries", len(named), boundaries)
	}
}

var (
	// testName is a test or fuzz target named in backticks.
	testName = regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)`")
	// testFunc is a test or fuzz target's declaration.
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)\(`)
)
