package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/localaws"
)

// TestMutationsApply: every mutation still applies to the current source
// (each text found exactly once), the mutated file still parses, and the
// tests it names exist in its package — so a refactor cannot leave make
// mutate silently checking nothing.
func TestMutationsApply(t *testing.T) {
	root, err := localaws.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range Mutations {
		if names[m.Name] {
			t.Errorf("mutation %s listed twice", m.Name)
		}
		names[m.Name] = true
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		out, err := m.apply(src)
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), m.File, out, 0); err != nil {
			t.Errorf("%s: the mutated %s does not parse: %v", m.Name, m.File, err)
		}
		tests, err := filepath.Glob(filepath.Join(root, m.Pkg, "*_test.go"))
		if err != nil || len(tests) == 0 {
			t.Errorf("%s: no test files in %s", m.Name, m.Pkg)
			continue
		}
		var all strings.Builder
		for _, f := range tests {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
		}
		for _, name := range m.Tests {
			if !regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(t \*testing\.T\)`).MatchString(all.String()) {
				t.Errorf("%s: test %s not found in %s", m.Name, name, m.Pkg)
			}
		}
	}
}
