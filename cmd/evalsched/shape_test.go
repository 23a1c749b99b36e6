package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI is plumbing: flags, the store's and the AWS SDK's set-up, output.
// What it shows or decides belongs to the packages that own it, so the
// package stays small enough to read and no command's body grows past a
// screen (#43).
const (
	maxCLILines  = 2000 // the package's non-test code
	maxFuncLines = 80
)

// cliFiles parses the package's non-test files.
func cliFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

func TestCLIStaysSmall(t *testing.T) {
	fset, files := cliFiles(t)
	total := 0
	for _, f := range files {
		total += fset.File(f.Pos()).LineCount()
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines {
				t.Errorf("%s: func %s is %d lines, over %d: split it, or move what is not CLI plumbing to its package",
					fset.Position(fd.Pos()), fd.Name.Name, n, maxFuncLines)
			}
		}
	}
	if total > maxCLILines {
		t.Errorf("the CLI's non-test code is %d lines, over %d: move what is not CLI plumbing to its package", total, maxCLILines)
	}
}

// The CLI stops tasks one way, ecslauncher.Stopper's: no StopTask call of
// its own, so a task is stopped with the same input wherever it is.
func TestCLIStopsTasksOnlyThroughEcslauncher(t *testing.T) {
	fset, files := cliFiles(t)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "StopTask" {
				t.Errorf("%s: a StopTask call of the CLI's own: stop through ecslauncher.Stopper", fset.Position(sel.Pos()))
			}
			return true
		})
	}
}
