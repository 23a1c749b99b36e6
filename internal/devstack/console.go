package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// logTo is local mode's logger: every line, as JSON, to file (the pass log
// the functions write on AWS: each pass's limit decisions and reasons, each
// intake and task event), and what an operator must see to the console:
// intake rejects with their reasons, conflicts and stored batches, the
// pass's warnings about malformed pins and models as they appear and clear,
// and anything at warning level or above. verbose prints every line.
func logTo(file, console io.Writer, verbose bool) *slog.Logger {
	c := &consoleState{out: console, verbose: verbose, seen: map[string]bool{}}
	return slog.New(tee{slog.NewJSONHandler(file, nil), &consoleHandler{c: c}})
}

// tee hands each record to two handlers.
type tee [2]slog.Handler

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	return t[0].Enabled(ctx, l) || t[1].Enabled(ctx, l)
}

func (t tee) Handle(ctx context.Context, r slog.Record) error {
	return errors.Join(t[0].Handle(ctx, r.Clone()), t[1].Handle(ctx, r))
}

func (t tee) WithAttrs(attrs []slog.Attr) slog.Handler {
	return tee{t[0].WithAttrs(attrs), t[1].WithAttrs(attrs)}
}

func (t tee) WithGroup(name string) slog.Handler {
	return tee{t[0].WithGroup(name), t[1].WithGroup(name)}
}

// consoleState is the state the console handler's copies share: the output and
// the pass warnings shown so far.
type consoleState struct {
	mu      sync.Mutex
	out     io.Writer
	verbose bool
	seen    map[string]bool // warnings of the last pass
}

// consoleHandler picks the lines an operator must see; its attributes are
// those given by With (the intake's message id and batch). Groups are
// flattened: nothing local mode prints is grouped.
type consoleHandler struct {
	c     *consoleState
	attrs []slog.Attr
}

func (h *consoleHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *consoleHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &consoleHandler{c: h.c, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h *consoleHandler) WithGroup(string) slog.Handler { return h }

func (h *consoleHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]slog.Value{}
	var order []string
	add := func(a slog.Attr) {
		if _, ok := attrs[a.Key]; !ok {
			order = append(order, a.Key)
		}
		attrs[a.Key] = a.Value.Resolve()
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(a); return true })
	str := func(k string) string {
		if v, ok := attrs[k]; ok {
			return v.String()
		}
		return ""
	}
	batch := str("batch")
	if p := str("part"); p != "" {
		batch += fmt.Sprintf(" part %s/%s", p, str("parts"))
	}

	var lines []string
	switch {
	case r.Message == "message rejected to the dead-letter queue":
		lines = []string{fmt.Sprintf("intake: message %s rejected to the dead-letter queue: %s", str("message_id"), str("reason"))}
	case strings.HasPrefix(r.Message, "message conflicts"):
		lines = []string{fmt.Sprintf("intake: %s: conflicts with the stored batch, nothing stored, message %s to the dead-letter queue: %s", batch, str("message_id"), str("reason"))}
	case r.Message == "message stored":
		lines = []string{fmt.Sprintf("intake: %s: %s jobs, %s new", batch, str("jobs"), str("created"))}
	case r.Message == "pass":
		lines = h.c.warningsChanged(attrs["pass"])
		if h.c.verbose {
			lines = append(lines, text(r.Message, order, attrs))
		}
	case r.Level >= slog.LevelWarn || h.c.verbose:
		lines = []string{r.Level.String() + " " + text(r.Message, order, attrs)}
	}
	if len(lines) == 0 {
		return nil
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	at := r.Time.Format("15:04:05")
	for _, l := range lines {
		if _, err := fmt.Fprintf(h.c.out, "%s  %s\n", at, l); err != nil {
			return err
		}
	}
	return nil
}

// warningsChanged returns the pass's warnings not shown after the previous
// pass, and those it no longer has as "resolved": a malformed pin is
// named once, not every 10 s.
func (c *consoleState) warningsChanged(pass slog.Value) []string {
	now := map[string]bool{}
	if pass.Kind() == slog.KindGroup {
		for _, a := range pass.Group() {
			if ws, ok := a.Value.Any().([]string); a.Key == "warnings" && ok {
				for _, w := range ws {
					now[w] = true
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, w := range slices.Sorted(maps.Keys(now)) {
		if !c.seen[w] {
			out = append(out, "warning: "+w)
		}
	}
	for _, w := range slices.Sorted(maps.Keys(c.seen)) {
		if !now[w] {
			out = append(out, "resolved: "+w)
		}
	}
	c.seen = now
	return out
}

// text is a record as "msg key=value …".
func text(msg string, order []string, attrs map[string]slog.Value) string {
	var b strings.Builder
	b.WriteString(msg)
	for _, k := range order {
		v := attrs[k]
		if v.Kind() == slog.KindTime {
			v = slog.StringValue(v.Time().Format(time.RFC3339))
		}
		fmt.Fprintf(&b, " %s=%v", k, v)
	}
	return b.String()
}
