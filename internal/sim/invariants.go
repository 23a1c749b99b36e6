package sim

import (
	"fmt"
	"strconv"

	domain "github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// The invariants of policy dynamic, checked after every step that changes a
// job (DESIGN.md, "Invariants"). The simulator reads back every job the store
// changes, right after the call that changed it, into a shadow of the
// store: the job's state and attempt, and per model the jobs holding a
// slot. Each read checks the move against the lifecycle and the job against
// the world (the simulator's own record of the job and its task); the
// counters are checked against a recount after every pass, every reconcile
// and every batch message (and after every task event in scenarios of at
// most checkEveryEventJobs jobs: a recount is O(jobs)).

// checkEveryEventJobs bounds the scenarios whose store is recounted after
// every task event too: 20 000 jobs recount in about 0.1 ms.
const checkEveryEventJobs = 20_000

// sState is a job's store state as the simulator last read it.
type sState uint8

const (
	sUnknown sState = iota // not in the store (its message has not come yet)
	sWaiting
	sClaimed
	sLaunched
	sRunning
	sSucceeded
	sFailed
	sCancelled
)

var sNames = [...]string{"unknown", "WAITING", "CLAIMED", "LAUNCHED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"}

func stateOf(s domain.State) sState {
	switch s {
	case domain.Waiting:
		return sWaiting
	case domain.Claimed:
		return sClaimed
	case domain.Launched:
		return sLaunched
	case domain.Running:
		return sRunning
	case domain.Succeeded:
		return sSucceeded
	case domain.Failed:
		return sFailed
	case domain.Cancelled:
		return sCancelled
	}
	return sUnknown
}

// holds is 1 for the states that hold a slot (count toward the limits).
func (s sState) holds() int {
	if s == sClaimed || s == sLaunched || s == sRunning {
		return 1
	}
	return 0
}

// shadow is the store as the simulator last read it.
type shadow struct {
	state      []sState
	attempt    []int32
	holding    []int // per model: jobs claimed, launched or running
	running    []int // per model: jobs running
	bound      []int // per model: the most it may hold (doc.go)
	holdingAll int
	boundAll   int
	inCommit   bool // a commit's claims are being read: the bounds move after it
}

func newShadow(jobs, models int) shadow {
	return shadow{
		state: make([]sState, jobs), attempt: make([]int32, jobs),
		holding: make([]int, models), running: make([]int, models), bound: make([]int, models),
	}
}

// legal reports whether the store may move a job from (os, oa) to (ns, na)
// in one step: the lifecycle WAITING → CLAIMED → LAUNCHED → RUNNING →
// SUCCEEDED | FAILED, where events may skip ahead (a STOPPED event ends a
// launched job), a job that did not get to run (a refused launch, a
// yield) returns to WAITING with attempt+1, and an ended job never moves
// again.
func legal(os sState, oa int32, ns sState, na int32) bool {
	if ns == sCancelled {
		return os != sUnknown && os < sSucceeded
	}
	switch os {
	case sUnknown:
		return ns == sWaiting && na == 1
	case sWaiting:
		return ns == sClaimed && na == oa
	case sClaimed, sLaunched, sRunning:
		return na == oa && ns > os || ns == sWaiting && na == oa+1
	}
	return false
}

func (d *dynamicPolicy) observeID(id string) {
	if j, ok := d.byID[id]; ok {
		d.observe(j)
		return
	}
	d.violation("the store names job %s, which no batch has", id)
}

// observe reads job j back from the store after a call that may have
// changed it, and checks it.
func (d *dynamicPolicy) observe(j int32) {
	e := d.e
	sh := &d.sh
	ns, na := sUnknown, int32(0)
	if sj, ok := d.store.Job(d.ids[j]); ok {
		ns, na = stateOf(sj.State), int32(sj.Attempt)
	}
	os, oa := sh.state[j], sh.attempt[j]
	m := e.jobs[j].model
	if ns != os || na != oa {
		if !legal(os, oa, ns, na) {
			d.violation("job %s: the store moved it from %s to %s", d.jobName(j), stateName(os, oa), stateName(ns, na))
		}
		dh := ns.holds() - os.holds()
		sh.holding[m] += dh
		sh.holdingAll += dh
		if ns == sRunning {
			sh.running[m]++
		}
		if os == sRunning {
			sh.running[m]--
		}
		sh.state[j], sh.attempt[j] = ns, na
	}
	// A job the store failed at launch (its attempts spent) ends here too.
	if ns == sFailed && e.jobs[j].state == jobWaiting {
		e.launchFailed(j)
	}
	d.agrees(j)
	if !sh.inCommit {
		d.withinBounds(int(m))
	}
}

// agrees checks job j's store state against the world. The store may lag
// behind the world (an event late or lost), never run ahead of it: a job
// launched, running or ended in the store has that very task in the world
// (or, launched, had it until the yield stopped it), and a job with a task
// in the world is not waiting in the store.
func (d *dynamicPolicy) agrees(j int32) {
	s, sa := d.sh.state[j], d.sh.attempt[j]
	jb := &d.e.jobs[j]
	task := jb.attempt > 0 && jb.state >= jobReserved && jb.state <= jobFailed
	same := task && jb.attempt == sa
	var ok bool
	switch s {
	case sUnknown:
		ok = jb.state == jobWaiting || jb.state == jobUnsubmitted
	case sWaiting:
		ok = jb.state == jobWaiting
	case sClaimed:
		ok = jb.state == jobWaiting || same
	case sLaunched:
		// Or the yield stopped its task, or the provider failed it, its
		// STOPPED event not landed yet.
		ok = same || jb.state == jobWaiting && (d.yielded(j, sa) || d.providerStopped(j, sa))
	case sRunning:
		ok = same && jb.state >= jobRunning || jb.state == jobWaiting && d.providerStopped(j, sa)
	case sSucceeded:
		ok = same && jb.state == jobSucceeded
	case sFailed:
		ok = same && jb.state == jobFailed || jb.state == jobLaunchFailed
	}
	if !ok {
		d.violation("job %s: the store has it %s, the world %s", d.jobName(j), stateName(s, sa), d.worldName(j))
	}
}

// yielded reports whether the yield step stopped job j's task of attempt a
// under faults, where its STOPPED event may come late or never.
func (d *dynamicPolicy) yielded(j, a int32) bool {
	if d.fx == nil {
		return false
	}
	_, ok := d.fx.yields[taskKey{j, a}]
	return ok
}

// providerStopped reports whether the provider failed job j's task of
// attempt a under faults, its job waiting again, where its STOPPED event
// may come late or never.
func (d *dynamicPolicy) providerStopped(j, a int32) bool {
	if d.fx == nil {
		return false
	}
	_, ok := d.fx.providerStops[taskKey{j, a}]
	return ok
}

// bound moves the models' bounds after a committed plan: from now on a
// model may hold at most its new limit, or what it held before the pass
// when that was more (lowering a limit evicts nothing; the launches already
// in flight run). Between passes nothing adds to what a model holds.
func (d *dynamicPolicy) bound(plan scheduler.Plan) {
	sh := &d.sh
	before := 0
	for _, mp := range plan.Models {
		i, ok := d.index[mp.Model]
		if !ok {
			continue
		}
		held := mp.Running + mp.Starting
		before += held
		sh.bound[i] = max(mp.State.Limit.Limit, held)
	}
	sh.boundAll = max(d.e.sc.GlobalMaxRunning, before)
	for i := range sh.bound {
		d.withinBounds(i)
	}
}

// withinBounds checks model m, and the account, against their bounds.
func (d *dynamicPolicy) withinBounds(m int) {
	sh := &d.sh
	if sh.holding[m] > sh.bound[m] {
		d.violation("model %s holds %d jobs, over its limit (or what it held when the limit fell): %d",
			d.e.models[m].cfg.Name, sh.holding[m], sh.bound[m])
		sh.bound[m] = sh.holding[m] // report each overshoot once
	}
	if sh.holdingAll > sh.boundAll {
		d.violation("the account holds %d jobs, over global_max_running (or what it held when the cap was reached): %d",
			sh.holdingAll, sh.boundAll)
		sh.boundAll = sh.holdingAll
	}
}

// checkStore recounts the store's counters (memstore.Check) and compares
// them with the shadow's.
func (d *dynamicPolicy) checkStore(when string) {
	if err := d.store.Check(); err != nil {
		d.checkFails++
		d.violation("store check %s: %v", when, err)
	}
	snap, _ := d.store.Snapshot(d.ctx, Epoch.Add(d.e.now))
	for _, m := range snap.Models {
		i, ok := d.index[m.Config.Name]
		if !ok {
			continue
		}
		if m.Running+m.Starting != d.sh.holding[i] || m.Running != d.sh.running[i] {
			d.violation("store check %s: model %s has %d running and %d starting, a recount of its jobs %d running and %d starting",
				when, m.Config.Name, m.Running, m.Starting, d.sh.running[i], d.sh.holding[i]-d.sh.running[i])
			d.sh.holding[i], d.sh.running[i] = m.Running+m.Starting, m.Running // report once
		}
	}
}

// checkEvent recounts after a task event, with faults (without, events
// land as they happen and the recount after each pass covers them), in
// scenarios small enough.
func (d *dynamicPolicy) checkEvent() {
	if d.fx != nil && len(d.e.jobs) <= checkEveryEventJobs {
		d.checkStore("after a task event")
	}
}

// settled checks, at the end, that every job is exactly where the world
// says: no lag is left once the system has settled.
func (d *dynamicPolicy) settled() {
	e := d.e
	for i := range e.jobs {
		j := int32(i)
		jb := &e.jobs[j]
		want := sUnknown
		switch jb.state {
		case jobWaiting:
			want = sWaiting
		case jobReserved, jobStarting:
			want = sLaunched
		case jobRunning:
			want = sRunning
		case jobSucceeded:
			want = sSucceeded
		case jobFailed, jobLaunchFailed:
			want = sFailed
		}
		got, attempt := sUnknown, int32(0)
		if sj, ok := d.store.Job(d.ids[j]); ok {
			got, attempt = stateOf(sj.State), int32(sj.Attempt)
		}
		if got != d.sh.state[j] || attempt != d.sh.attempt[j] {
			d.violation("job %s: the store has it %s, but the simulator read %s last (a change it missed)",
				d.jobName(j), stateName(got, attempt), stateName(d.sh.state[j], d.sh.attempt[j]))
		}
		task := jb.state >= jobReserved && jb.state <= jobFailed
		if got != want || task && attempt != jb.attempt {
			d.violation("end: job %s: the store has it %s, the world %s", d.jobName(j), stateName(got, attempt), d.worldName(j))
		}
	}
}

func (d *dynamicPolicy) jobName(j int32) string {
	jb := &d.e.jobs[j]
	b := &d.e.batches[jb.batch]
	return b.cfg.Key() + "#" + strconv.Itoa(int(j-b.first)) + " (" + d.ids[j] + ")"
}

func stateName(s sState, attempt int32) string {
	if s == sUnknown {
		return "nowhere"
	}
	return fmt.Sprintf("%s attempt %d", sNames[s], attempt)
}

var worldNames = [...]string{
	jobUnsubmitted: "not submitted", jobWaiting: "waiting", jobReserved: "launching",
	jobStarting: "starting", jobRunning: "running", jobSucceeded: "succeeded", jobFailed: "failed",
	jobLaunchFailed: "failed at launch",
}

// worldName says where the world has a job: its state and its task.
func (d *dynamicPolicy) worldName(j int32) string {
	jb := &d.e.jobs[j]
	s := worldNames[jb.state]
	if jb.attempt > 0 {
		s += fmt.Sprintf(" (task of attempt %d", jb.attempt)
		switch {
		case jb.state >= jobSucceeded && jb.state <= jobFailed:
			s += fmt.Sprintf(", ended at t=%gs)", jb.endAt.Seconds())
		case jb.state >= jobRunning:
			s += fmt.Sprintf(", running since t=%gs)", jb.runAt.Seconds())
		default:
			s += fmt.Sprintf(", RunTask at t=%gs)", jb.admitAt.Seconds())
		}
	}
	return s
}
