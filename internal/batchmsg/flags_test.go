package batchmsg

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func fieldsOf(t *testing.T, args ...string) (Fields, error) {
	t.Helper()
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Fields()
}

func TestFieldFlags(t *testing.T) {
	h, err := fieldsOf(t, "--account", "a", "--project", "p", "--batch", "b", "--tier", "1", "--timeout", "2h",
		"--moe", "0.02", "--confidence", "0.99", "--min-per-stratum", "40", "--window", "500")
	if err != nil {
		t.Fatal(err)
	}
	if h.Account != "a" || h.Project != "p" || h.Batch != "b" || h.Tier == nil || *h.Tier != 1 || h.TimeoutSeconds != 7200 ||
		h.Sampling == nil || h.Sampling.MOE != 0.02 || h.Sampling.Confidence != 0.99 || h.Sampling.MinPerStratum != 40 || h.Sampling.Window != 500 {
		t.Errorf("fields %+v (sampling %+v)", h, h.Sampling)
	}
	if h, err := fieldsOf(t, "--account", "a", "--project", "p", "--batch", "b", "--timeout", "3600"); err != nil || h.TimeoutSeconds != 3600 || h.Sampling != nil {
		t.Errorf("plain: %+v %v", h, err)
	}
	base := []string{"--account", "a", "--project", "p", "--batch", "b"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--account", "a"}, "need the batch's --project, --batch"},
		{append(base, "--tier", "x"), `--tier: "x" is not an integer`},
		{append(base, "--timeout", "1.5s"), "not whole seconds"},
		{append(base, "--moe", "0.02"), "needs both --moe and --confidence"},
		{append(base, "--moe", "0.02", "--confidence", "0.99", "--min-per-stratum", "0"), "--min-per-stratum: 0 is below 1"},
		{append(base, "--stratum-field", "subject"), "apply to a sampled batch"},
		{append(base, "--window", "500"), "--window applies to a sampled batch"},
	} {
		if _, err := fieldsOf(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
