// Command evalsched is the operator CLI of evalsched. Each subcommand lives
// in its own file and is listed in commands below, e.g. sim, the
// deterministic simulator (see internal/sim):
//
//	evalsched sim --scenario scenarios/seed-hot-lanes.json [--policy all] [--json] [--report FILE]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and returns the process exit code: 0 ok, 1 failed, 2 usage.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order help shows them; a new
// subcommand (submit, validate, pin, status, local) is a file with its
// command value and one line here.
var commands = []command{
	simCommand,
	simSampledCommand,
	validateCommand,
	submitCommand,
	dlqCommand,
	pinCommand,
	pauseCommand,
	resumeCommand,
	cancelCommand,
	statusCommand,
	batchesCommand,
	whyCommand,
	localCommand,
	costCommand,
	bridgeCommand,
}

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // the work failed: a bad scenario, an unwritable report
	exitUsage   = 2 // the command line is wrong
	programName = "evalsched"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand; main is a thin wrapper so tests can call it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n", programName, args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", programName)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> -h' for the flags of a command.\n", programName)
}

// flagExit is the exit code of a command line its flag set refused: 0 for
// -h (the help was asked for and printed, as flag.ErrHelp means), 2 for
// anything else. Every subcommand answers -h with it.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// parseInterspersed parses fs from args, letting flags follow the positional
// arguments too (pin SCOPE TIER --note x), and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// newFlags is a command's flag set: errors and the usage text (followed by
// the flags' defaults) go to stderr, and parsing returns its errors.
func newFlags(name string, stderr io.Writer, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}
