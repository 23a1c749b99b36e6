package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/sampling"
)

// sampledBatch is the sampling state of one sampled batch: its strata, each
// with its jobs in release order and its counts, and its release log: the
// jobs in the order they were first claimed, whose completed prefix feeds
// the confidence sequence (sampling.Sequence).
type sampledBatch struct {
	id      string // account/project/batch
	params  sampling.Params
	strata  map[string]*stratum
	names   []string // the strata's names, sorted: the sequence's order
	stopped bool
	reason  string
	grace   time.Duration // a succeeded job's time to report (sampling.Unreported)

	log     []*Job             // first claims, in order
	prefix  int                // log[:prefix] is counted (or passed over)
	seq     *sampling.Sequence // over log[:prefix]; nil: to rebuild
	seqJobs int                // the batch's size seq was built for
	index   map[string]int     // stratum name → its place in names
	claimed []int              // per stratum: jobs in the log
	passed  []int              // per stratum: jobs in log[:prefix]
}

type stratum struct {
	counts sampling.Stratum
	jobs   []rankedJob // unclaimed from next on; sorted from next on unless dirty
	next   int
	back   []rankedJob // returned to waiting, sorted by rank
	dirty  bool
}

type rankedJob struct {
	rank uint64
	job  *Job
}

func compareRanked(a, b rankedJob) int {
	return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.job.Key, b.job.Key))
}

// sampledFor returns the batch's sampling state, creating it from b's
// sampling on its first part; a later part with other sampling is a
// conflict, as a job with other content is.
func (s *Store) sampledFor(b job.BatchSpec) (*sampledBatch, error) {
	id := b.Account + "/" + b.Project + "/" + b.Batch
	sb := s.sampled[id]
	if sb != nil {
		if *b.Sampling != sb.params {
			return nil, fmt.Errorf("batch %s: sampling %+v conflicts with the %+v of its first part", id, *b.Sampling, sb.params)
		}
		return sb, nil
	}
	if err := b.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("batch %s: %w", id, err)
	}
	sb = &sampledBatch{id: id, params: *b.Sampling, strata: map[string]*stratum{}, grace: s.resultGrace}
	if s.sampled == nil {
		s.sampled = map[string]*sampledBatch{}
	}
	s.sampled[id] = sb
	return sb, nil
}

// add files a new waiting job under its stratum.
func (sb *sampledBatch) add(j *Job, name string) {
	st := sb.strata[name]
	if st == nil {
		st = &stratum{counts: sampling.Stratum{Name: name}}
		sb.strata[name] = st
		i, _ := slices.BinarySearch(sb.names, name)
		sb.names = slices.Insert(sb.names, i, name)
	}
	j.stratum = name
	st.counts.Jobs++
	st.jobs = append(st.jobs, rankedJob{sampling.Rank(sb.id, j.Key), j})
	st.dirty = true
	sb.seq = nil // the sizes moved: the sequence is rebuilt from the log
}

// counts lists the strata's counts in name order.
func (sb *sampledBatch) counts() []sampling.Stratum {
	out := make([]sampling.Stratum, len(sb.names))
	for i, n := range sb.names {
		out[i] = sb.strata[n].counts
	}
	return out
}

// take claims the next job of a sampled batch: a job put back (a retry)
// first, in name order, as it keeps its place in the release order and
// holds the counted prefix until it has a result; else, unless the
// batch holds its Window of claims past the counted prefix, from the
// stratum sampling.Sequence.Next picks, the lowest-ranked waiting job.
// now is the claim's time (advance).
func (sb *sampledBatch) take(res func(*Job) (job.Result, bool), now time.Time) *Job {
	if sb.stopped {
		return nil
	}
	for _, n := range sb.names {
		if st := sb.strata[n]; len(st.back) > 0 {
			var r rankedJob
			r, st.back = st.back[0], st.back[1:]
			st.counts.Released++
			return r.job
		}
	}
	sb.advance(res, now)
	if w := sb.params.Window; w > 0 && len(sb.log)-sb.prefix >= w {
		return nil // a slow job holds the prefix: wait for it
	}
	pending := make([]int, len(sb.names))
	for h := range pending {
		pending[h] = sb.claimed[h] - sb.passed[h]
	}
	h := sb.seq.Next(pending)
	if h < 0 {
		return nil
	}
	st := sb.strata[sb.names[h]]
	if st.dirty {
		slices.SortFunc(st.jobs[st.next:], compareRanked)
		st.dirty = false
	}
	if st.next >= len(st.jobs) {
		return nil // Next counted a job that is not waiting: cannot happen
	}
	j := st.jobs[st.next].job
	st.next++
	st.counts.Released++
	sb.log = append(sb.log, j)
	sb.claimed[h]++
	return j
}

// advance counts the log's completed prefix into the sequence, building
// it anew when the batch's size moved. A job that ended without a result
// (failed after its attempts, cancelled) is passed over: nothing is
// known of it, and the sequence keeps it among the unmeasured. A job that
// succeeded without one is waited for until its result grace has passed
// at now (sampling.Unreported; a zero now waits), as the DynamoDB store
// waits for its verdict in the log.
func (sb *sampledBatch) advance(res func(*Job) (job.Result, bool), now time.Time) {
	total := 0
	for _, n := range sb.names {
		total += sb.strata[n].counts.Jobs
	}
	if sb.seq == nil || sb.seqJobs != total {
		sizes := make([]int, len(sb.names))
		sb.index = map[string]int{}
		for h, n := range sb.names {
			sizes[h] = sb.strata[n].counts.Jobs
			sb.index[n] = h
		}
		sb.seq, sb.seqJobs, sb.prefix = sampling.NewSequence(sb.params, sizes), total, 0
		sb.claimed, sb.passed = make([]int, len(sizes)), make([]int, len(sizes))
		for _, j := range sb.log {
			sb.claimed[sb.index[j.stratum]]++
		}
	}
	for sb.prefix < len(sb.log) {
		j := sb.log[sb.prefix]
		h := sb.index[j.stratum]
		if r, ok := res(j); ok {
			sb.seq.Add(h, r.Pass)
		} else if !j.State.Ended() || j.State == job.Succeeded && !sampling.Unreported(j.EndedAt, now, sb.grace) {
			return
		}
		sb.passed[h]++
		sb.prefix++
	}
}

// estimate is the batch's interval from the counted prefix, and whether
// it may stop: every stratum has min(min_per_stratum, N_h) results
// counted and the half-width is within moe. now is the look's time
// (advance).
func (sb *sampledBatch) estimate(res func(*Job) (job.Result, bool), now time.Time) sampling.Estimate {
	sb.advance(res, now)
	lo, hi := sb.seq.Bounds()
	e := sampling.Estimate{Mean: (lo + hi) / 2, HalfWidth: (hi - lo) / 2, Lower: lo, Upper: hi, Results: sb.seq.Results(), Jobs: sb.seqJobs}
	short := false
	for h, n := range sb.names {
		short = short || sb.seq.Counted(h) < min(sb.params.MinPerStratum, sb.strata[n].counts.Jobs)
	}
	e.Stop = !short && e.HalfWidth <= sb.params.MOE
	return e
}

// putBack returns a job of the batch to waiting, in its rank's place (a
// stopped batch's job is skipped instead: Store.retry).
func (sb *sampledBatch) putBack(j *Job) {
	st := sb.strata[j.stratum]
	st.counts.Released--
	r := rankedJob{sampling.Rank(sb.id, j.Key), j}
	i, _ := slices.BinarySearchFunc(st.back, r, compareRanked)
	st.back = slices.Insert(st.back, i, r)
}

// RecordResult records a job's verdict for an attempt. A result of
// another attempt than the job's current one is stale and ignored, as is a
// second result of the same attempt (SQS delivers at least once) and one
// for a job that ended without running (cancelled, skipped). A later
// attempt's verdict replaces an earlier one's (a task that reported and was
// then lost) — except in a sampled batch, where the first verdict is
// final (below), as in the DynamoDB store. In a sampled
// batch the result counts toward its stratum, and when the stop rule holds
// (and every part of the batch has arrived) the batch's waiting jobs end
// SKIPPED with the estimate as the reason. A result for the current
// attempt must carry the attempt's result token (compared in constant
// time): without it the result is refused with job.ErrWrongToken. It reports
// whether the result was recorded.
func (s *Store) RecordResult(_ context.Context, jobID string, r job.Result) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	if !ok {
		return false, fmt.Errorf("result for %s: %w", jobID, job.ErrUnknownJob)
	}
	if j.Attempt != r.Attempt {
		return false, nil
	}
	switch j.State {
	case job.Waiting, job.Cancelled, job.Skipped:
		return false, nil
	}
	// The current attempt's: only its own sandbox knows the token. A
	// repeat with the right token is acknowledged below; a wrong one is
	// refused even when a verdict is in, so a forger learns nothing.
	if !resulttoken.Equal(r.Token, j.ResultToken) {
		return false, fmt.Errorf("result for %s attempt %d: %w", jobID, r.Attempt, job.ErrWrongToken)
	}
	sb := s.sampled[j.Batch3()]
	// A sampled job's first verdict is final. Its outcome is one draw,
	// fixed when it was reported; taking a later attempt's instead (the
	// newest when the prefix reaches the job) would let the timing of a
	// retry pick between draws — a second chance for the outcome that
	// gets retried more (a failing task lost mid-report), a bias the
	// sequence cannot see. It is also the cheap rule in DynamoDB: one
	// conditional write (no verdict yet), and a log entry that never
	// changes once written.
	if old, dup := s.results[jobID]; dup && (old.Attempt >= r.Attempt || sb != nil) {
		return false, nil
	}
	r.Token = ""
	if s.results == nil {
		s.results = map[string]job.Result{}
	}
	s.results[jobID] = r
	if sb == nil {
		return true, nil
	}
	st := sb.strata[j.stratum]
	st.counts.Results++
	if r.Pass {
		st.counts.Passes++
	}
	s.stopIfDone(sb, j.queue, r.At)
	return true, nil
}

// stopIfDone stops the sampled batch when its rule holds at now and every
// part has arrived: after a result, and before a claim (a job that
// succeeded without reporting is passed over once its grace is out, and
// that alone may complete the stop), as the DynamoDB store checks.
func (s *Store) stopIfDone(sb *sampledBatch, q *queue, now time.Time) {
	if sb.stopped {
		return
	}
	if e := sb.estimate(s.result, now); e.Stop && s.allParts(sb.id) {
		s.stop(sb, e, q, now)
	}
}

// Batch3 is the job's batch id, account/project/batch.
func (j *Job) Batch3() string { return j.Account + "/" + j.Project + "/" + j.Batch }

// allParts reports whether every part of the batch has arrived.
func (s *Store) allParts(id string) bool {
	p := s.parts[id]
	return p == nil || len(p.seen) >= p.total
}

// stop skips the waiting jobs of a sampled batch (one queue: a sampled
// batch runs one model).
func (s *Store) stop(sb *sampledBatch, e sampling.Estimate, q *queue, now time.Time) {
	sb.stopped = true
	sb.reason = fmt.Sprintf("sampling stopped: pass rate %.4f ± %.4f at %g%% confidence after %d of %d results",
		e.Mean, e.HalfWidth, sb.params.Confidence*100, e.Results, e.Jobs)
	for _, name := range sb.names {
		st := sb.strata[name]
		rest := append(st.back, st.jobs[st.next:]...)
		st.back, st.next = nil, len(st.jobs)
		for _, r := range rest {
			// Taken from the stratum here: the waiting count and back list
			// move with it (c.Waiting, c.Backs).
			if c, ok := job.Apply(r.job.current(), job.Event{Kind: job.Skip, Attempt: r.job.Attempt, Reason: sb.reason}); ok {
				s.apply(r.job, c, job.Exit{}, now)
				q.waiting--
			}
		}
	}
}

// Sampled returns the sampling state of a sampled batch (ok false for a
// batch that is not sampled).
func (s *Store) Sampled(batch string) (job.SampledBatch, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sampled[batch]
	if sb == nil {
		return job.SampledBatch{}, false
	}
	out := job.SampledBatch{Batch: batch, Params: sb.params, Estimate: sb.estimate(s.result, time.Time{}), Stopped: sb.stopped, Reason: sb.reason}
	for h, c := range sb.counts() {
		// Each stratum's own sequence over its jobs in the counted
		// prefix: an interval for it alone, at the batch's confidence.
		one := sampling.NewSequence(sb.params, []int{c.Jobs})
		for _, j := range sb.log[:sb.prefix] {
			if r, ok := s.result(j); ok && sb.index[j.stratum] == h {
				one.Add(0, r.Pass)
			}
		}
		lo, hi := one.Bounds()
		e := sampling.Estimate{Mean: (lo + hi) / 2, HalfWidth: (hi - lo) / 2, Lower: lo, Upper: hi, Results: one.Results(), Jobs: c.Jobs}
		out.Strata = append(out.Strata, job.SampledStratum{Stratum: c, Estimate: e})
	}
	return out, true
}

// SampledBatches lists the sampled batches' ids, sorted.
func (s *Store) SampledBatches() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.sampled))
}

// result is a job's recorded verdict; the caller holds the lock.
func (s *Store) result(j *Job) (job.Result, bool) {
	r, ok := s.results[j.ID]
	return r, ok
}

// JobResult returns the result recorded for a job.
func (s *Store) JobResult(jobID string) (job.Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[jobID]
	return r, ok
}
