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

// Result is a job's verdict as its sandbox reported it (internal/resultmsg).
type Result struct {
	Attempt int
	Pass    bool
	Score   *float64
	At      time.Time
	// Token is the sender's result token (RecordResult's credential). It is
	// never kept with the verdict: JobResult's is empty.
	Token resulttoken.Token
}

// sampledBatch is the sampling state of one sampled batch: its strata, each
// with its jobs in release order and its counts.
type sampledBatch struct {
	id      string // account/project/batch
	params  sampling.Params
	rule    sampling.Rule
	strata  map[string]*stratum
	names   []string // the strata's names, sorted: Allocate's order
	stopped bool
	reason  string
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
	rule, err := sampling.NewRule(*b.Sampling)
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", id, err)
	}
	sb = &sampledBatch{id: id, params: *b.Sampling, rule: rule, strata: map[string]*stratum{}}
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
}

// counts lists the strata's counts in name order.
func (sb *sampledBatch) counts() []sampling.Stratum {
	out := make([]sampling.Stratum, len(sb.names))
	for i, n := range sb.names {
		out[i] = sb.strata[n].counts
	}
	return out
}

// take claims the next job of a sampled batch: from the stratum Allocate
// picks, the lowest-ranked waiting job.
func (sb *sampledBatch) take() *Job {
	if sb.stopped {
		return nil
	}
	alloc := sampling.Allocate(sb.params, sb.counts(), 1)
	i := slices.Index(alloc, 1)
	if i < 0 {
		return nil
	}
	st := sb.strata[sb.names[i]]
	if st.dirty {
		slices.SortFunc(st.jobs[st.next:], compareRanked)
		st.dirty = false
	}
	var r rankedJob
	switch {
	case len(st.back) > 0 && (st.next >= len(st.jobs) || compareRanked(st.back[0], st.jobs[st.next]) < 0):
		r, st.back = st.back[0], st.back[1:]
	case st.next < len(st.jobs):
		r = st.jobs[st.next]
		st.next++
	default:
		return nil // Allocate counted a job that is not waiting: cannot happen
	}
	st.counts.Released++
	return r.job
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
// then lost), but a sampled batch counts the job once. In a sampled
// batch the result counts toward its stratum, and when the stop rule holds
// (and every part of the batch has arrived) the batch's waiting jobs end
// SKIPPED with the estimate as the reason. A result for the current
// attempt must carry the attempt's result token (compared in constant
// time): without it the result is refused with ErrWrongToken. It reports
// whether the result was recorded.
func (s *Store) RecordResult(_ context.Context, jobID string, r Result) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	if !ok {
		return false, fmt.Errorf("result for %s: %w", jobID, ErrUnknownJob)
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
		return false, fmt.Errorf("result for %s attempt %d: %w", jobID, r.Attempt, ErrWrongToken)
	}
	if old, dup := s.results[jobID]; dup && old.Attempt >= r.Attempt {
		return false, nil
	}
	r.Token = ""
	if s.results == nil {
		s.results = map[string]Result{}
	}
	_, counted := s.results[jobID] // an earlier attempt's verdict: the job counts once
	s.results[jobID] = r
	sb := s.sampled[j.Batch3()]
	if sb == nil || counted {
		return true, nil
	}
	st := sb.strata[j.stratum]
	st.counts.Results++
	if r.Pass {
		st.counts.Passes++
	}
	if e := sb.rule.Estimate(sb.counts()); e.Stop && !sb.stopped && s.allParts(sb.id) {
		s.stop(sb, e, j.queue, r.At)
	}
	return true, nil
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

// SampledStratum is one stratum's counts and its own estimate.
type SampledStratum struct {
	sampling.Stratum
	Estimate sampling.Estimate
}

// SampledBatch is what status and why show of a sampled batch.
type SampledBatch struct {
	Batch    string // account/project/batch
	Params   sampling.Params
	Estimate sampling.Estimate
	Strata   []SampledStratum // by name
	Stopped  bool
	Reason   string // why the rest was skipped, when it was
}

// Sampled returns the sampling state of a sampled batch (ok false for a
// batch that is not sampled).
func (s *Store) Sampled(batch string) (SampledBatch, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sampled[batch]
	if sb == nil {
		return SampledBatch{}, false
	}
	out := SampledBatch{Batch: batch, Params: sb.params, Estimate: sb.rule.Estimate(sb.counts()), Stopped: sb.stopped, Reason: sb.reason}
	for _, c := range sb.counts() {
		out.Strata = append(out.Strata, SampledStratum{Stratum: c, Estimate: sb.rule.Estimate([]sampling.Stratum{c})})
	}
	return out, true
}

// SampledBatches lists the sampled batches' ids, sorted.
func (s *Store) SampledBatches() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.sampled))
}

// JobResult returns the result recorded for a job.
func (s *Store) JobResult(jobID string) (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[jobID]
	return r, ok
}
