package batchmsg

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FieldFlags are a batch's fields as command-line flags, for JSON Lines of
// jobs, which carry none of their batch's fields (evalsched submit). The
// rules on their values are Parse's, checked on every part; Fields checks
// only what the flags themselves must agree on.
type FieldFlags struct {
	fs                                                            *flag.FlagSet
	account, project, batch, model, tier, taskDefinition, timeout *string
	maxAttempts                                                   *int
	moe, confidence                                               *float64
	minPerStratum, window                                         *int
	stratumField                                                  *string
}

// AddFlags adds the batch's fields to fs.
func AddFlags(fs *flag.FlagSet) *FieldFlags {
	return &FieldFlags{
		fs:             fs,
		account:        fs.String("account", "", "JSON Lines: the batch's `account`; required"),
		project:        fs.String("project", "", "JSON Lines: the batch's `project`; required"),
		batch:          fs.String("batch", "", "JSON Lines: the batch's `name`; required"),
		model:          fs.String("model", "", "JSON Lines: the `model` of jobs naming none"),
		tier:           fs.String("tier", "", "JSON Lines: the batch's `tier`, 0 most urgent (default: the deployment's)"),
		taskDefinition: fs.String("task-definition", "", "JSON Lines: ECS task definition `family[:revision]` (default: the deployment's)"),
		timeout:        fs.String("timeout", "", "JSON Lines: stop a job after `T`: seconds, or a duration such as 2h"),
		maxAttempts:    fs.Int("max-attempts", 0, "JSON Lines: launches lost to infrastructure a job may take, `N` of 1..10 (default 3)"),
		moe:            fs.Float64("moe", 0, "JSON Lines, sampled: stop once the pass rate is known to ±`M` (0.001..0.5); with --confidence"),
		confidence:     fs.Float64("confidence", 0, "JSON Lines, sampled: the `C` of the stop rule's interval (0.5..0.999); with --moe"),
		minPerStratum:  fs.Int("min-per-stratum", 0, "JSON Lines, sampled: results every stratum needs before a stop, `N` (default 30)"),
		window:         fs.Int("window", 0, "JSON Lines, sampled: claims the batch may hold past its counted results, `N` (0..1000000; default 0, no cap: docs/sampling.md)"),
		stratumField:   fs.String("stratum-field", "", "JSON Lines, sampled: each job's stratum is its line's `FIELD` (a top-level field, or env.NAME)"),
	}
}

// FlagNames names the flag that sets a message field, for Lines.FieldNames.
var FlagNames = map[string]string{
	"account": "--account", "project": "--project", "batch": "--batch", "model": "--model", "tier": "--tier",
	"task_definition": "--task-definition", "timeout_seconds": "--timeout", "max_attempts": "--max-attempts",
	"sampling.moe": "--moe", "sampling.confidence": "--confidence", "sampling.min_per_stratum": "--min-per-stratum",
	"sampling.window": "--window",
}

// Given lists the batch's flags given on the command line, as "--name".
func (f *FieldFlags) Given() []string {
	var set []string
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "account", "project", "batch", "model", "tier", "task-definition", "timeout", "max-attempts",
			"moe", "confidence", "min-per-stratum", "window", "stratum-field":
			set = append(set, "--"+fl.Name)
		}
	})
	return set
}

// StratumField is --stratum-field, for Lines.StratumField.
func (f *FieldFlags) StratumField() string { return *f.stratumField }

// Fields builds the batch's fields from the flags.
func (f *FieldFlags) Fields() (Fields, error) {
	var missing []string
	for _, r := range []struct{ flag, v string }{{"--account", *f.account}, {"--project", *f.project}, {"--batch", *f.batch}} {
		if r.v == "" {
			missing = append(missing, r.flag)
		}
	}
	if missing != nil {
		return Fields{}, fmt.Errorf("JSON Lines of jobs need the batch's %s", strings.Join(missing, ", "))
	}
	h := Fields{Version: Version, Account: *f.account, Project: *f.project, Batch: *f.batch,
		Model: *f.model, TaskDefinition: *f.taskDefinition, MaxAttempts: *f.maxAttempts}
	if *f.tier != "" {
		n, err := strconv.Atoi(*f.tier)
		if err != nil {
			return Fields{}, fmt.Errorf("--tier: %q is not an integer", *f.tier)
		}
		h.Tier = &n
	}
	if *f.timeout != "" {
		s, err := seconds(*f.timeout)
		if err != nil {
			return Fields{}, fmt.Errorf("--timeout: %v", err)
		}
		h.TimeoutSeconds = s
	}
	set := f.Given()
	given := func(flag string) bool { return slices.Contains(set, flag) }
	switch {
	case given("--moe") != given("--confidence"):
		return Fields{}, errors.New("a sampled batch needs both --moe and --confidence")
	case given("--moe"):
		h.Sampling = &SamplingField{MOE: *f.moe, Confidence: *f.confidence}
		if given("--min-per-stratum") {
			if *f.minPerStratum < 1 {
				return Fields{}, fmt.Errorf("--min-per-stratum: %d is below 1", *f.minPerStratum)
			}
			h.Sampling.MinPerStratum = *f.minPerStratum
		}
		h.Sampling.Window = *f.window // its range is Parse's (sampling.window, named --window)
	case given("--window"):
		return Fields{}, errors.New("--window applies to a sampled batch: give --moe and --confidence")
	case given("--min-per-stratum") || given("--stratum-field"):
		return Fields{}, errors.New("--min-per-stratum and --stratum-field apply to a sampled batch: give --moe and --confidence")
	}
	return h, nil
}

// seconds reads "3600" or "1h": whole seconds.
func seconds(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d%time.Second != 0 {
		return 0, fmt.Errorf("%q is not whole seconds (3600) or a duration (1h)", s)
	}
	return int(d / time.Second), nil
}
