package intake_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/evalsched/evalsched/internal/intake"
)

// TestResubmissionConflicts: a resubmitted batch that changed a field and
// inconsistent parts each reach the dead-letter queue (fauxqs) with a
// reason naming the field, nothing of them is stored and the stored jobs
// (DynamoDB Local) stay as they were; an identical resubmission is a no-op
// that sends nothing to the dead-letter queue.
func TestResubmissionConflicts(t *testing.T) {
	type job struct {
		Key string            `json:"key"`
		Env map[string]string `json:"env,omitempty"`
	}
	msg := func(batch string, part, parts int, env string, keys ...string) string {
		m := map[string]any{"version": 1, "account": "acme", "project": "p", "batch": batch, "model": "gpt-5.5"}
		if parts > 0 {
			m["part"], m["parts"] = part, parts
		}
		var jobs []job
		for _, k := range keys {
			jobs = append(jobs, job{Key: k, Env: map[string]string{"SPLIT": env}})
		}
		m["jobs"] = jobs
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	r := newRig(t)
	n := 0
	send := func(body string) string {
		n++
		id := fmt.Sprintf("m%02d", n)
		if resp := r.invoke(payload(t, events.SQSMessage{MessageId: id, Body: body})); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s: batch item failures %v, want none", id, failures(resp))
		}
		return id
	}

	// Stored: a one-message batch of 3 jobs, and parts 1 and 2 of a 2-part batch.
	send(msg("one", 0, 0, "test", "a", "b", "c"))
	send(msg("two", 1, 2, "test", "p1"))
	send(msg("two", 2, 2, "test", "p2"))
	stored := r.waiting()
	if want := map[string]int{"acme/p/one gpt-5.5": 3, "acme/p/two gpt-5.5": 2}; !maps.Equal(stored, want) {
		t.Fatalf("waiting %v, want %v", stored, want)
	}

	// Identical resubmissions: no-ops, nothing dead-lettered.
	send(msg("one", 0, 0, "test", "a", "b", "c"))
	send(msg("two", 2, 2, "test", "p2"))

	want := map[string]string{
		send(msg("one", 0, 0, "train", "a", "b", "c")): `jobs[0].env: differs from the stored job "a" in SPLIT; ` +
			`jobs[1].env: differs from the stored job "b" in SPLIT; jobs[2].env: differs from the stored job "c" in SPLIT`,
		send(msg("two", 2, 3, "test", "p3")):    "parts: 3, but the batch was stored in 2 parts",
		send(msg("two", 2, 2, "test", "other")): "part: part 2 of this batch was stored with other jobs; a part sent again must be the same",
		send(msg("two", 0, 0, "test", "loose")): "parts: missing, but the batch was stored in 2 parts; a message without part and parts cannot join it",
	}
	dead := r.deadLetters()
	if got := slices.Sorted(maps.Keys(dead)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Fatalf("dead letters of %v, want of %v", got, slices.Sorted(maps.Keys(want)))
	}
	for id, reason := range want {
		if got := aws.ToString(dead[id].MessageAttributes[intake.AttrReason].StringValue); got != reason {
			t.Errorf("%s: reason %q, want %q", id, got, reason)
		}
	}
	if got := r.waiting(); !maps.Equal(got, stored) {
		t.Errorf("waiting %v after the conflicts, want %v as before", got, stored)
	}
	if env := r.job("acme", "p", "one", "a").Env; env["SPLIT"] != "test" {
		t.Errorf("job a's env %v, want it unchanged (SPLIT test)", env)
	}
	if parts, total, err := r.store.BatchParts(t.Context(), "acme", "p", "two"); err != nil || !slices.Equal(parts, []int{1, 2}) || total != 2 {
		t.Errorf("parts %v of %d (%v), want [1 2] of 2", parts, total, err)
	}
	if got, want := r.counts(), (intake.Counts{Messages: 9, Jobs: 5, Conflicts: 4, Parts: 3}); got != want {
		t.Errorf("metrics %+v, want %+v", got, want)
	}
}
