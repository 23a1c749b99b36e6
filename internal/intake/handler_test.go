package intake_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/evalsched/evalsched/internal/intake"
)

// The records of events/sqs-mixed.json.
const (
	idGood      = "6f1c3a52-0b7e-4d2a-9c41-000000000001" // sweep-17: 3 jobs, two models
	idBad       = "6f1c3a52-0b7e-4d2a-9c41-000000000002" // six rules broken
	idDuplicate = "6f1c3a52-0b7e-4d2a-9c41-000000000003" // idGood's body, sent again
	idFlaky     = "6f1c3a52-0b7e-4d2a-9c41-000000000004" // 2 jobs of batch flaky
	idConflict  = "6f1c3a52-0b7e-4d2a-9c41-000000000005" // task-000123's env changed, task-000126 new
	idNotJSON   = "6f1c3a52-0b7e-4d2a-9c41-000000000006"
	idVersion2  = "6f1c3a52-0b7e-4d2a-9c41-000000000007"

	sweep17 = "acme/search-evals/2026-11-29-sweep-17"
	flaky   = "acme/search-evals/2026-11-29-flaky"
)

// badReason is idBad's reason: every rule it breaks, in the message's order.
const badReason = `account: "acme corp" has characters outside A-Z a-z 0-9 . _ : / -; ` +
	`tier: 7 is outside 0..2; ` +
	`max_attempts: 0 is outside 1..10; ` +
	`jobs[0]: unknown field "evn"; ` +
	`jobs[1].key: "k1" duplicates jobs[0].key; ` +
	`jobs[2].env.AWS_REGION: refused by the env policy (AWS_*: the AWS SDKs' credentials, endpoints and CA bundle)`

// conflictReason is idConflict's reason: the field that differs from the
// stored job.
const conflictReason = `jobs[0].env: differs from the stored job "task-000123" in TASK_ID`

// TestMixedDelivery: one delivery with good, bad, duplicate, conflicting and
// transiently failing messages. The good ones are stored once, the bad and
// the conflicting ones are in the dead-letter queue with their reasons (the
// conflicting one's jobs not stored, the stored ones unchanged), and only
// the transient failure is reported for redelivery; redelivered, it is
// stored.
func TestMixedDelivery(t *testing.T) {
	r := newRig(t)
	r.h.Store = &throttledOnce{Submitter: r.store, batch: "2026-11-29-flaky"}

	resp := r.invoke(fixture(t, "sqs-mixed.json"))

	if got, want := failures(resp), []string{idFlaky}; !slices.Equal(got, want) {
		t.Errorf("batch item failures %v, want %v (just the transient one)", got, want)
	}
	// The template's IntakeRole must allow what the intake calls; a message
	// of a batch with stored jobs (a redelivery, a conflict, a later part)
	// reads its queue with GetItem.
	if got, want := r.db.operations(), []string{"BatchGetItem", "BatchWriteItem", "GetItem", "Query", "TransactWriteItems", "UpdateItem"}; !slices.Equal(got, want) {
		t.Errorf("DynamoDB operations %v, want %v (update the template's IntakeRole)", got, want)
	}
	want := map[string]int{sweep17 + " gpt-5.5": 2, sweep17 + " claude-opus-4.8": 1}
	if got := r.waiting(); !maps.Equal(got, want) {
		t.Errorf("waiting jobs %v, want %v (nothing of the conflicting message)", got, want)
	}
	if env := r.job("acme", "search-evals", "2026-11-29-sweep-17", "task-000123").Env; env["TASK_ID"] != "000123" {
		t.Errorf("conflicting job task-000123 has env %v, want it unchanged (TASK_ID 000123)", env)
	}
	if j := r.job("acme", "search-evals", "2026-11-29-sweep-17", "task-000124"); j.Model != "claude-opus-4.8" || j.MaxAttempts != 3 {
		t.Errorf("task-000124: model %s, max attempts %d; want claude-opus-4.8, 3", j.Model, j.MaxAttempts)
	}
	if tiers := r.tiers(); tiers[sweep17+" gpt-5.5"] != 1 || tiers[sweep17+" claude-opus-4.8"] != 1 {
		t.Errorf("submitted tiers %v, want 1 (the message's)", tiers)
	}

	// The dead-letter queue holds the three invalid messages and the
	// conflicting one, bodies unchanged, each with its reason.
	ev := fixtureEvent(t, "sqs-mixed.json")
	bodies := map[string]string{}
	for _, rec := range ev.Records {
		bodies[rec.MessageId] = rec.Body
	}
	dead := r.deadLetters()
	if got := slices.Sorted(maps.Keys(dead)); !slices.Equal(got, []string{idBad, idConflict, idNotJSON, idVersion2}) {
		t.Fatalf("dead letters from %v, want %v", got, []string{idBad, idConflict, idNotJSON, idVersion2})
	}
	for id, wantReason := range map[string]string{
		idBad:      badReason,
		idConflict: conflictReason,
		idNotJSON:  "message: ",
		idVersion2: "version: 2 is not a supported version (only 1)",
	} {
		m := dead[id]
		if aws.ToString(m.Body) != bodies[id] {
			t.Errorf("%s: dead-lettered body %q, want the original %q", id, aws.ToString(m.Body), bodies[id])
		}
		reason := aws.ToString(m.MessageAttributes[intake.AttrReason].StringValue)
		if id == idNotJSON && strings.HasPrefix(reason, wantReason) || reason == wantReason {
			continue
		}
		t.Errorf("%s: reason %q, want %q", id, reason, wantReason)
	}

	// Counted in the metrics, and logged with the message id and reason.
	if got, want := r.counts(), (intake.Counts{Messages: 7, Jobs: 3, Rejected: 3, Conflicts: 1, Retried: 1}); got != want {
		t.Errorf("metrics %+v, want %+v", got, want)
	}
	var rejected, conflicts []string
	for _, l := range r.logLines() {
		switch l["msg"] {
		case "message rejected to the dead-letter queue":
			rejected = append(rejected, l["message_id"].(string))
			if l["message_id"] == idBad && l["reason"] != badReason {
				t.Errorf("log of %s: reason %q, want %q", idBad, l["reason"], badReason)
			}
		case "message conflicts with its stored batch: to the dead-letter queue, nothing stored":
			conflicts = append(conflicts, l["message_id"].(string))
			if l["batch"] != sweep17 || l["reason"] != conflictReason {
				t.Errorf("conflict log %v: want the batch and the reason %q", l, conflictReason)
			}
		}
	}
	if !slices.Equal(rejected, []string{idBad, idNotJSON, idVersion2}) || !slices.Equal(conflicts, []string{idConflict}) {
		t.Errorf("logged rejections %v and conflicts %v, want [%s %s %s] and [%s]", rejected, conflicts, idBad, idNotJSON, idVersion2, idConflict)
	}

	// SQS delivers the transient failure again: now it is stored.
	var again events.SQSMessage
	for _, rec := range ev.Records {
		if rec.MessageId == idFlaky {
			again = rec
		}
	}
	again.Attributes["ApproximateReceiveCount"] = "2"
	if resp := r.invoke(payload(t, again)); len(resp.BatchItemFailures) != 0 {
		t.Errorf("redelivery: batch item failures %v, want none", failures(resp))
	}
	if got := r.waiting()[flaky+" gpt-5.5"]; got != 2 {
		t.Errorf("after the redelivery: %d jobs of %s waiting, want 2", got, flaky)
	}
}

// TestDeadLetterQueueRefuses: when the dead-letter queue cannot take an
// invalid message, the record is retried rather than lost; the valid
// messages of the delivery are stored all the same.
func TestDeadLetterQueueRefuses(t *testing.T) {
	r := newRig(t)
	r.h.Config.DLQURL = strings.Replace(r.dlq, "intake-dlq", "deleted-dlq", 1) // no such queue

	resp := r.invoke(fixture(t, "sqs-mixed.json"))

	if got, want := failures(resp), []string{idBad, idConflict, idNotJSON, idVersion2}; !slices.Equal(got, want) {
		t.Errorf("batch item failures %v, want the invalid and conflicting ones %v", got, want)
	}
	want := map[string]int{sweep17 + " gpt-5.5": 2, sweep17 + " claude-opus-4.8": 1, flaky + " gpt-5.5": 2}
	if got := r.waiting(); !maps.Equal(got, want) {
		t.Errorf("waiting jobs %v, want %v", got, want)
	}
	if got, want := r.counts(), (intake.Counts{Messages: 7, Jobs: 5, Retried: 4}); got != want {
		t.Errorf("metrics %+v, want %+v", got, want)
	}
	if !strings.Contains(r.logs.String(), "The specified queue does not exist") {
		t.Errorf("logs do not name the dead-letter queue's error:\n%s", r.logs.String())
	}
}

// TestParts: the parts of a batch are each stored as they arrive, in any
// order, and their log lines name them.
func TestParts(t *testing.T) {
	r := newRig(t)
	if resp := r.invoke(fixture(t, "sqs-parts.json")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch item failures %v, want none", failures(resp))
	}
	if got := r.waiting()["acme/search-evals/2026-11-29-sweep-18 gpt-5.5"]; got != 4 {
		t.Errorf("%d jobs of sweep-18 waiting, want the 4 of both parts", got)
	}
	var parts []float64
	for _, l := range r.logLines() {
		if l["msg"] == "message stored" && l["parts"] == 2.0 {
			parts = append(parts, l["part"].(float64))
		}
	}
	if !slices.Equal(parts, []float64{2, 1}) {
		t.Errorf("stored parts logged: %v, want [2 1]", parts)
	}
	if got, want := r.counts(), (intake.Counts{Messages: 2, Jobs: 4, Parts: 2}); got != want {
		t.Errorf("metrics %+v, want %+v", got, want)
	}
}

// TestNoTimeLeft: records the invocation has no time left for are reported
// for redelivery without touching the store.
func TestNoTimeLeft(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // less than the reserve
	defer cancel()
	resp := invokeCtx(t, ctx, r.h, fixture(t, "sqs-parts.json"))
	if got := failures(resp); len(got) != 2 {
		t.Errorf("batch item failures %v, want both records", got)
	}
	if n, by := r.db.writeCalls(); n != 0 {
		t.Errorf("%d write calls %v, want none", n, by)
	}
}

// TestFIFOGroupOrder: on a FIFO queue a failed record fails the later
// records of its message group (so they are not stored out of order), and
// only those.
func TestFIFOGroupOrder(t *testing.T) {
	r := newRig(t)
	r.h.Store = &throttledOnce{Submitter: r.store, batch: "2026-11-29-flaky"}
	recs := fixtureEvent(t, "sqs-mixed.json").Records
	byID := map[string]events.SQSMessage{}
	for _, rec := range recs {
		byID[rec.MessageId] = rec
	}
	group := func(id, g string) events.SQSMessage {
		rec := byID[id]
		rec.Attributes = maps.Clone(rec.Attributes)
		rec.Attributes["MessageGroupId"] = g
		return rec
	}
	resp := r.invoke(payload(t, group(idFlaky, "a"), group(idGood, "b"), group(idConflict, "a")))
	if got, want := failures(resp), []string{idFlaky, idConflict}; !slices.Equal(got, want) {
		t.Errorf("batch item failures %v, want %v", got, want)
	}
	want := map[string]int{sweep17 + " gpt-5.5": 2, sweep17 + " claude-opus-4.8": 1}
	if got := r.waiting(); !maps.Equal(got, want) {
		t.Errorf("waiting jobs %v, want %v (group b only)", got, want)
	}
}
