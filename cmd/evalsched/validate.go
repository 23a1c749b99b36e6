package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/config"
)

var validateCommand = command{
	name:    "validate",
	summary: "check a batch message against the intake's contract (docs/batch-format.md)",
	run:     runValidate,
}

const validateUsage = `usage: evalsched validate [flags] FILE

Checks one batch message (FILE, or - for standard input) exactly as the
intake function will: the same parser, the same rules. A valid message
prints a one-line summary and exits 0; an invalid one prints a
"FILE: field: rule" line per broken rule (up to 10) on stderr and exits 1,
as the intake would dead-letter it. Exit 2 is a usage error. A job's env
is held to the env policy (docs/env-policy.md), and to the deployment's
allowlist when --env-allow (or EVALSCHED_ENV_ALLOW) gives it.

flags:
`

func runValidate(args []string, stdout, stderr io.Writer) int {
	return validate(args, os.Stdin, stdout, stderr)
}

// validate is runValidate with standard input as a parameter, for tests.
func validate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("validate", stderr, validateUsage)
	def := batchmsg.DefaultConfig()
	tiers := fs.Int("tiers", def.Tiers, "the deployment's number of tiers `N`: a message's tier must be 0..N-1")
	defaultTier := fs.Int("default-tier", def.DefaultTier, "the deployment's default tier `T`, 0..tiers-1")
	envAllow := envAllowFlag(fs)
	files, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "evalsched validate: "+format+"\n", a...)
		fs.Usage()
		return exitUsage
	}
	if len(files) != 1 {
		return usageErr("want one FILE (or - for standard input), got %d", len(files))
	}
	if *tiers < 1 {
		return usageErr("--tiers must be at least 1")
	}
	cfg := batchmsg.Config{Tiers: *tiers, DefaultTier: *defaultTier, DefaultMaxAttempts: def.DefaultMaxAttempts, EnvAllow: config.List(*envAllow)}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}

	// One byte past the limit is enough for Parse to reject an oversized
	// message without reading all of it.
	name, data, err := readInput(files[0], stdin, batchmsg.MaxMessageBytes+1)
	if err != nil {
		fmt.Fprintf(stderr, "evalsched validate: %v\n", err)
		return exitFailed
	}
	m, err := batchmsg.Parse(data, cfg)
	if err != nil {
		errs := batchmsg.Errors(err)
		if len(errs) == 0 { // not the message's fault; cfg was checked above
			fmt.Fprintf(stderr, "evalsched validate: %v\n", err)
			return exitFailed
		}
		for _, e := range errs {
			fmt.Fprintf(stderr, "%s: %s\n", name, e)
		}
		return exitFailed
	}
	fmt.Fprintln(stdout, m.Summary())
	return exitOK
}

// envAllowFlag is the --env-allow flag: the deployment's env allowlist,
// comma-separated names and PREFIX_* prefixes, as its intake reads
// EVALSCHED_ENV_ALLOW (config.List reads it).
func envAllowFlag(fs *flag.FlagSet) *string {
	return fs.String("env-allow", os.Getenv("EVALSCHED_ENV_ALLOW"),
		"the deployment's env allowlist `NAMES`: comma-separated names and PREFIX_* prefixes (default $EVALSCHED_ENV_ALLOW; empty: none)")
}
