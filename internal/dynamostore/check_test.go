package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/evalsched/evalsched/internal/job"
)

// tableDump is every item of a state table, decoded by kind.
type tableDump struct {
	jobs     map[string]jobItem // by id
	queues   map[string]queueItem
	chunks   map[string][]chunkItem // by queue pk, in start order
	backs    map[string][]backItem  // by queue pk
	counters map[string]countersItem
	inflight map[string]string   // job id → its inflight attribute, where set
	projects map[string]int64    // project pk → running (none expected)
	waits    map[string]waitItem // by "pk sk"
	released map[string]int64    // by "SAMPLED#… STRATUM#…"
}

// dump scans the state table (tests only: a scan reads every job), past
// any failure injected in the store's client.
func dump(t testing.TB, s *Store) tableDump {
	t.Helper()
	items, err := New(client, s.tables, defaults()).scan(context.Background(), s.tables.State)
	if err != nil {
		t.Fatal(err)
	}
	d := tableDump{jobs: map[string]jobItem{}, queues: map[string]queueItem{}, chunks: map[string][]chunkItem{},
		backs: map[string][]backItem{}, counters: map[string]countersItem{}, inflight: map[string]string{}, projects: map[string]int64{},
		waits: map[string]waitItem{}, released: map[string]int64{}}
	for _, it := range items {
		pk, sk := text(it[attrPK]), text(it[attrSK])
		var err error
		switch {
		case sk == skJob:
			var j jobItem
			err = attributevalue.UnmarshalMap(it, &j)
			d.jobs[j.ID] = j
			if v := text(it[attrInflight]); v != "" {
				d.inflight[j.ID] = v
			}
		case sk == skQueue:
			var q queueItem
			err = attributevalue.UnmarshalMap(it, &q)
			d.queues[pk] = q
		case strings.HasPrefix(sk, chunkPrefix):
			var c chunkItem
			err = attributevalue.UnmarshalMap(it, &c)
			d.chunks[pk] = append(d.chunks[pk], c)
		case strings.HasPrefix(pk, waitPrefix):
			var w waitItem
			err = attributevalue.UnmarshalMap(it, &w)
			d.waits[pk+" "+sk] = w
		case strings.HasPrefix(pk, sampledPrefix) && strings.HasPrefix(sk, stratumPrefix):
			n, _ := integer(it[attrReleased])
			d.released[pk+" "+sk] = n
		case strings.HasPrefix(sk, backPrefix):
			var b backItem
			err = attributevalue.UnmarshalMap(it, &b)
			d.backs[pk] = append(d.backs[pk], b)
		case sk == skCounters && strings.HasPrefix(pk, "MODEL#"):
			var c countersItem
			err = attributevalue.UnmarshalMap(it, &c)
			d.counters[c.Model] = c
		case sk == skCounters && strings.HasPrefix(pk, "PROJECT#"):
			var n struct {
				Running int64 `dynamodbav:"running"`
			}
			err = attributevalue.UnmarshalMap(it, &n)
			d.projects[pk] = n.Running
		}
		if err != nil {
			t.Fatalf("decode %s/%s: %v", pk, sk, err)
		}
	}
	for pk := range d.chunks {
		slices.SortFunc(d.chunks[pk], func(a, b chunkItem) int { return int(a.Start - b.Start) })
	}
	return d
}

// check recounts every counter from the job items and checks that every
// waiting job can be claimed: the invariants memstore.Check asserts, plus
// the layout's own (cursor, chunks, back items, active index, pending).
func check(t testing.TB, s *Store) {
	t.Helper()
	if err := checkErr(dump(t, s)); err != nil {
		t.Fatal(err)
	}
}

func checkErr(d tableDump) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	waiting := map[string]int64{}
	released := map[string]int64{}
	for _, id := range slices.Sorted(maps.Keys(d.jobs)) {
		j := d.jobs[id]
		if j.Stratum != "" {
			// A sampled batch's waiting job has its wait item (else no
			// claim finds it); its claimed and ended ones count as
			// released in their stratum.
			w := waitOf(j, j.Attempt)
			rel := sampledPK(j.batchID()) + " " + stratumPrefix + j.Stratum
			switch j.State {
			case job.Waiting:
				if got, ok := d.waits[w.PK+" "+w.SK]; !ok || got.ID != j.ID {
					fail("sampled job %s waits without its wait item: lost", j.Key)
				}
			case job.Claimed, job.Launched, job.Running, job.Succeeded, job.Failed:
				released[rel]++
			case job.Cancelled:
				if j.ClaimedAt != "" { // stopped by an operator once claimed
					released[rel]++
				}
			}
			if _, ok := released[rel]; !ok {
				released[rel] = 0
			}
		}
		// A model's slots are its jobs in the inflight index (Snapshot
		// counts them there): exactly the jobs claimed, launched or
		// running, each with the claim's time (PendingRaise reads it).
		holds := j.State == job.Claimed || j.State == job.Launched || j.State == job.Running
		if got := d.inflight[j.ID]; holds && got != inflightShard(j.ID) {
			fail("job %s is %s with inflight %q, want %q: its slot is not counted", j.Key, j.State, got, inflightShard(j.ID))
		} else if !holds && got != "" {
			fail("job %s is %s but still in the inflight index: it holds a slot it left", j.Key, j.State)
		}
		if holds && j.ClaimedAt == "" {
			fail("job %s is %s without claimed_at", j.Key, j.State)
		}
		if j.State == job.Waiting {
			waiting[j.Queue]++
		}
	}
	for pk := range d.projects {
		fail("%s: a project counters item (the task events no longer keep one: ProjectRunning counts the inflight index)", pk)
	}
	for k, n := range released {
		if d.released[k] != n {
			fail("%s: released counter %d, recount %d", k, d.released[k], n)
		}
	}
	for _, pk := range slices.Sorted(maps.Keys(d.queues)) {
		q := d.queues[pk]
		if q.Waiting != waiting[pk] {
			fail("queue %s: waiting counter %d, recount %d", pk, q.Waiting, waiting[pk])
		}
		if (q.Active != "") != (q.Waiting > 0) {
			fail("queue %s: active %q with %d waiting", pk, q.Active, q.Waiting)
		}
		if q.Next > q.Size || q.Next < 0 {
			fail("queue %s: cursor %d outside 0..%d", pk, q.Next, q.Size)
		}
		if int64(len(d.backs[pk])) != q.Backs {
			fail("queue %s: backs counter %d, %d back items", pk, q.Backs, len(d.backs[pk]))
		}
		// Chunks cover [0, size) exactly, each id's job at its place, each
		// starting at a multiple of chunkSize (claims read them by key).
		var pos int64
		for _, c := range d.chunks[pk] {
			if c.Start%chunkSize != 0 {
				fail("queue %s: chunk at %d, not aligned to %d", pk, c.Start, chunkSize)
			}
			if c.Start != pos {
				fail("queue %s: chunk at %d, want one at %d", pk, c.Start, pos)
				break
			}
			for i, id := range c.IDs {
				if j, ok := d.jobs[id]; !ok || j.Queue != pk || j.Pos != c.Start+int64(i) {
					fail("queue %s: chunk lists %s at %d, its job is at %s/%d", pk, id, c.Start+int64(i), j.Queue, j.Pos)
				}
			}
			pos += int64(len(c.IDs))
		}
		if pos != q.Size {
			fail("queue %s: chunks cover %d positions, size is %d", pk, pos, q.Size)
		}
		back := map[int64]backItem{}
		for _, b := range d.backs[pk] {
			back[b.Pos] = b
			j := d.jobs[b.ID]
			if j.State != job.Waiting || j.Pos != b.Pos || j.Attempt != b.Attempt || b.Pos >= q.Next {
				fail("queue %s: back item at %d for job %s in %s at %d attempt %d", pk, b.Pos, j.Key, j.State, j.Pos, j.Attempt)
			}
		}
		// Every waiting job can be claimed: past the cursor, or a back item.
		// Nothing past the cursor ever left WAITING: only the cursor's own
		// move claims or cancels there, so a job claimed past it means the
		// cursor moved back (a claim written from a stale read).
		for _, j := range d.jobs {
			if j.Queue == pk && !q.Sampled && j.State == job.Waiting && j.Pos < q.Next {
				if _, ok := back[j.Pos]; !ok {
					fail("queue %s: job %s waits at %d behind the cursor %d with no back item: lost", pk, j.Key, j.Pos, q.Next)
				}
			}
			// A sampled batch's stop skips jobs past the cursor, leaving it;
			// its claims leave the cursor (release.go).
			if j.Queue == pk && !q.Sampled && j.State != job.Waiting && j.State != job.Skipped && j.Pos >= q.Next {
				fail("queue %s: job %s is %s at %d, past the cursor %d: the cursor moved back", pk, j.Key, j.State, j.Pos, q.Next)
			}
		}
	}
	return errors.Join(errs...)
}

// counts returns the jobs per state.
func counts(t testing.TB, s *Store) map[job.State]int {
	t.Helper()
	out := map[job.State]int{}
	for _, j := range dump(t, s).jobs {
		out[j.State]++
	}
	return out
}
