package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/resulttoken"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Job is a copy of one job's record.
type Job struct {
	scheduler.Job
	State      job.State
	Seq        int64 // position in its queue: submission order
	SubmitAt   time.Time
	LaunchedAt time.Time
	StartedAt  time.Time
	EndedAt    time.Time
	TaskARN    string
	Exit       job.Exit
	Reason     string // why it failed, when it did
	// ProviderRetries: attempts the provider failed (exit 75) that sent
	// the job back to waiting.
	ProviderRetries int

	queue   *queue
	stratum string // in a sampled batch
}

// Counts is the number of jobs per state, and the provider retries of all.
type Counts struct {
	Waiting, Claimed, Launched, Running, Succeeded, Failed, Cancelled, Skipped int
	ProviderRetries                                                            int
}

// Store is the in-memory store. It is safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	defaults scheduler.ModelConfig
	models   map[string]*model
	queues   map[scheduler.QueueKey]*queue
	jobs     map[string]*Job
	all      []*Job // every job in submission order, for recounts
	pins     map[string]priority.Pin
	pauses   map[string]scheduler.Pause
	parts    map[string]*partsSeen   // by account/project/batch
	batches  map[string]*batchRecord // by account/project/batch
	seq      int64
	loads    map[int]scheduler.ShardLoad // by shard: what each reported last
	sampled  map[string]*sampledBatch    // by account/project/batch (sampled.go)
	results  map[string]job.Result       // by job id: the current attempt's verdict
	tokens   resulttoken.Source          // draws each claim's result token
	// resultGrace: how long a sampled job that succeeded may take to
	// report (sampling.Unreported; 0: sampling.DefaultResultGrace).
	resultGrace time.Duration
}

// batchRecord is what a batch's later messages are checked against: the
// terms of its first message and the digest of each part.
type batchRecord struct {
	terms job.Terms
	sums  map[int]string
}

type partsSeen struct {
	total int
	seen  map[int]bool
}

type model struct {
	cfg      scheduler.ModelConfig
	explicit bool // an operator item exists; otherwise defaults apply
	state    scheduler.ModelState
	running  int
	starting map[string]*Job // claimed or launched, not yet running
	outcomes breaker.Outcomes
}

// queue is one batch's jobs of one model in job order; next indexes the first
// job never claimed, back holds jobs returned to waiting (all older than next).
type queue struct {
	key     scheduler.QueueKey
	tier    int
	seq     int64
	jobs    []*Job
	next    int
	back    []*Job // sorted by Seq
	waiting int
	sampled *sampledBatch // non-nil: jobs leave by the batch's sampling, not by age
}

// New returns an empty store; models without an item of their own take the
// defaults (with their Name set).
func New(defaults scheduler.ModelConfig) *Store {
	return &Store{
		defaults: defaults,
		models:   map[string]*model{},
		queues:   map[scheduler.QueueKey]*queue{},
		jobs:     map[string]*Job{},
		pins:     map[string]priority.Pin{},
		pauses:   map[string]scheduler.Pause{},
		parts:    map[string]*partsSeen{},
		batches:  map[string]*batchRecord{},
		tokens:   resulttoken.New,
	}
}

// SetTokenSource replaces crypto/rand as the source of the claims' result
// tokens: the simulator's seeded one keeps a run the same for its seed.
func (s *Store) SetTokenSource(src resulttoken.Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = src
}

// SetResultGrace sets how long a sampled batch's job that succeeded may
// take to report its verdict before its place is passed over as
// unmeasured (0: sampling.DefaultResultGrace), for batches submitted
// after the call. The DynamoDB store's is its ResultGrace.
func (s *Store) SetResultGrace(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resultGrace = d
}

// PutModel writes a model's operator item.
func (s *Store) PutModel(_ context.Context, cfg scheduler.ModelConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.model(cfg.Name)
	m.cfg, m.explicit = cfg, true
	return nil
}

// SetLearned sets a model's learned provider concurrency and when it was
// learned (limits.State.Conc; 0 forgets it), as an operator's edit of the
// model's state item does; the rest of its state stays.
func (s *Store) SetLearned(name string, conc float64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.model(name)
	m.state.Limit.Conc, m.state.Limit.ConcAt = conc, at
}

// PutPin writes a pin item, replacing the one of the same scope.
func (s *Store) PutPin(_ context.Context, p priority.Pin) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins[p.Scope] = p
	return nil
}

// SetPaused pauses or resumes a scope (scheduler.Pause): apart from its
// pin, whose tier it leaves alone and which leaves it alone.
func (s *Store) SetPaused(_ context.Context, scope string, paused bool, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if paused {
		if _, ok := s.pauses[scope]; !ok {
			s.pauses[scope] = scheduler.Pause{Scope: scope, Since: now}
		}
	} else {
		delete(s.pauses, scope)
	}
	return nil
}

// DeletePin removes a pin item.
func (s *Store) DeletePin(_ context.Context, scope string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pins, scope)
	return nil
}

func (s *Store) model(name string) *model {
	m, ok := s.models[name]
	if !ok {
		cfg := s.defaults
		cfg.Name = name
		m = &model{cfg: cfg, starting: map[string]*Job{}}
		s.models[name] = m
	}
	return m
}

// Submit adds a batch's jobs as waiting. It is idempotent: a job that exists
// with the same content is skipped. A message that disagrees with its
// stored batch — a job of the same key with another model or env, other
// terms (tier, task definition, timeout, max attempts, parts), another
// copy of a part already stored — is refused whole with a *job.ConflictError
// (wrapping job.ErrConflict) naming each field; nothing of it is stored.
func (s *Store) Submit(_ context.Context, b job.BatchSpec, now time.Time) (created int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := b.Account + "/" + b.Project + "/" + b.Batch
	var c job.Conflicts
	rec := s.batches[k]
	if rec != nil {
		c.Terms(rec.terms, rec.sums[b.Part], b) // sampling among them
	}
	first := map[string]int{} // a key's first job in the message wins
	var fresh []int
	for i, js := range b.Jobs {
		id := job.JobID(b.Account, b.Project, b.Batch, js.Key)
		if old, ok := s.jobs[id]; ok {
			c.Job(b, i, old.Model, old.Env, old.stratum) // another part's, or this one's again: counted once
			continue
		}
		if f, dup := first[js.Key]; dup {
			c.Job(b, i, cmp.Or(b.Jobs[f].Model, b.Model), b.Jobs[f].Env, b.Jobs[f].Stratum)
			continue
		}
		first[js.Key] = i
		fresh = append(fresh, i)
	}
	if err := c.Err(b); err != nil {
		return 0, err
	}
	var sb *sampledBatch
	if b.Sampling != nil {
		var err error
		if sb, err = s.sampledFor(b); err != nil {
			return 0, err
		}
	}
	if rec == nil {
		rec = &batchRecord{terms: b.Terms(), sums: map[int]string{}}
		s.batches[k] = rec
	}
	if b.Parts > 0 && rec.sums[b.Part] == "" {
		rec.sums[b.Part] = b.PartSum()
	}
	for _, i := range fresh {
		js := b.Jobs[i]
		mdl := cmp.Or(js.Model, b.Model)
		id := job.JobID(b.Account, b.Project, b.Batch, js.Key)
		key := scheduler.QueueKey{Account: b.Account, Project: b.Project, Batch: b.Batch, Model: mdl}
		q, ok := s.queues[key]
		if !ok {
			s.seq++
			q = &queue{key: key, tier: b.Tier, seq: s.seq, sampled: sb}
			s.queues[key] = q
		}
		s.seq++
		j := &Job{
			Job: scheduler.Job{
				ID: id, Account: b.Account, Project: b.Project, Batch: b.Batch, Key: js.Key, Model: mdl,
				Attempt: 1, MaxAttempts: cmp.Or(b.MaxAttempts, 3), TaskDefinition: b.TaskDefinition,
				TimeoutSeconds: b.TimeoutSeconds, Env: maps.Clone(js.Env), SubmittedAt: now,
			},
			State: job.Waiting, Seq: s.seq, SubmitAt: now, queue: q,
		}
		s.jobs[id] = j
		s.all = append(s.all, j)
		q.jobs = append(q.jobs, j)
		if sb != nil {
			sb.add(j, js.Stratum)
		}
		q.waiting++
		s.model(mdl)
		created++
	}
	if b.Parts > 0 {
		p := s.parts[k]
		if p == nil {
			p = &partsSeen{seen: map[int]bool{}}
			s.parts[k] = p
		}
		p.total, p.seen[b.Part] = b.Parts, true
	}
	return created, nil
}

// Snapshot implements scheduler.Store.
func (s *Store) Snapshot(_ context.Context, _ time.Time) (scheduler.Snapshot, error) {
	return s.snapshot(all), nil
}

// all owns every model.
func all(string) bool { return true }

// snapshot reads the models owns owns and their queues.
func (s *Store) snapshot(owns func(model string) bool) scheduler.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap scheduler.Snapshot
	for _, name := range slices.Sorted(maps.Keys(s.models)) {
		if !owns(name) {
			continue
		}
		m := s.models[name]
		pending := 0
		for _, j := range m.starting {
			if mark := m.state.Limit.Mark(); mark.IsZero() || !j.LaunchedAt.After(mark) {
				pending++
			}
		}
		snap.Models = append(snap.Models, scheduler.Model{
			Config: m.cfg, State: m.state, Running: m.running, Starting: len(m.starting),
			PendingRaise: pending, Outcomes: m.outcomes,
		})
	}
	keys := slices.SortedFunc(maps.Keys(s.queues), func(a, b scheduler.QueueKey) int {
		return cmp.Compare(s.queues[a].seq, s.queues[b].seq)
	})
	for _, k := range keys {
		q := s.queues[k]
		if q.waiting == 0 || !owns(k.Model) {
			continue
		}
		snap.Queues = append(snap.Queues, scheduler.Queue{
			Account: k.Account, Project: k.Project, Batch: k.Batch, Model: k.Model,
			SubmittedTier: q.tier, Seq: q.seq, Waiting: q.waiting, Registered: len(q.jobs),
		})
	}
	for _, scope := range slices.Sorted(maps.Keys(s.pauses)) {
		snap.Pauses = append(snap.Pauses, s.pauses[scope])
	}
	for _, scope := range slices.Sorted(maps.Keys(s.pins)) {
		snap.Pins = append(snap.Pins, s.pins[scope])
	}
	return snap
}

// Commit implements scheduler.Store: state persisted, outcomes acknowledged
// and jobs claimed in one step, as the DynamoDB store does in transactions.
// Its Snapshot carries no Versions and Commit checks none (never Stale):
// its passes are one process's, one at a time under its lock. The
// simulator's store (internal/sim, handle) adds the DynamoDB store's
// version check over it.
func (s *Store) Commit(_ context.Context, plan scheduler.Plan, _ scheduler.Versions) (scheduler.Committed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var claimed []scheduler.Job
	// A scope paused since the plan's Snapshot (a pause, or a cancel's
	// mark) is claimed nothing, as the DynamoDB store's claims refuse a
	// queue a cancel marked.
	paused := scheduler.PausesOf(slices.Collect(maps.Values(s.pauses)))
	for _, mp := range plan.Models {
		m := s.model(mp.Model)
		m.state = mp.State
		m.outcomes.OK -= mp.Ack.OK
		m.outcomes.ProviderFailed -= mp.Ack.ProviderFailed
		for _, g := range mp.Grants {
			q := s.queues[g.Queue]
			if _, ok := paused.By(g.Queue.Account, g.Queue.Project, g.Queue.Batch); q == nil || ok {
				continue
			}
			if q.sampled != nil {
				s.stopIfDone(q.sampled, q, plan.At) // a grace run out may complete the stop
			}
			for range g.Count {
				j := q.take(s.result, plan.At)
				if j == nil {
					break
				}
				// A queue holds only waiting jobs, so the claim always
				// applies; take has moved the waiting count and back list.
				c, ok := job.Apply(j.current(), job.Event{Kind: job.Claim, Attempt: j.Attempt})
				if !ok {
					continue
				}
				s.apply(j, c, job.Exit{}, plan.At)
				j.LaunchedAt, j.Tier = plan.At, g.Tier
				j.ResultToken = s.tokens() // a new one per attempt
				claimed = append(claimed, j.Job)
			}
		}
	}
	return scheduler.Committed{Claimed: claimed}, nil
}

// take claims the queue's oldest waiting job (a sampled batch's: by its
// sequence, which reads the results so far through res).
func (q *queue) take(res func(*Job) (job.Result, bool), now time.Time) *Job {
	var j *Job
	switch {
	case q.sampled != nil:
		if j = q.sampled.take(res, now); j == nil {
			return nil
		}
	case len(q.back) > 0:
		j, q.back = q.back[0], q.back[1:]
	case q.next < len(q.jobs):
		j = q.jobs[q.next]
		q.next++
	default:
		return nil
	}
	q.waiting--
	return j
}

// putBack returns a job to waiting, in its place by age.
func (q *queue) putBack(j *Job) {
	if q.sampled != nil {
		q.sampled.putBack(j)
		q.waiting++
		return
	}
	i, _ := slices.BinarySearchFunc(q.back, j.Seq, func(b *Job, seq int64) int { return cmp.Compare(b.Seq, seq) })
	q.back = slices.Insert(q.back, i, j)
	q.waiting++
}

// RecordLaunches implements scheduler.Store.
func (s *Store) RecordLaunches(_ context.Context, now time.Time, results []scheduler.LaunchResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, r := range results {
		j, ok := s.jobs[r.JobID]
		if !ok {
			errs = append(errs, fmt.Errorf("record launch of %s: %w", r.JobID, job.ErrUnknownJob))
			continue
		}
		ev := job.Event{Kind: job.LaunchFail, Attempt: r.Attempt, Reason: r.Reason}
		switch r.Status {
		case scheduler.Unknown:
			continue // the job stays CLAIMED: the reconciler's
		case scheduler.Launched:
			ev.Kind = job.Launch
		case scheduler.Retry:
			ev.Kind = job.LaunchRetry
		}
		c, ok := job.Apply(j.current(), ev)
		if !ok && ev.Kind == job.Launch && j.State == job.Running && j.Attempt == r.Attempt && j.TaskARN == "" {
			// Its task reported RUNNING before this record: the job takes
			// the task's ARN, without which nobody could stop the task.
			j.TaskARN = r.TaskARN
			continue
		}
		if !ok {
			continue // a stale or repeated result: the job has moved on
		}
		if c.To == job.Launched {
			// LaunchedAt stays the claiming pass's time: PendingRaise compares
			// it with the time of the pass that raised the limit.
			j.TaskARN = r.TaskARN
		}
		s.apply(j, c, job.Exit{}, now)
	}
	return errors.Join(errs...)
}

// current is what job.Apply reads of a job.
func (j *Job) current() job.Current {
	return job.Current{State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts}
}

// apply persists a transition's change in one step: the job's state,
// attempt, max attempts (a yield's), reason and exit with the counters
// they move — the model's starting set, running count and outcomes, and
// (by putBack) the queue's waiting count and back list. A claim, cancel or skip takes the job from
// its queue itself (take), which moves the waiting count and back list.
func (s *Store) apply(j *Job, c job.Change, exit job.Exit, now time.Time) {
	if c.To == job.Waiting && j.queue.sampled != nil && j.queue.sampled.stopped {
		// Its sampled batch stopped: it ends SKIPPED with the stop's
		// reason (the DynamoDB store does the same).
		sb := j.queue.sampled
		c = job.SkipRetry(j.current(), c, sb.reason)
		sb.strata[j.stratum].counts.Released--
	}
	m := s.models[j.Model]
	switch {
	case c.Starting > 0:
		m.starting[j.ID] = j
	case c.Starting < 0:
		delete(m.starting, j.ID)
	}
	m.running += c.Running
	m.outcomes.OK += c.OK
	m.outcomes.ProviderFailed += c.ProviderFailed
	j.State, j.Attempt = c.To, c.Attempt
	if c.ProviderRetry {
		j.ProviderRetries++
	}
	switch {
	case c.To == job.Running:
		j.StartedAt = now
	case c.To == job.Waiting:
		j.TaskARN, j.LaunchedAt, j.Reason = "", time.Time{}, c.Reason
		if c.MaxAttempts != 0 { // a yield: the attempt it took is not spent
			j.MaxAttempts = c.MaxAttempts
		}
		j.queue.putBack(j)
	case c.To.Ended():
		j.Reason, j.EndedAt = c.Reason, now
	}
	if c.Exit {
		j.Exit = exit
	}
}

// TaskStarted marks a job's task running. A repeated or stale event (another
// attempt, a job already past RUNNING) changes nothing.
func (s *Store) TaskStarted(_ context.Context, jobID string, attempt int, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	if !ok {
		return fmt.Errorf("task started for %s: %w", jobID, job.ErrUnknownJob)
	}
	if c, ok := job.Apply(j.current(), job.Event{Kind: job.Start, Attempt: attempt}); ok {
		s.apply(j, c, job.Exit{}, now)
	}
	return nil
}

// TaskStopped ends a job's attempt as job.Apply judges it: exit 0
// succeeds, an infrastructure stop retries while attempts remain, a yield
// waits again with one more max attempt (the attempt not spent), a
// provider failure (exit 75) retries while attempts remain, any other exit
// fails. Outcomes feed the model's breaker. Repeated or stale events change
// nothing.
func (s *Store) TaskStopped(_ context.Context, jobID string, attempt int, exit job.Exit, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	if !ok {
		return fmt.Errorf("task stopped for %s: %w", jobID, job.ErrUnknownJob)
	}
	if c, ok := job.Apply(j.current(), job.Event{Kind: job.Stop, Attempt: attempt, Exit: exit}); ok {
		s.apply(j, c, exit, now)
	}
	return nil
}

// BatchParts returns the parts of a multi-part batch that arrived, in
// order, and how many it has; total 0 for a batch of one message.
func (s *Store) BatchParts(_ context.Context, account, project, batch string) ([]int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.parts[account+"/"+project+"/"+batch]
	if p == nil {
		return nil, 0, nil
	}
	return slices.Sorted(maps.Keys(p.seen)), p.total, nil
}

// Cancel moves every waiting job inside the scope to CANCELLED.
func (s *Store) Cancel(_ context.Context, scope scheduler.Scope, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for key, q := range s.queues {
		if !scope.Matches(key) {
			continue
		}
		for j := q.take(s.result, now); j != nil; j = q.take(s.result, now) {
			if c, ok := job.Apply(j.current(), job.Event{Kind: job.Cancel, Attempt: j.Attempt}); ok {
				s.apply(j, c, job.Exit{}, now)
				n++
			}
		}
	}
	return n, nil
}

// InFlight lists the jobs holding a slot, for the reconciler.
func (s *Store) InFlight(context.Context) ([]scheduler.InFlight, error) {
	return s.inFlight(all), nil
}

// inFlight lists the jobs of the models owns owns that hold a slot.
func (s *Store) inFlight(owns func(model string) bool) []scheduler.InFlight {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []scheduler.InFlight
	for _, j := range s.all {
		if !owns(j.Model) {
			continue
		}
		switch j.State {
		case job.Claimed, job.Launched, job.Running:
			out = append(out, scheduler.InFlight{
				ID: j.ID, Account: j.Account, Project: j.Project, Batch: j.Batch, Model: j.Model, State: string(j.State), Attempt: j.Attempt, TaskARN: j.TaskARN,
				ClaimedAt: j.LaunchedAt, StartedAt: j.StartedAt, TimeoutSeconds: j.TimeoutSeconds,
			})
		}
	}
	return out
}

// JobTiers implements scheduler.JobTierReader: the tier each job was
// claimed under.
func (s *Store) JobTiers(_ context.Context, ids []string) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(ids))
	for _, id := range ids {
		if j, ok := s.jobs[id]; ok {
			out[id] = j.Tier
		}
	}
	return out, nil
}

// Shard is the store as one scheduler shard sees it (scheduler.ShardOf):
// Snapshot and InFlight see only the models it owns; every other method is
// the store's own, unscoped — Submit, Commit, the task events and Cancel
// (an operator's cancel spans every model). It is the in-memory counterpart
// of the DynamoDB store's ScopeToShard; several Shards of one Store share its jobs,
// as several scheduler invocations share the tables.
type Shard struct {
	*Store
	owns func(model string) bool
}

// Shard returns the view of the models owns owns (nil: all of them).
func (s *Store) Shard(owns func(model string) bool) *Shard {
	if owns == nil {
		owns = all
	}
	return &Shard{Store: s, owns: owns}
}

// Snapshot implements scheduler.Store for the shard's models.
func (v *Shard) Snapshot(_ context.Context, _ time.Time) (scheduler.Snapshot, error) {
	return v.snapshot(v.owns), nil
}

// InFlight lists the shard's jobs holding a slot: its reconciler repairs
// its own.
func (v *Shard) InFlight(context.Context) ([]scheduler.InFlight, error) {
	return v.inFlight(v.owns), nil
}

// ShardLoads implements scheduler.LoadStore: every shard's last report.
func (s *Store) ShardLoads(context.Context) ([]scheduler.ShardLoad, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]scheduler.ShardLoad, 0, len(s.loads))
	for _, l := range s.loads {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b scheduler.ShardLoad) int { return a.Shard - b.Shard })
	return out, nil
}

// PutShardLoad implements scheduler.LoadStore.
func (s *Store) PutShardLoad(_ context.Context, l scheduler.ShardLoad) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loads == nil {
		s.loads = map[int]scheduler.ShardLoad{}
	}
	s.loads[l.Shard] = l
	return nil
}

// Job returns a copy of one job.
func (s *Store) Job(id string) (Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	c := *j
	c.Env = maps.Clone(j.Env)
	return c, true
}

// Counts returns the number of jobs in each state.
func (s *Store) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c Counts
	for _, j := range s.jobs {
		c.ProviderRetries += j.ProviderRetries
		switch j.State {
		case job.Waiting:
			c.Waiting++
		case job.Claimed:
			c.Claimed++
		case job.Launched:
			c.Launched++
		case job.Running:
			c.Running++
		case job.Succeeded:
			c.Succeeded++
		case job.Failed:
			c.Failed++
		case job.Cancelled:
			c.Cancelled++
		case job.Skipped:
			c.Skipped++
		}
	}
	return c
}

// Check recounts every counter from the jobs and reports each mismatch. It
// is O(jobs) and allocation-light: the simulator calls it after every pass.
func (s *Store) Check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	running := make(map[*model]int, len(s.models))
	starting := make(map[*model]int, len(s.models))
	waiting := make(map[*queue]int, len(s.queues))
	var errs []error
	for _, j := range s.all {
		switch j.State {
		case job.Running:
			running[s.models[j.Model]]++
		case job.Claimed, job.Launched:
			m := s.models[j.Model]
			starting[m]++
			if m.starting[j.ID] != j {
				errs = append(errs, fmt.Errorf("job %s is %s but not in its model's starting set", j.ID, j.State))
			}
		case job.Waiting:
			waiting[j.queue]++
		}
	}
	for name, m := range s.models {
		if m.running != running[m] {
			errs = append(errs, fmt.Errorf("model %s: running counter %d, recount %d", name, m.running, running[m]))
		}
		if len(m.starting) != starting[m] {
			errs = append(errs, fmt.Errorf("model %s: starting counter %d, recount %d", name, len(m.starting), starting[m]))
		}
	}
	for _, q := range s.queues {
		if q.waiting != waiting[q] {
			errs = append(errs, fmt.Errorf("queue %s: waiting counter %d, recount %d", q.key, q.waiting, waiting[q]))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b error) int { return cmp.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
