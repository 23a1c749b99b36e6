package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// neymanBatch has three strata of unequal size and pass rate, with a stop
// rule far enough off that no test below reaches it.
func neymanBatch() job.BatchSpec {
	b := job.BatchSpec{Account: "acme", Project: "p", Batch: "n", Model: "gpt", Tier: 1,
		Sampling: &sampling.Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 4}}
	for st, n := range map[string]int{"easy": 80, "mid": 60, "hard": 30} {
		for i := range n {
			b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("%s%03d", st, i), Stratum: st})
		}
	}
	slices.SortFunc(b.Jobs, func(x, y job.JobSpec) int { return cmpStr(x.Key, y.Key) })
	return b
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// neymanPass is a job's verdict: a fixed function of its key, easy passing
// ~95 %, mid ~50 %, hard ~10 %.
func neymanPass(key string) bool {
	rate := map[byte]uint64{'e': 95, 'm': 50, 'h': 10}[key[0]]
	return sampling.Rank("verdict", key)%100 < rate
}

func keysOf(jobs []scheduler.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Key
	}
	sort.Strings(out)
	return out
}

// TestSampledClaimsMatchMemstore: a sampled batch in DynamoDB Local and
// the same batch in memstore, granted the same counts round after round
// with the same verdicts recorded and a task lost (retried), claim the
// same jobs every round (sampling.Sequence.Next on the counted prefix,
// each stratum's jobs in rank order, the retried job first) and end with
// the same counts and the same betting interval, bit for bit, for the
// batch and each stratum. The middle stratum (pass rate near 50 %) is
// sampled at a larger share of its jobs than the easy one. (Not more jobs:
// at these shares a result without replacement says more the more of its
// stratum is seen, and the bets grow with it — sampling.Sequence.raw.)
func TestSampledClaimsMatchMemstore(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := memstore.New(scheduler.ModelConfig{})
	b := neymanBatch()
	submit(t, s, b)
	if _, err := m.Submit(ctx, b, t0); err != nil {
		t.Fatal(err)
	}
	perStratum := map[byte]int{}
	for round := range 8 {
		n := 5 + 7*round%17 // 5 … 21: several strata per grant, some rounds over maxSampledClaim together
		dj := commit(t, s, grant(t0, b, n))
		mc, err := m.Commit(ctx, grant(t0, b, n), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := keysOf(dj), keysOf(mc.Claimed); !slices.Equal(got, want) {
			t.Fatalf("round %d: DynamoDB claimed %v, memstore %v", round, got, want)
		}
		if len(dj) != n {
			t.Fatalf("round %d: claimed %d, want %d", round, len(dj), n)
		}
		token := map[string]scheduler.Job{}
		for _, j := range mc.Claimed {
			token[j.Key] = j
		}
		for i, j := range dj {
			mj := token[j.Key]
			if round == 2 && i == 0 { // its task is lost: back to waiting
				for _, err := range []error{
					s.TaskStopped(ctx, j.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0),
					m.TaskStopped(ctx, mj.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0),
				} {
					if err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			perStratum[j.Key[0]]++
			r := job.Result{Attempt: j.Attempt, Pass: neymanPass(j.Key), At: t0, Token: j.ResultToken}
			if ok, err := s.RecordResult(ctx, j.ID, r); !ok || err != nil {
				t.Fatalf("record %s: %v %v", j.Key, ok, err)
			}
			r.Token = mj.ResultToken
			if ok, err := m.RecordResult(ctx, mj.ID, r); !ok || err != nil {
				t.Fatalf("memstore: record %s: %v %v", j.Key, ok, err)
			}
		}
	}
	if float64(perStratum['m'])/60 <= float64(perStratum['e'])/80 {
		t.Errorf("claimed per stratum %v: want a larger share of mid (p≈0.5, 60 jobs) than of easy (p≈0.95, 80 jobs)", perStratum)
	}
	sb, _, err := s.Sampled(ctx, "acme/p/n")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := m.Sampled("acme/p/n")
	if sb.Estimate != mb.Estimate || len(sb.Strata) != len(mb.Strata) {
		t.Fatalf("batch: DynamoDB %+v, memstore %+v", sb.Estimate, mb.Estimate)
	}
	for i := range sb.Strata {
		if sb.Strata[i] != mb.Strata[i] {
			t.Errorf("stratum: DynamoDB %+v, memstore %+v", sb.Strata[i], mb.Strata[i])
		}
	}
	check(t, s)
}

// TestSampledPartsReleaseInOneOrder: a sampled batch sent in two parts is
// released in one rank order per stratum across both: the first claims
// after part 2 arrived take the lowest-ranked waiting jobs of the whole
// batch (as memstore does), not part 1's first.
func TestSampledPartsReleaseInOneOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := memstore.New(scheduler.ModelConfig{})
	params := &sampling.Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 1}
	part := func(n int) job.BatchSpec {
		b := job.BatchSpec{Account: "acme", Project: "p", Batch: "parts", Model: "gpt", Tier: 1, Sampling: params, Part: n, Parts: 2}
		for i := range 40 {
			b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("p%d-%02d", n, i), Stratum: "only"})
		}
		return b
	}
	for _, p := range []job.BatchSpec{part(1), part(2)} {
		submit(t, s, p)
		if _, err := m.Submit(ctx, p, t0); err != nil {
			t.Fatal(err)
		}
	}
	dj := commit(t, s, grant(t0, part(1), 20))
	mc, err := m.Commit(ctx, grant(t0, part(1), 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	mj := mc.Claimed
	var all []string
	for _, p := range []job.BatchSpec{part(1), part(2)} {
		for _, j := range p.Jobs {
			all = append(all, j.Key)
		}
	}
	slices.SortFunc(all, func(a, b string) int {
		ra, rb := sampling.Rank("acme/p/parts", a), sampling.Rank("acme/p/parts", b)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	want := slices.Sorted(slices.Values(all[:20]))
	if got := keysOf(dj); !slices.Equal(got, want) {
		t.Errorf("claimed %v, want the 20 lowest-ranked of both parts %v", got, want)
	}
	if got := keysOf(mj); !slices.Equal(got, want) {
		t.Errorf("memstore claimed %v, want %v", got, want)
	}
	fromPart2 := 0
	for _, k := range keysOf(dj) {
		if k[1] == '2' {
			fromPart2++
		}
	}
	if fromPart2 == 0 {
		t.Error("the first 20 claims took none of part 2's jobs")
	}
	check(t, s)
}

// TestSampledBatchedPathHandsOver: a sampled queue the Snapshot read goes
// to the batched claim path first; it finds the stratum on the jobs at the
// cursor and hands the grant to the sampled claim, which releases the
// lowest-ranked jobs (not the first submitted).
func TestSampledBatchedPathHandsOver(t *testing.T) {
	s, _ := newStore(t)
	b := neymanBatch()
	b.Sampling.MinPerStratum = 1
	submit(t, s, b)
	settle(t, s)
	snap := snapshot(t, s)
	plan := planFromSnapshot(t0, snap, 0)
	plan.Models[0].Grants = []scheduler.Grant{{Queue: scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: b.Model}, Tier: 1, Count: 3}}
	jobs := commitRead(t, s, plan, snap.Versions)
	strata := map[byte]bool{}
	for _, j := range jobs {
		strata[j.Key[0]] = true
	}
	if len(jobs) != 3 || len(strata) != 3 {
		t.Errorf("claimed %v, want one of each stratum (min_per_stratum 1)", keysOf(jobs))
	}
	check(t, s)
}

// smallSampled is a sampled batch of n jobs in one stratum.
func smallSampled(n int) job.BatchSpec {
	b := job.BatchSpec{Account: "acme", Project: "p", Batch: "r", Model: "gpt", Tier: 1,
		Sampling: &sampling.Params{MOE: 0.01, Confidence: 0.9, MinPerStratum: 1}}
	for i := range n {
		b.Jobs = append(b.Jobs, job.JobSpec{Key: fmt.Sprintf("r%02d", i), Stratum: "s"})
	}
	return b
}

// TestRacingSampledClaimsTakeAJobOnce: two passes' sampled claims read the
// same lowest-ranked wait item; the other claims its job first. This
// claim's transaction — conditioned on the job still WAITING at the
// attempt read — is refused; read again, it takes the next job. Each job
// is claimed once and the counters count two.
func TestRacingSampledClaimsTakeAJobOnce(t *testing.T) {
	s, c := newStore(t)
	other := otherWriter(s)
	b := smallSampled(5)
	submit(t, s, b)
	var theirs []scheduler.Job
	c.before = beforeClaimOf(queuePK(scheduler.QueueKey{Account: "acme", Project: "p", Batch: "r", Model: "gpt"}), func() {
		theirs = commit(t, other, grant(t0, b, 1))
	})
	ours := commit(t, s, grant(t0, b, 1))
	c.before = nil
	if len(ours) != 1 || len(theirs) != 1 || ours[0].ID == theirs[0].ID {
		t.Fatalf("claimed %v and %v: want one job each, not the same", keysOf(ours), keysOf(theirs))
	}
	check(t, s)
}

// TestRacingSampledClaimsTakeARetriedJobOnce: a job whose task was lost
// waits again with its place in the release log; two passes race for it
// (a retried job comes first, and its claim writes no new place, so only
// the job's own condition stands between them). One claims it.
func TestRacingSampledClaimsTakeARetriedJobOnce(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := smallSampled(5)
	submit(t, s, b)
	first := commit(t, s, grant(t0, b, 1))
	launchAll(t, s, first)
	if err := s.TaskStopped(ctx, first[0].ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	var theirs []scheduler.Job
	c.before = beforeClaimOf(queuePK(scheduler.QueueKey{Account: "acme", Project: "p", Batch: "r", Model: "gpt"}), func() {
		theirs = commit(t, other, grant(t0, b, 1))
	})
	ours := commit(t, s, grant(t0, b, 1))
	c.before = nil
	if len(theirs) != 1 || theirs[0].ID != first[0].ID || slices.ContainsFunc(ours, func(j scheduler.Job) bool { return j.ID == first[0].ID }) {
		t.Fatalf("claimed %v and %v: want the retried %s once", keysOf(ours), keysOf(theirs), first[0].Key)
	}
	check(t, s)
}

// TestSampledClaimKeepsAQueueARetryCameBackTo: a sampled claim takes the
// queue's last waiting job; between its read and its write another job's
// task is lost and that job waits again. The claim's removal of the queue
// from the active index — conditioned on the waiting count read — is
// refused; read again, it claims one and the queue stays active with the
// other.
func TestSampledClaimKeepsAQueueARetryCameBackTo(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := smallSampled(2)
	submit(t, s, b)
	first := commit(t, s, grant(t0, b, 1))
	launchAll(t, s, first)
	c.before = beforeClaimOf(queuePK(scheduler.QueueKey{Account: "acme", Project: "p", Batch: "r", Model: "gpt"}), func() {
		if err := other.TaskStopped(ctx, first[0].ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
			t.Error(err)
		}
	})
	if got := commit(t, s, grant(t0, b, 1)); len(got) != 1 {
		t.Fatalf("claimed %d, want 1", len(got))
	}
	c.before = nil
	waiting := 0
	for _, q := range snapshot(t, s).Queues {
		if q.Batch == "r" {
			waiting = q.Waiting
		}
	}
	if waiting != 1 {
		t.Errorf("the snapshot shows %d waiting in the queue, want the one job left", waiting)
	}
	check(t, s)
}

// TestStaleWaitItemKeepsARetryPutBackMeanwhile: a claimed job's wait item
// was written again (a message redelivered after a crash), so a claim
// finds it stale; between the claim's read and its delete, the job's task
// is lost and the retry puts the job's wait item back (same key, attempt
// 2). The delete — conditioned on the attempt read — leaves it: the job
// waits where claims look, and the claim goes on to take it.
func TestStaleWaitItemKeepsARetryPutBackMeanwhile(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := smallSampled(3)
	submit(t, s, b)
	x := commit(t, s, grant(t0, b, 1))[0]
	launchAll(t, s, []scheduler.Job{x})
	redelivered := b
	redelivered.Jobs = []job.JobSpec{{Key: x.Key, Stratum: "s"}}
	if err := s.putWaits(ctx, redelivered); err != nil {
		t.Fatal(err)
	}
	c.before = once("DeleteItem", func() {
		if err := other.TaskStopped(ctx, x.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
			t.Error(err)
		}
	})
	got := commit(t, s, grant(t0, b, 1))
	c.before = nil
	if len(got) != 1 || got[0].ID != x.ID || got[0].Attempt != 2 {
		t.Errorf("claimed %+v, want %s at attempt 2 (the lowest rank, retried)", got, x.Key)
	}
	check(t, s)
}

// TestSampledCancelThenRetry: a cancel walks a sampled queue's cursor and
// cancels every waiting job, leaving their wait items stale. A job claimed
// before the cancel is then retried: the next claim deletes the stale items
// it meets (its stratum's lowest ranks) and takes the retried job.
func TestSampledCancelThenRetry(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	b := smallSampled(30)
	submit(t, s, b)
	running := commit(t, s, grant(t0, b, 3))
	launchAll(t, s, running)
	n, err := s.Cancel(ctx, scheduler.Scope{Account: "acme", Project: "p", Batch: "r"}, t0)
	if err != nil || n != 27 {
		t.Fatalf("cancelled %d, %v; want 27", n, err)
	}
	check(t, s)
	last := running[len(running)-1]
	if err := s.TaskStopped(ctx, last.ID, 1, job.Exit{Infrastructure: true, Reason: "spot"}, t0); err != nil {
		t.Fatal(err)
	}
	got := commit(t, s, grant(t0, b, 5))
	if len(got) != 1 || got[0].ID != last.ID || got[0].Attempt != 2 {
		t.Errorf("claimed %+v, want only the retried %s at attempt 2", keysOf(got), last.Key)
	}
	if got := commit(t, s, grant(t0, b, 5)); len(got) != 0 {
		t.Errorf("claimed %v of a cancelled batch", keysOf(got))
	}
	check(t, s)
}

// TestSampledClaimCost: claiming 12 jobs of a sampled batch over its 3
// strata costs a fixed handful of requests — O(strata), whatever the
// batch's size: the queue (twice: take's read, then the sampled claim's),
// the batch's parts, one Query of its counts and one per stratum, one
// BatchGetItem of the jobs, one claim transaction (and the plan's state,
// one UpdateItem).
func TestSampledClaimCost(t *testing.T) {
	s, c := newStore(t)
	b := neymanBatch()
	submit(t, s, b)
	c.reset()
	if got := commit(t, s, grant(t0, b, 12)); len(got) != 12 {
		t.Fatalf("claimed %d, want 12", len(got))
	}
	st := c.stats()
	want := map[string]int{"GetItem": 2, "Query": 4, "BatchGetItem": 1, "TransactWriteItems": 1, "UpdateItem": 1}
	if fmt.Sprint(st.ByOp) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", st.ByOp, want)
	}
}

// TestSampledClaimLostAnswer: the claim transaction is applied but its
// answer is lost; the claim recognises its own token on the queue item
// and returns the jobs, claimed once.
func TestSampledClaimLostAnswer(t *testing.T) {
	s, c := newStore(t)
	b := smallSampled(10)
	submit(t, s, b)
	c.reset()
	c.before = func(op string, _ any) { // runs before the call is counted
		c.mu.Lock()
		defer c.mu.Unlock()
		if op == "TransactWriteItems" && c.byOp["TransactWriteItems"] == 0 { // the claim (the plan's state is an UpdateItem)
			c.failAt, c.failAfter, c.failOnce = c.calls+1, true, true
		}
	}
	got := commit(t, s, grant(t0, b, 4))
	c.before = nil
	if c.failAt == 0 {
		t.Fatal("no answer was lost")
	}
	if len(got) != 4 {
		t.Errorf("claimed %d after a lost answer, want the 4 the transaction claimed", len(got))
	}
	check(t, s)
}

// TestSampledClaimRacingAProviderRetryKeepsItsPlace: a sampled claim reads
// the lowest-ranked waiting job (no place yet) and, before its
// transaction, another pass claims that job (place 0) and its provider
// fails it (exit 75: waiting again, place kept, attempt 2). The claim's
// transaction is refused, and read again it takes the job as the retry it
// now is: the job keeps place 0, the next job takes place 1, and the log
// counter says 2. (What refuses it is the job's attempt and the log
// counter, both moved by the race; the place's own attribute_not_exists
// is a third guard that no interleaving of the store's writes reaches
// alone: see release.go.)
func TestSampledClaimRacingAProviderRetryKeepsItsPlace(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	other := otherWriter(s)
	b := smallSampled(5)
	submit(t, s, b)
	var theirs []scheduler.Job
	c.before = beforeClaimOf(queuePK(scheduler.QueueKey{Account: "acme", Project: "p", Batch: "r", Model: "gpt"}), func() {
		theirs = commit(t, other, grant(t0, b, 1))
		launchAll(t, other, theirs)
		if err := other.TaskStopped(ctx, theirs[0].ID, 1, job.Exit{Code: 75, ProviderError: true}, t0); err != nil {
			t.Error(err)
		}
	})
	ours := commit(t, s, grant(t0, b, 2))
	c.before = nil
	if len(theirs) != 1 || len(ours) != 2 || ours[0].ID != theirs[0].ID || ours[0].Attempt != 2 {
		t.Fatalf("claimed %v, the other pass %v; want %s again at attempt 2, then one more", keysOf(ours), keysOf(theirs), keysOf(theirs))
	}
	for i, j := range ours {
		it, ok, err := s.readJob(ctx, j.ID)
		if err != nil || !ok || it.ReleasePos == nil || *it.ReleasePos != int64(i) {
			t.Errorf("job %s: place %v (%v, %v); want %d", j.Key, it.ReleasePos, ok, err, i)
		}
	}
	if sb, _, err := s.readSampled(ctx, "acme/p/r"); err != nil || sb.seq.Log != 2 || sb.seq.Logged["s"] != 2 {
		t.Errorf("log counter %d, stratum s %d (%v); want 2 and 2", sb.seq.Log, sb.seq.Logged["s"], err)
	}
	check(t, s)
}
