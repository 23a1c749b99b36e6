package sim

import (
	"cmp"
	"slices"

	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// The baselines are honest: each is as good as its rule allows. They pace
// launches to the token bucket (every token within the pass interval is
// used while a job can take it) and fill every slot their caps leave.

// staticPolicy is the old world: each model a lane with a fixed cap
// (static_cap), first come first served within a lane, lanes independent.
type staticPolicy struct {
	e      *engine
	caps   []int // per model: static_cap, or the oracle's sweep
	rot    int   // lane that gets the first token of the next pass
	demand []int
	steps  []CapStep // Options.CapSteps not yet applied, in order
}

func (s *staticPolicy) pass(e *engine) {
	n := len(e.models)
	if s.demand == nil {
		s.demand = make([]int, n)
	}
	for len(s.steps) > 0 && seconds(s.steps[0].AtS) <= e.now {
		s.step(s.steps[0])
		s.steps = s.steps[1:]
	}
	for i := range e.models {
		m := &e.models[i]
		s.demand[i] = max(0, min(s.caps[i]-m.holding, m.waiting))
		e.seen[i].limit = s.caps[i]
		e.seen[i].depth, _, e.seen[i].hasDepth = e.depthSeen(i)
	}
	// The global cap and the launch budget are shared max-min fairly: lanes
	// take one token each in turn, starting with a lane that rotates per
	// pass so no lane always goes first.
	free := e.sc.GlobalMaxRunning - e.holding
	deadline := e.now + e.interval
	for free > 0 {
		progressed := false
		for k := range n {
			i := (s.rot + k) % n
			if s.demand[i] == 0 || free == 0 {
				continue
			}
			j, bi := e.laneNext(i)
			if j < 0 {
				s.demand[i] = 0
				continue
			}
			g, ok := e.bucket.reserve(e.now, deadline)
			if !ok {
				free = 0
				break
			}
			e.laneTake(i, bi)
			e.reserve(j, int(e.jobs[j].attempt)+1, e.tierOf(bi), g)
			s.demand[i]--
			free--
			progressed = true
		}
		if !progressed {
			break
		}
	}
	s.rot = (s.rot + 1) % max(n, 1)
}

// step applies a cap step (Options.CapSteps): the new caps, and with
// Yield, for each model over its new cap, its tasks still starting or
// reserved stopped, newest job first, until it holds at most its cap. A
// stopped job goes to the front of its model's lane (its retries), oldest
// first, so the lane launches it again before any job it never launched.
//
// A reserved job's RunTask event is at most one pass interval after the
// pass that reserved it, and after the yields the model holds its cap,
// so no pass relaunches a yielded job before that event has come and
// found the job waiting (runTask ignores it).
func (s *staticPolicy) step(st CapStep) {
	e := s.e
	copy(s.caps, st.Caps)
	for i := range e.models {
		e.models[i].limit = s.caps[i]
	}
	if !st.Yield {
		return
	}
	for i := range e.models {
		m := &e.models[i]
		for j := int32(len(e.jobs)) - 1; j >= 0 && m.holding > s.caps[i]; j-- {
			if int(e.jobs[j].model) != i || !e.yield(j) {
				continue // another model's, or not starting: it runs on
			}
			m.retry = append([]int32{j}, m.retry...)
		}
	}
}

func (s *staticPolicy) failedToStart(j int32) { s.e.retryOrFail(j) }

func (s *staticPolicy) providerFailed(j int32) { s.e.retryOrFail(j) }
func (s *staticPolicy) submitted(int)          {}
func (s *staticPolicy) pinned(scenario.Pin)    {}
func (s *staticPolicy) started(int32)          {}
func (s *staticPolicy) stopped(int32)          {}
func (s *staticPolicy) finish(r *Result)       {}

// unboundedPolicy has no per-model cap: one first-come-first-served queue
// across all batches, held back only by the global cap and the bucket.
type unboundedPolicy struct {
	e     *engine
	order []int32 // batches by arrival, then file order
	head  int
}

func (u *unboundedPolicy) pass(e *engine) {
	if u.order == nil {
		u.order = e.arrivalOrder()
	}
	for i := range e.models {
		e.seen[i].limit = e.sc.GlobalMaxRunning
		e.seen[i].depth, _, e.seen[i].hasDepth = e.depthSeen(i)
	}
	free := e.sc.GlobalMaxRunning - e.holding
	deadline := e.now + e.interval
	// Jobs whose task failed to start go first, model by model.
	for i := range e.models {
		m := &e.models[i]
		for free > 0 && len(m.retry) > 0 {
			g, ok := e.bucket.reserve(e.now, deadline)
			if !ok {
				return
			}
			j := e.laneTake(i, -1)
			e.reserve(j, int(e.jobs[j].attempt)+1, e.tierOf(int(e.jobs[j].batch)), g)
			free--
		}
	}
	for free > 0 && u.head < len(u.order) {
		bi := int(u.order[u.head])
		b := &e.batches[bi]
		if !b.arrived {
			break // later batches have not arrived either
		}
		if b.next >= b.n {
			u.head++
			continue
		}
		g, ok := e.bucket.reserve(e.now, deadline)
		if !ok {
			break
		}
		j := e.take(bi)
		e.reserve(j, 1, e.tierOf(bi), g)
		free--
	}
}

func (u *unboundedPolicy) failedToStart(j int32) { u.e.retryOrFail(j) }

func (u *unboundedPolicy) providerFailed(j int32) { u.e.retryOrFail(j) }
func (u *unboundedPolicy) submitted(int)          {}
func (u *unboundedPolicy) pinned(scenario.Pin)    {}
func (u *unboundedPolicy) started(int32)          {}
func (u *unboundedPolicy) stopped(int32)          {}
func (u *unboundedPolicy) finish(r *Result)       {}

// arrivalOrder lists the batches by arrival time, then file order.
func (e *engine) arrivalOrder() []int32 {
	order := make([]int32, len(e.batches))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(e.batches[a].at, e.batches[b].at) })
	return order
}

// laneNext peeks at the next job of model i's lane: a job whose task
// failed to start, else the oldest never-admitted job.
func (e *engine) laneNext(i int) (int32, int) {
	m := &e.models[i]
	if len(m.retry) > 0 {
		return m.retry[0], int(e.jobs[m.retry[0]].batch)
	}
	for m.laneHead < len(m.lanes) {
		bi := int(m.lanes[m.laneHead])
		b := &e.batches[bi]
		if !b.arrived {
			return -1, -1 // lanes are in arrival order: nothing later has arrived
		}
		if b.next < b.n {
			return b.first + b.next, bi
		}
		m.laneHead++
	}
	return -1, -1
}

// laneTake takes the job laneNext peeked at: the retry at the front, or
// batch bi's oldest never-admitted job.
func (e *engine) laneTake(i, bi int) int32 {
	m := &e.models[i]
	if len(m.retry) > 0 {
		j := m.retry[0]
		m.retry = m.retry[1:]
		return j
	}
	return e.take(bi)
}

// take advances a batch's cursor past its oldest never-admitted job.
func (e *engine) take(bi int) int32 {
	b := &e.batches[bi]
	j := b.first + b.next
	b.next++
	return j
}
