package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/evalsched/evalsched/internal/localservers"
)

// testTimeout bounds one run of a package's tests (DynamoDB Local starts
// in each run).
const testTimeout = 10 * time.Minute

func main() {
	run := flag.String("run", "", "only the mutations whose name matches this `regexp`")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(mutate(ctx, *run, os.Stdout, os.Stderr))
}

// outcome is what became of one mutation.
type outcome string

const (
	killed   outcome = "killed"
	survived outcome = "SURVIVED"
	broken   outcome = "DOES NOT BUILD"
)

func mutate(ctx context.Context, run string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mutate: "+format+"\n", a...)
		return 1
	}
	sel, err := regexp.Compile(run)
	if err != nil {
		return fail("-run: %v", err)
	}
	root, err := localservers.RepoRoot()
	if err != nil {
		return fail("%v", err)
	}
	var ms []Mutation
	for _, m := range Mutations {
		if sel.MatchString(m.Name) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return fail("no mutation matches %q", run)
	}
	// 1. Every mutation applies to the source as it is.
	var bad []string
	for _, m := range ms {
		if err := m.check(root); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		return fail("the list no longer fits the source (update internal/mutate/mutations.go):\n  %s", strings.Join(bad, "\n  "))
	}

	// 2. A copy of the tree to mutate: the working tree is never written.
	tmp, err := os.MkdirTemp("", "evalsched-mutate-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(ctx, root, tmp); err != nil {
		return fail("copy the repository: %v", err)
	}

	// 3. The tests pass unmutated, package by package.
	byPkg := map[string][]string{}
	for _, m := range ms {
		byPkg[m.Pkg] = append(byPkg[m.Pkg], m.Tests...)
	}
	for _, pkg := range slices.Sorted(maps.Keys(byPkg)) {
		fmt.Fprintf(stdout, "baseline  %s\n", pkg)
		if out, err := goTest(ctx, tmp, pkg, byPkg[pkg]); err != nil {
			if ctx.Err() != nil {
				return fail("interrupted")
			}
			return fail("the tests fail without a mutation, so none can be judged: %s\n%s", pkg, out)
		}
	}

	// 4. Each mutation on the copy, then the file put back.
	var left []string
	for _, m := range ms {
		res, out, err := m.run(ctx, tmp)
		if ctx.Err() != nil {
			return fail("interrupted")
		}
		if err != nil {
			return fail("%s: %v", m.Name, err)
		}
		fmt.Fprintf(stdout, "%-14s  %-32s %s (%s)\n", res, m.Name, m.File, strings.Join(m.Tests, ", "))
		if res != killed {
			left = append(left, m.Name)
			if res == broken {
				fmt.Fprintf(stdout, "%s\n", out)
			}
		}
	}
	if len(left) > 0 {
		return fail("%d of %d mutations not killed: %s", len(left), len(ms), strings.Join(left, ", "))
	}
	fmt.Fprintf(stdout, "mutate: all %d mutations killed\n", len(ms))
	return 0
}

// apply returns src with m's edits made; each Old must occur exactly once.
func (m Mutation) apply(src []byte) ([]byte, error) {
	out := string(src)
	for _, e := range m.Edits {
		switch n := strings.Count(out, e.Old); n {
		case 1:
			out = strings.Replace(out, e.Old, e.New, 1)
		default:
			return nil, fmt.Errorf("%s: %s: %q occurs %d times, want once", m.Name, m.File, e.Old, n)
		}
	}
	return []byte(out), nil
}

// check tells whether m applies to the file under root.
func (m Mutation) check(root string) error {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	_, err = m.apply(src)
	return err
}

// run applies m in the tree at dir, runs its tests and restores the file,
// whatever happens.
func (m Mutation) run(ctx context.Context, dir string) (outcome, string, error) {
	path := filepath.Join(dir, m.File)
	orig, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	mutated, err := m.apply(orig)
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return "", "", err
	}
	defer func() { _ = os.WriteFile(path, orig, 0o644) }()
	out, err := goTest(ctx, dir, m.Pkg, m.Tests)
	switch {
	case err == nil:
		return survived, out, nil
	case strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]"):
		return broken, out, nil
	}
	return killed, out, nil
}

// goTest runs the named tests of pkg in dir.
func goTest(ctx context.Context, dir, pkg string, tests []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	tests = slices.Compact(slices.Sorted(slices.Values(tests)))
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^("+strings.Join(tests, "|")+")$", pkg)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// copyTree copies the repository's files (tracked and new, not ignored) to
// dst, and links its node_modules (the local AWS stand-ins, read only).
func copyTree(ctx context.Context, root, dst string) error {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet committed
		}
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules")); err == nil {
		return os.Symlink(filepath.Join(root, "node_modules"), filepath.Join(dst, "node_modules"))
	}
	return nil
}
