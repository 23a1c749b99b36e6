package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/sampling"
)

// intakeQueue starts fauxqs, creates a queue and points the SDK's settings
// at it, as a user would point them at LocalStack: the command under test
// builds its client from the environment.
func intakeQueue(t *testing.T) (*sqs.Client, string) {
	t.Helper()
	endpoint := localservers.SQS(t)
	for _, kv := range [][2]string{
		{"AWS_ENDPOINT_URL_SQS", endpoint}, {"AWS_REGION", "us-east-1"},
		{"AWS_ACCESS_KEY_ID", "local"}, {"AWS_SECRET_ACCESS_KEY", "local"}, {"AWS_SESSION_TOKEN", ""},
		{"AWS_PROFILE", ""}, {"AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none")},
		{"AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none")}, {"EVALSCHED_QUEUE_URL", ""},
	} {
		t.Setenv(kv[0], kv[1])
	}
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("intake")})
	if err != nil {
		t.Fatal(err)
	}
	return client, aws.ToString(q.QueueUrl)
}

// receiveAll takes every message off the queue.
func receiveAll(t *testing.T, client *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for {
		res, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return bodies
		}
		for _, m := range res.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
	}
}

func tempFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSubmitSplits: a 3-MiB batch of JSON Lines goes out in parts under
// 1 MiB, numbered, and every job arrives exactly once, as written.
func TestSubmitSplits(t *testing.T) {
	client, url := intakeQueue(t)
	const n = 10_000
	var b strings.Builder
	pad := strings.Repeat("p", 260)
	for i := range n {
		model := ""
		if i%1000 == 7 {
			model = `,"model":"claude-opus-4.8"`
		}
		fmt.Fprintf(&b, `{"key":"task-%06d"%s,"env":{"TASK_ID":"%06d","PROMPT":"%s"}}`+"\n", i, model, i, pad)
	}
	file := tempFile(t, "jobs.jsonl", b.String())
	if b.Len() < 3<<20 {
		t.Fatalf("the test's file is %d bytes, want at least 3 MiB", b.Len())
	}

	code, out, errs := runCLI("submit", "--queue-url", url, "--account", "acme", "--project", "search", "--batch", "b17",
		"--model", "gpt-5.5", "--tier", "1", "--timeout", "1h", file)
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	bodies := receiveAll(t, client, url)
	if want := fmt.Sprintf("sent acme/search/b17: 10,000 jobs in %d parts to %s\n%s\n", len(bodies), url, sentNote); out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if len(bodies) < 3 {
		t.Errorf("%d parts, want at least 3 for a 3-MiB batch", len(bodies))
	}
	seenPart := map[int]bool{}
	seenKey := map[string]int{}
	for _, body := range bodies {
		if len(body) > batchmsg.MaxMessageBytes {
			t.Errorf("a part of %d bytes, over 1 MiB", len(body))
		}
		m, err := batchmsg.Parse([]byte(body), batchmsg.DefaultConfig())
		if err != nil {
			t.Fatalf("a part the intake would reject: %v", err)
		}
		if m.Parts != len(bodies) || m.Part < 1 || m.Part > m.Parts || seenPart[m.Part] {
			t.Errorf("part %d of %d (seen before: %v), want each of 1..%d once", m.Part, m.Parts, seenPart[m.Part], len(bodies))
		}
		seenPart[m.Part] = true
		if m.ID() != "acme/search/b17" || m.Model != "gpt-5.5" || m.Tier == nil || *m.Tier != 1 || m.TimeoutSeconds != 3600 {
			t.Errorf("part %d: batch %s model %s tier %v timeout %d, want the flags'", m.Part, m.ID(), m.Model, m.Tier, m.TimeoutSeconds)
		}
		for _, j := range m.Jobs {
			seenKey[j.Key]++
			var i int
			fmt.Sscanf(j.Key, "task-%06d", &i)
			wantModel := ""
			if i%1000 == 7 {
				wantModel = "claude-opus-4.8"
			}
			if j.Env["TASK_ID"] != fmt.Sprintf("%06d", i) || j.Env["PROMPT"] != pad || j.Model != wantModel {
				t.Fatalf("job %s arrived as %+v", j.Key, j)
			}
		}
	}
	if len(seenKey) != n {
		t.Errorf("%d distinct jobs arrived, want %d", len(seenKey), n)
	}
	for k, c := range seenKey {
		if c != 1 {
			t.Errorf("job %s arrived %d times", k, c)
		}
	}
}

// TestSubmitBadLines: a broken line is named by its number and field, and
// nothing is sent.
func TestSubmitBadLines(t *testing.T) {
	client, url := intakeQueue(t)
	lines := []string{
		`{"key":"k1","env":{"TASK_ID":"1"}}`,
		`{"key":"k2"}`,
		`{"key":"k3","evn":{"TASK_ID":"3"}}`,
		``,
		`{"key":"bad key"}`,
		`{"key":"k6","env":{"AWS_REGION":"x"}}`,
		`{"key":"k7",`,
		`{"key":"k1"}`,
		`["k9"]`,
	}
	file := tempFile(t, "jobs.jsonl", strings.Join(lines, "\n"))
	code, out, errs := runCLI("submit", "--queue-url", url, "--account", "acme", "--project", "search", "--batch", "b1", "--model", "m", file)
	if code != exitFailed || out != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	at := -1 // in line order, whichever check found each
	for _, want := range []string{
		file + `:3: unknown field "evn"`,
		file + `:5: key: "bad key" has characters outside A-Z a-z 0-9 . _ : / -`,
		file + `:6: env.AWS_REGION: refused by the env policy (AWS_*: the AWS SDKs' credentials, endpoints and CA bundle)`,
		file + `:7: invalid JSON: `,
		file + `:8: key: "k1" duplicates line 1`,
		file + `:9: must be a JSON object (a job), not ["k9"]`,
	} {
		i := strings.Index(errs, want)
		if i < 0 {
			t.Errorf("stderr does not name %q:\n%s", want, errs)
		} else if i < at {
			t.Errorf("%q comes before the line above it:\n%s", want, errs)
		}
		at = max(at, i)
	}
	if got := receiveAll(t, client, url); len(got) != 0 {
		t.Errorf("%d messages sent, want none", len(got))
	}

	// A batch field is named by its flag; a rule on the jobs by the line.
	file = tempFile(t, "nomodel.jsonl", `{"key":"a","model":"m"}`+"\n"+`{"key":"b"}`+"\n")
	code, _, errs = runCLI("submit", "--queue-url", url, "--account", "acme", "--project", "search", "--batch", "b2", "--tier", "5", file)
	for _, want := range []string{
		file + ": --tier: 5 is outside 0..2",
		file + ": --model: required unless every job names one (line 2 names none)",
	} {
		if code != exitFailed || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs, want)
		}
	}
}

// TestSubmitMessage: a batch message is checked and sent as it is.
func TestSubmitMessage(t *testing.T) {
	client, url := intakeQueue(t)
	file := tempFile(t, "message.json", goodMessage)
	t.Setenv("EVALSCHED_QUEUE_URL", url)
	code, out, errs := runCLI("submit", file)
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if want := "sent acme/search-evals/2026-11-29-sweep-17: 2 jobs in 1 part to " + url + "\n" + sentNote + "\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if got := receiveAll(t, client, url); len(got) != 1 || got[0] != goodMessage {
		t.Errorf("received %q, want the message unchanged", got)
	}

	file = tempFile(t, "bad.json", badMessage)
	code, _, errs = runCLI("submit", file)
	if code != exitFailed || !strings.Contains(errs, file+`: account: "acme corp" has characters outside`) {
		t.Errorf("exit %d, stderr %q; want 1 naming the field and the rule", code, errs)
	}
}

// TestSubmitSendFails: a refused send stops with exit 1 and says what was
// sent and that sending again is safe.
func TestSubmitSendFails(t *testing.T) {
	_, url := intakeQueue(t)
	file := tempFile(t, "message.json", goodMessage)
	code, out, errs := runCLI("submit", "--queue-url", url+"-missing", file)
	if code != exitFailed || out != "" || !strings.Contains(errs, "send part 1 of 1") ||
		!strings.Contains(errs, "0 of 1 part were sent (0 jobs); sending "+file+" again is safe") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestSubmitDryRun(t *testing.T) {
	var b strings.Builder
	for i := range 25_000 {
		fmt.Fprintf(&b, `{"key":"k%d"}`+"\n", i)
	}
	file := tempFile(t, "jobs.jsonl", b.String())
	code, out, errs := runCLI("submit", "--dry-run", "--account", "a", "--project", "p", "--batch", "b", "--model", "m", file)
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	want := "part 1 of 3: 10,000 jobs, 158,983 bytes\n" +
		"part 2 of 3: 10,000 jobs, 170,093 bytes\n" +
		"part 3 of 3: 5,000 jobs, 85,093 bytes\n" +
		"would send a/p/b: 25,000 jobs in 3 parts (dry run: nothing sent)\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
}

func TestSubmitUsage(t *testing.T) {
	lines := tempFile(t, "jobs.jsonl", `{"key":"k"}`+"\n")
	message := tempFile(t, "message.json", goodMessage)
	t.Setenv("EVALSCHED_QUEUE_URL", "")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"submit", "--queue-url", "q"}, "want one FILE"},
		{"no queue", []string{"submit", lines}, "--queue-url (or EVALSCHED_QUEUE_URL) is required"},
		{"no account", []string{"submit", "--queue-url", "q", "--project", "p", "--batch", "b", lines}, "need the batch's --account"},
		{"flags on a message", []string{"submit", "--queue-url", "q", "--tier", "1", message}, "message.json is a batch message, which names its own fields: --tier apply to JSON Lines"},
		{"bad timeout", []string{"submit", "--dry-run", "--account", "a", "--project", "p", "--batch", "b", "--timeout", "1.5s", lines}, `--timeout: "1.5s" is not whole seconds`},
		{"unknown flag", []string{"submit", "--acount", "a", lines}, "flag provided but not defined"},
		{"moe alone", []string{"submit", "--dry-run", "--account", "a", "--project", "p", "--batch", "b", "--moe", "0.02", lines}, "a sampled batch needs both --moe and --confidence"},
		{"stratum field alone", []string{"submit", "--dry-run", "--account", "a", "--project", "p", "--batch", "b", "--stratum-field", "s", lines}, "--min-per-stratum and --stratum-field apply to a sampled batch"},
		{"sampling on a message", []string{"submit", "--queue-url", "q", "--moe", "0.02", message}, "names its own fields: --moe apply to JSON Lines"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(c.args...)
			if code != exitUsage || !strings.Contains(out+errs, c.want) {
				t.Errorf("exit %d, output %q%q; want exit 2 and %q", code, out, errs, c.want)
			}
		})
	}
}

// TestSubmitSampled: JSON Lines with --moe, --confidence,
// --min-per-stratum and --window go out as a sampled batch, every part with the same
// sampling; --stratum-field takes each job's stratum from a field of its
// line (moved into "stratum") or from its env (kept there). A line
// without the field, or a sampling flag out of range, is named and
// nothing is sent.
func TestSubmitSampled(t *testing.T) {
	client, url := intakeQueue(t)
	const n = 6_000
	var b strings.Builder
	subjects := []string{"math", "law", "bio"}
	pad := strings.Repeat("q", 200)
	for i := range n {
		fmt.Fprintf(&b, `{"key":"q%05d","subject":"%s","env":{"Q":"%s","LEVEL":"%d"}}`+"\n", i, subjects[i%3], pad, i%4)
	}
	file := tempFile(t, "questions.jsonl", b.String())
	code, _, errs := runCLI("submit", "--queue-url", url, "--account", "lab", "--project", "mmlu", "--batch", "run7", "--model", "m",
		"--moe", "0.015", "--confidence", "0.99", "--min-per-stratum", "40", "--window", "500", "--stratum-field", "subject", file)
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	bodies := receiveAll(t, client, url)
	if len(bodies) < 2 {
		t.Fatalf("%d parts, want the 1.4-MB file split", len(bodies))
	}
	want := sampling.Params{MOE: 0.015, Confidence: 0.99, MinPerStratum: 40, Window: 500}
	seen := 0
	for _, body := range bodies {
		m, err := batchmsg.Parse([]byte(body), batchmsg.DefaultConfig())
		if err != nil {
			t.Fatalf("a part the intake would reject: %v", err)
		}
		if m.Sampling == nil || *m.Sampling != want {
			t.Errorf("part %d: sampling %+v, want %+v", m.Part, m.Sampling, want)
		}
		for _, j := range m.Jobs {
			var i int
			fmt.Sscanf(j.Key, "q%05d", &i)
			if j.Stratum != subjects[i%3] || j.Env["Q"] != pad {
				t.Errorf("job %s: stratum %q env %v, want %q and its env", j.Key, j.Stratum, j.Env["LEVEL"], subjects[i%3])
			}
			seen++
		}
	}
	if seen != n {
		t.Errorf("%d jobs arrived, want %d", seen, n)
	}

	// From the env: the stratum is copied, the env keeps it.
	small := tempFile(t, "env.jsonl", `{"key":"a","env":{"LEVEL":"3"}}`+"\n"+`{"key":"b","env":{"LEVEL":"1"}}`+"\n")
	code, _, errs = runCLI("submit", "--queue-url", url, "--account", "lab", "--project", "mmlu", "--batch", "run8", "--model", "m",
		"--moe", "0.05", "--confidence", "0.9", "--stratum-field", "env.LEVEL", small)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	got := receiveAll(t, client, url)
	m, err := batchmsg.Parse([]byte(got[0]), batchmsg.DefaultConfig())
	if err != nil || len(got) != 1 {
		t.Fatalf("%d messages, %v", len(got), err)
	}
	if m.Sampling.MinPerStratum != sampling.DefaultMinPerStratum || m.Jobs[0].Stratum != "3" || m.Jobs[0].Env["LEVEL"] != "3" || m.Jobs[1].Stratum != "1" {
		t.Errorf("sampling %+v, jobs %+v", *m.Sampling, m.Jobs)
	}

	// Broken: a line without the field, a number where a name goes, a
	// moe out of range; nothing is sent.
	bad := tempFile(t, "bad.jsonl", `{"key":"a","subject":"x"}`+"\n"+`{"key":"b"}`+"\n"+`{"key":"c","subject":["x"]}`+"\n")
	code, out, errs := runCLI("submit", "--queue-url", url, "--account", "lab", "--project", "mmlu", "--batch", "run9", "--model", "m",
		"--moe", "0.9", "--confidence", "0.99", "--window", "-1", "--stratum-field", "subject", bad)
	if code != exitFailed || out != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	for _, w := range []string{
		bad + ":2: subject: missing: --stratum-field names each job's stratum",
		bad + `:3: subject: must be a string or a number (the job's stratum), not ["x"]`,
		bad + ": --moe: 0.9 is outside 0.001..0.5",
		bad + ": --window: -1 is outside 0..1000000",
	} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr does not name %q:\n%s", w, errs)
		}
	}
	// Without --stratum-field a sampled batch's lines name their stratum.
	plain := tempFile(t, "plain.jsonl", `{"key":"a","stratum":"x"}`+"\n"+`{"key":"b"}`+"\n")
	code, _, errs = runCLI("submit", "--queue-url", url, "--account", "lab", "--project", "mmlu", "--batch", "run10", "--model", "m",
		"--moe", "0.05", "--confidence", "0.9", plain)
	if w := plain + ":2: stratum: required in a sampled batch"; code != exitFailed || !strings.Contains(errs, w) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs, w)
	}
	if got := receiveAll(t, client, url); len(got) != 0 {
		t.Errorf("%d messages sent, want none", len(got))
	}
}
