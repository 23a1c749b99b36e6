package cliout

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567", -1000: "-1,000", -12: "-12"} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Count(1, "part"); got != "1 part" {
		t.Errorf("Count(1) = %q", got)
	}
	if got := Count(10000, "job"); got != "10,000 jobs" {
		t.Errorf("Count(10000) = %q", got)
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		done, total, fill int
	}{{0, 10, 0}, {5, 10, 12}, {10, 10, 24}, {11, 10, 24}, {3, 0, 24}, {-1, 10, 0}} {
		got := Bar(c.done, c.total)
		if len(got) != barWidth+2 || strings.Count(got, "#") != c.fill {
			t.Errorf("Bar(%d, %d) = %q, want %d of %d filled", c.done, c.total, got, c.fill, barWidth)
		}
	}
}

// A Line on a buffer (not a terminal) draws nothing, so scripts and --json
// read only the result.
func TestLineOffATerminalIsSilent(t *testing.T) {
	var b bytes.Buffer
	l := NewLine(&b, true, 0)
	l.Draw(true, "sending %d", 1)
	l.Clear()
	if b.Len() != 0 {
		t.Fatalf("drew %q off a terminal", b.String())
	}
}

// Within the interval only the final draw shows; Clear erases a drawn line
// once.
func TestLineSpacesItsDraws(t *testing.T) {
	var b bytes.Buffer
	l := &Line{w: &b, on: true, every: time.Hour}
	l.Draw(false, "a")
	l.Draw(false, "b")
	l.Draw(true, "c")
	l.Clear()
	l.Clear()
	if got, want := b.String(), "\r\033[Ka\r\033[Kc\r\033[K"; got != want {
		t.Fatalf("drew %q, want %q", got, want)
	}
}

func TestWriteFileLeavesNothingOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := WriteFile(path, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "old" {
		t.Fatalf("after a failed write the file holds %q (%v), want the old one", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left %d files, want only the report", len(entries))
	}
}

func TestHuman(t *testing.T) {
	for s, want := range map[float64]string{-1: "-", 0: "0s", 45: "45s", 59.4: "59s", 59.6: "1m", 600: "10m", 629: "10m", 11400: "3h10m", 11760: "3h16m", 7200: "2h", 200000: "55h33m"} {
		if got := Human(s); got != want {
			t.Errorf("Human(%v) = %q, want %q", s, got, want)
		}
	}
}
