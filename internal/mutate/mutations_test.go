package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evalsched/evalsched/internal/localservers"
)

// TestMutationsApply: every mutation still applies to the current source
// (each text found exactly once), the mutated file still parses, and the
// tests it names exist in its package — so a refactor cannot leave make
// mutate silently checking nothing.
func TestMutationsApply(t *testing.T) {
	root, err := localservers.RepoRoot()
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

// conditionLine finds the condition expressions the DynamoDB store writes:
// a literal ConditionExpression, a cond variable built or extended, a
// WithCondition, a condition passed as a call's last argument.
var conditionLine = regexp.MustCompile(`(^|[^A-Za-z])ConditionExpression:\s+aws\.String\(|\bcond :?= [^e]|WithCondition\(name|, name\(.*\)\)\)?$|^\s+name\("[a-z_]+"\)\.Equal|name\(attrPK\)\.AttributeExists\(\)\)`)

// TestEveryStoreConditionIsGuarded: each condition expression in
// internal/dynamostore has, within the 12 lines above it, a "Guard" comment
// naming its mutation ("make mutate: NAME"), the mutation is listed, and
// each listed mutation of the store is named beside its condition.
func TestEveryStoreConditionIsGuarded(t *testing.T) {
	root, err := localservers.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]Mutation{}
	for _, m := range Mutations {
		listed[m.Name] = m
	}
	named := map[string]bool{}
	mention := regexp.MustCompile(`make\s+(?://\s+)?mutate:\s+(?://\s+)?([a-z-]+)`)
	files, _ := filepath.Glob(filepath.Join(root, "internal/dynamostore/*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range mention.FindAllStringSubmatch(string(b), -1) {
			named[rel+" "+m[1]] = true
			if _, ok := listed[m[1]]; !ok {
				t.Errorf("%s names mutation %q, which internal/mutate does not list", rel, m[1])
			}
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if !conditionLine.MatchString(l) || strings.Contains(l, "ConditionBuilder{}") || strings.HasPrefix(strings.TrimSpace(l), "//") {
				continue
			}
			guarded := false
			for k := max(0, i-12); k < i && !guarded; k++ {
				guarded = strings.Contains(lines[k], "Guard")
			}
			if !guarded {
				t.Errorf("%s:%d: a condition without a Guard comment naming its invariant, test and mutation: %s", rel, i+1, strings.TrimSpace(l))
			}
		}
	}
	for _, m := range Mutations {
		if strings.HasPrefix(m.File, "internal/dynamostore/") && !named[m.File+" "+m.Name] {
			t.Errorf("mutation %s is not named beside its condition in %s", m.Name, m.File)
		}
	}
}
