package batchmsg

import (
	"fmt"
	"strings"
	"testing"
)

func linesOf(ls ...string) []byte { return []byte(strings.Join(ls, "\n")) }

var acme = Fields{Version: Version, Account: "acme", Project: "search", Batch: "b1", Model: "m"}

func TestFromLinesNamesEachBrokenRuleByLine(t *testing.T) {
	data := linesOf(
		`{"key":"k1","env":{"TASK_ID":"1"}}`,
		`{"key":"k2"}`,
		`{"key":"k3","evn":{"TASK_ID":"3"}}`,
		``,
		`{"key":"bad key"}`,
		`{"key":"k6","env":{"AWS_REGION":"x"}}`,
		`{"key":"k7",`,
		`{"key":"k1"}`,
		`["k9"]`,
	)
	b, errs := FromLines(data, Lines{Name: "jobs.jsonl", Fields: acme}, DefaultConfig())
	if b != nil {
		t.Fatalf("got a batch of %d parts from broken lines, want none", len(b.Parts))
	}
	want := []string{
		`jobs.jsonl:3: unknown field "evn"`,
		`jobs.jsonl:5: key: "bad key" has characters outside A-Z a-z 0-9 . _ : / -`,
		`jobs.jsonl:6: env.AWS_REGION: refused by the env policy (AWS_*: the AWS SDKs' credentials, endpoints and CA bundle)`,
		`jobs.jsonl:7: invalid JSON: `,
		`jobs.jsonl:8: key: "k1" duplicates line 1`,
		`jobs.jsonl:9: must be a JSON object (a job), not ["k9"]`,
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(errs), len(want), strings.Join(errs, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i], w) {
			t.Errorf("error %d: got %q, want %q…", i, errs[i], w)
		}
	}
}

func TestFromLinesNamesABatchFieldAsTheSubmitterGaveIt(t *testing.T) {
	f := acme
	f.Model, f.Tier = "", new(int)
	*f.Tier = 5
	_, errs := FromLines([]byte(`{"key":"a","model":"m"}`+"\n"+`{"key":"b"}`), Lines{Name: "f", Fields: f, FieldNames: map[string]string{"tier": "--tier"}}, DefaultConfig())
	got := strings.Join(errs, "\n")
	for _, w := range []string{"f: --tier: 5 is outside 0..2", "f: model: required unless every job names one (line 2 names none)"} {
		if !strings.Contains(got, w) {
			t.Errorf("errors do not name %q:\n%s", w, got)
		}
	}
}

func TestFromLinesSplitsIntoPartsParseAccepts(t *testing.T) {
	var ls []string
	pad := strings.Repeat("q", 200)
	for i := range 6000 {
		ls = append(ls, fmt.Sprintf(`{"key":"q%05d","subject":"s%d","env":{"Q":"%s"}}`, i, i%3, pad))
	}
	f := acme
	f.Sampling = &SamplingField{MOE: 0.015, Confidence: 0.99}
	b, errs := FromLines(linesOf(ls...), Lines{Name: "q.jsonl", Fields: f, StratumField: "subject"}, DefaultConfig())
	if errs != nil {
		t.Fatalf("errors: %v", errs)
	}
	if b.ID != "acme/search/b1" || b.Jobs != 6000 || len(b.Parts) < 2 {
		t.Fatalf("got %s, %d jobs in %d parts; want acme/search/b1, 6000 jobs in at least 2", b.ID, b.Jobs, len(b.Parts))
	}
	n := 0
	for _, p := range b.Parts {
		m, err := Parse(p.Body, DefaultConfig())
		if err != nil {
			t.Fatalf("a part Parse refuses: %v", err)
		}
		if len(m.Jobs) != p.Jobs || m.Jobs[0].Stratum == "" {
			t.Errorf("part %d: %d jobs (said %d), first stratum %q", m.Part, len(m.Jobs), p.Jobs, m.Jobs[0].Stratum)
		}
		n += len(m.Jobs)
	}
	if n != 6000 {
		t.Errorf("%d jobs in the parts, want 6000", n)
	}
}

func TestFromLinesStratumField(t *testing.T) {
	f := acme
	f.Sampling = &SamplingField{MOE: 0.05, Confidence: 0.9}
	_, errs := FromLines([]byte(`{"key":"a","subject":"x"}`+"\n"+`{"key":"b"}`+"\n"+`{"key":"c","subject":["x"]}`),
		Lines{Name: "bad", Fields: f, StratumField: "subject"}, DefaultConfig())
	got := strings.Join(errs, "\n")
	for _, w := range []string{
		"bad:2: subject: missing: --stratum-field names each job's stratum",
		`bad:3: subject: must be a string or a number (the job's stratum), not ["x"]`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("errors do not name %q:\n%s", w, got)
		}
	}
	b, errs := FromLines([]byte(`{"key":"a","env":{"LEVEL":"3"}}`), Lines{Name: "env", Fields: f, StratumField: "env.LEVEL"}, DefaultConfig())
	if errs != nil {
		t.Fatal(errs)
	}
	m, err := Parse(b.Parts[0].Body, DefaultConfig())
	if err != nil || m.Jobs[0].Stratum != "3" || m.Jobs[0].Env["LEVEL"] != "3" {
		t.Errorf("env.LEVEL: jobs %+v, err %v; want stratum 3 and the env kept", m.Jobs, err)
	}
}

func TestIsMessage(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       bool
	}{
		{"m.json", `{"version":1,"account":"a"}`, true},
		{"m.json", "\n  {\"jobs\":[]}", true},
		{"j.json", `{"key":"a"}` + "\n" + `{"key":"b"}`, false},
		{"j.jsonl", `{"version":1,` + "\n" + `"jobs":[]}`, false},
		{"m.json", `{"version":1,` + "\n" + `"jobs":[]}`, true},
	} {
		if got := IsMessage([]byte(c.data), c.name); got != c.want {
			t.Errorf("IsMessage(%q, %s) = %v, want %v", c.data, c.name, got, c.want)
		}
	}
}
