package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/evalsched/evalsched/internal/priority"
)

var pinCommand = command{
	name:    "pin",
	summary: "pin a tier on an account, project or batch (as a console edit would), or remove a pin",
	run:     runPin,
}

func runPin(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("pin", stderr, fmt.Sprintf("usage: %s pin [flags] SCOPE TIER\n       %s pin --delete SCOPE\n\nSCOPE is account#A, project#A/P or batch#A/P/B (the pin item's key, e.g.\nproject#acme/search); TIER 0 is the most urgent. A pin never pauses or\nresumes: pause and resume do that, and a pin leaves them alone.\n\n", programName, programName))
	sf := addStoreFlags(fs)
	expires := fs.String("expires", "", "the pin lapses after `DURATION` (e.g. 2h) or at an RFC 3339 time")
	note := fs.String("note", "", "why, for the next operator")
	del := fs.Bool("delete", false, "remove the pin of SCOPE")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s pin: %s\n", programName, fmt.Sprintf(format, a...))
		return exitUsage
	}
	ctx := context.Background()
	if *del {
		if len(pos) != 1 {
			return usageErr("--delete takes one SCOPE")
		}
		st, _, err := sf.open(ctx)
		if err == nil {
			err = st.DeletePin(ctx, pos[0])
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s pin: %v\n", programName, err)
			return exitFailed
		}
		if *asJSON {
			return writeJSON(stdout, stderr, pinResult{Scope: pos[0], Removed: true})
		}
		fmt.Fprintf(stdout, "removed pin %s\n", pos[0])
		return exitOK
	}
	if len(pos) != 2 {
		return usageErr("want SCOPE and TIER")
	}
	now := time.Now()
	p := priority.Pin{Scope: pos[0], Tier: pos[1], Note: *note}
	if *expires != "" {
		at, err := priority.ExpiryAt(*expires, now)
		if err != nil {
			return usageErr("--expires: %v", err)
		}
		p.ExpiresAt = strconv.FormatInt(at.Unix(), 10)
	}
	st, cfg, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s pin: %v\n", programName, err)
		return exitFailed
	}
	// The same rules the pass applies: refuse what the pass would skip.
	if _, warns := priority.Compile([]priority.Pin{p}, cfg.Tiers, now); len(warns) > 0 {
		fmt.Fprintf(stderr, "%s pin: %s\n", programName, warns[0])
		return exitFailed
	}
	if err := st.PutPin(ctx, p); err != nil {
		fmt.Fprintf(stderr, "%s pin: %v\n", programName, err)
		return exitFailed
	}
	if *asJSON {
		res := pinResult{Scope: p.Scope, ExpiresAt: p.ExpiresAt, Note: p.Note}
		if tier, err := strconv.Atoi(p.Tier); err == nil {
			res.Tier = &tier
		}
		return writeJSON(stdout, stderr, res)
	}
	fmt.Fprintf(stdout, "pinned %s to tier %s", p.Scope, p.Tier)
	if p.ExpiresAt != "" {
		at, _ := strconv.ParseInt(p.ExpiresAt, 10, 64)
		fmt.Fprintf(stdout, " until %s", time.Unix(at, 0).UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(stdout, "; the next pass applies it")
	return exitOK
}

// pinResult is what pin --json prints.
type pinResult struct {
	Scope     string `json:"scope"`
	Tier      *int   `json:"tier,omitempty"`
	ExpiresAt string `json:"expires_at,omitempty"` // unix seconds
	Note      string `json:"note,omitempty"`
	Removed   bool   `json:"removed,omitempty"`
}
