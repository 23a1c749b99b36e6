// Package docs holds the repository's documents beyond the README; its test
// keeps every reference to a file of the repository true.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReferencesExist: every markdown link of every document (a file, a
// folder, a heading of a document), and every name ending in .md in the
// code, the Makefile and the documents, names something in the repository.
// A name is looked for beside the file that mentions it, then at the
// repository's root. Links to the web are not followed.
func TestReferencesExist(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin", "out", "testdata", ".local":
				return filepath.SkipDir
			}
			return nil
		}
		if !isText(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := webLink.ReplaceAllString(string(data), "")
		dir := filepath.Dir(path)
		for _, name := range mdName.FindAllStringSubmatch(text, -1) {
			checked++
			if !exists(root, dir, name[1]) {
				t.Errorf("%s names %s, which is not in the repository", rel, name[1])
			}
		}
		if strings.HasSuffix(path, ".md") {
			for _, link := range mdLink.FindAllStringSubmatch(string(data), -1) {
				target := link[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				resolved := path
				if file != "" {
					resolved = filepath.Join(dir, file)
					if _, err := os.Stat(resolved); err != nil {
						t.Errorf("%s links to %s, which does not exist", rel, target)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(resolved, ".md") && !hasHeading(t, resolved, anchor) {
					t.Errorf("%s links to %s: no heading #%s there", rel, target, anchor)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Errorf("checked %d references; the walk missed the repository's files", checked)
	}
}

var (
	// webLink is a URL, whose path may end in .md on another site.
	webLink = regexp.MustCompile(`[a-z]+://[^\s)"'\x60>]+`)
	// mdName is a file name ending in .md, with its path (an absolute one
	// too: it is outside the repository).
	mdName = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])(/?(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-]+\.md)\b`)
	// mdLink is a markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// isText: the files whose references are checked.
func isText(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".md", ".yaml", ".yml", ".sh", ".java":
		return true
	}
	return name == "Makefile"
}

// exists looks for name beside the mentioning file, then at the root; an
// absolute path (outside the repository) never counts.
func exists(root, dir, name string) bool {
	if filepath.IsAbs(name) {
		return false
	}
	for _, base := range []string{dir, root} {
		if _, err := os.Stat(filepath.Join(base, name)); err == nil {
			return true
		}
	}
	return false
}

// hasHeading reports whether the markdown file has a heading whose GitHub
// anchor is anchor: lower case, spaces to hyphens, punctuation dropped.
func hasHeading(t *testing.T, path, anchor string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		if slug(strings.TrimLeft(line, "#")) == anchor {
			return true
		}
	}
	return false
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '—' && r != '–' && r != '…' && r != '×':
			b.WriteRune(r)
		}
	}
	return b.String()
}
