package cliout

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Line is one line of progress on a terminal, redrawn in place with \r at
// most once per interval, so a command that handles a million items does
// not spend its time drawing. Off a terminal (a pipe, a file, --json) it
// draws nothing: scripts read only the result.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	every time.Duration
	last  time.Time
	drawn bool
}

// NewLine draws on w when on is set and w is a terminal.
func NewLine(w io.Writer, on bool, every time.Duration) *Line {
	return &Line{w: w, on: on && IsTerminal(w), every: every}
}

// Draw redraws the line, unless the last draw was within the interval and
// this one is not final (the first and the last state always show).
func (l *Line) Draw(final bool, format string, a ...any) {
	if l == nil || !l.on {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !final && l.drawn && now.Sub(l.last) < l.every {
		return
	}
	l.last = now
	fmt.Fprintf(l.w, "\r\033[K"+format, a...)
	l.drawn = true
}

// Clear erases the line, so the command's own output starts clean.
func (l *Line) Clear() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}

// barWidth is the bar's width in characters.
const barWidth = 24

// Bar draws done of total as [######..........].
func Bar(done, total int) string {
	fill := min(barWidth, barWidth*max(done, 0)/max(total, 1))
	return "[" + strings.Repeat("#", fill) + strings.Repeat(".", barWidth-fill) + "]"
}

// IsTerminal tells whether w is a character device (a person's terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Commas writes n with thousands separators: 10,000.
func Commas(n int) string {
	s := strconv.Itoa(n)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

// Count writes "1 part", "11 parts", "10,000 parts".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Commas(n) + " " + noun + "s"
}

// Human prints a duration in seconds the one way the CLI prints times:
// whole seconds under a minute (45s), else rounded to the minute without
// zero units (12m, 3h16m, 2h); "-" when unknown (negative).
func Human(s float64) string {
	if s < 0 || math.IsNaN(s) {
		return "-"
	}
	if s < 59.5 {
		return fmt.Sprintf("%.0fs", s)
	}
	m := int64(math.Round(s / 60))
	switch h := m / 60; {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m%60 == 0:
		return fmt.Sprintf("%dh", h)
	default:
		return fmt.Sprintf("%dh%dm", h, m%60)
	}
}
