package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/sim/stream"
)

// FaultKind is one kind of fault the simulator injects into policy dynamic
// (what each does and what must hold: DESIGN.md, "Faults").
type FaultKind uint8

// The fault kinds, in the order the table prints them.
const (
	FaultCrash    FaultKind = iota // the scheduler dies between two steps of a pass
	FaultOverlap                   // invocations overlap: a duplicate invocation, a pass slower than its slot
	FaultEvents                    // ECS task events duplicated, reordered, delayed or lost
	FaultRunTask                   // RunTask throttled, out of capacity, timing out after starting the task
	FaultStore                     // DynamoDB throttling; a concurrent claim by an overlapping pass
	FaultMetrics                   // gateway-depth datapoints missing, stale or wildly wrong
	FaultIntake                    // SQS redelivering batches and delivering their parts out of order
	FaultProvider                  // a provider failing fast or slowing down for a while
	numFaultKinds
)

var faultNames = [numFaultKinds]string{"crash", "overlap", "events", "runtask", "store", "metrics", "intake", "provider"}

func (k FaultKind) String() string {
	if k < numFaultKinds {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// FaultKinds lists every kind, in table order.
func FaultKinds() []FaultKind {
	out := make([]FaultKind, numFaultKinds)
	for k := range out {
		out[k] = FaultKind(k)
	}
	return out
}

// Faults is a set of fault kinds; the zero value injects none.
type Faults uint16

// AllFaults is every kind.
const AllFaults Faults = 1<<numFaultKinds - 1

// ParseFaults reads "all", "none" (or "") or a comma-separated list of kinds.
func ParseFaults(s string) (Faults, error) {
	switch s = strings.TrimSpace(s); s {
	case "", "none":
		return 0, nil
	case "all":
		return AllFaults, nil
	}
	var f Faults
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		k := FaultKind(0)
		for k < numFaultKinds && faultNames[k] != name {
			k++
		}
		if k == numFaultKinds {
			return 0, fmt.Errorf("unknown fault kind %q: want all or a comma-separated list of %s", name, strings.Join(faultNames[:], ", "))
		}
		f |= 1 << k
	}
	return f, nil
}

// Has reports whether the set holds kind k.
func (f Faults) Has(k FaultKind) bool { return f&(1<<k) != 0 }

func (f Faults) String() string {
	switch f & AllFaults {
	case 0:
		return "none"
	case AllFaults:
		return "all"
	}
	var names []string
	for _, k := range FaultKinds() {
		if f.Has(k) {
			names = append(names, k.String())
		}
	}
	return strings.Join(names, ",")
}

// Injected faults surface as errors of these kinds; a pass or a repair that
// fails with one of them is the fault working, not a broken invariant.
var (
	errInjected  = errors.New("simulated fault")
	errThrottled = fmt.Errorf("%w: DynamoDB throttled the write (ProvisionedThroughputExceededException)", errInjected)
	errStale     = fmt.Errorf("%w: conditional check failed: another pass committed since this one read (stale)", errInjected)
	errDepths    = fmt.Errorf("%w: CloudWatch GetMetricData failed (ServiceUnavailable)", errInjected)
)

// onlyInjected reports whether err, and every error joined in it, is an
// injected fault.
func onlyInjected(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyInjected(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, errInjected)
}

// source is one family of fault episodes. Episodes of a source follow one
// another (never overlapping): the first starts within the first gap (so a
// short run still sees one), each next one an exponential gap after the end
// of the previous. A point source's episodes are consumed, each by the
// first opportunity at or after its start.
type source struct {
	kind     FaultKind
	gap      time.Duration    // mean time from one episode's end to the next one's start
	dur      [2]time.Duration // episode length, uniform in [dur[0], dur[1]]; zero: a point
	modes    int              // what an episode does, drawn per episode from 0..modes-1
	episodes []episode
	next     int // point sources: the first episode not yet consumed
}

// episode is one stretch of time during which a source injects faults.
type episode struct {
	from, to time.Duration
	mode     int
	model    int // metrics and provider: the model it hits (-1: every model)
}

// The sources. Their gaps and lengths are chosen so that every kind fires
// several times in the shipped scenarios while the system still has time to
// repair between episodes; a source's stream depends on its index only.
const (
	srcCrash     = iota // points; mode: where the pass dies (crashAfterCommit, …)
	srcDuplicate        // points: a second invocation starts
	srcSlowPass         // points: a pass stalls between reading and committing, for the episode's length
	srcEvents           // episodes: task events go wrong
	srcRunTask          // episodes: RunTask calls fail
	srcThrottle         // episodes: DynamoDB throttles writes
	srcRace             // points: an overlapping pass claims between a pass's read and its commit
	srcMetrics          // episodes; mode: metricsMissing, …
	srcProvider         // episodes; mode: providerFailing or providerSlow
	numSources
)

// Where a crash kills the pass.
const (
	crashAfterCommit = iota // jobs claimed, no RunTask issued
	crashMidLaunch          // half the claimed jobs' RunTasks issued
	crashAfterLaunch        // every RunTask returned, the launches never recorded
	numCrashPoints
)

// What a metrics episode does to the datapoints it touches.
const (
	metricsMissing = iota // no datapoint
	metricsStale          // the datapoint of ten minutes ago, with its time
	metricsTenfold        // ×10
	metricsZero           // 0, with a fresh time
	metricsError          // the GetMetricData call fails
	numMetricsModes
)

// What a provider episode does to its model.
const (
	providerFailing = iota // error_rate 0.8, failing after 0.5 s
	providerSlow           // call_s ×3
	numProviderModes
)

func newSources() [numSources]source {
	m, s := time.Minute, time.Second
	return [numSources]source{
		srcCrash:     {kind: FaultCrash, gap: 10 * m, modes: numCrashPoints},
		srcDuplicate: {kind: FaultOverlap, gap: 7 * m},
		srcSlowPass:  {kind: FaultOverlap, gap: 9 * m, dur: [2]time.Duration{5 * s, 40 * s}},
		srcEvents:    {kind: FaultEvents, gap: 6 * m, dur: [2]time.Duration{m, 6 * m}},
		srcRunTask:   {kind: FaultRunTask, gap: 7 * m, dur: [2]time.Duration{30 * s, 3 * m}},
		srcThrottle:  {kind: FaultStore, gap: 7 * m, dur: [2]time.Duration{20 * s, 2 * m}},
		srcRace:      {kind: FaultStore, gap: 9 * m},
		srcMetrics:   {kind: FaultMetrics, gap: 6 * m, dur: [2]time.Duration{20 * s, 90 * s}, modes: numMetricsModes},
		srcProvider:  {kind: FaultProvider, gap: 15 * m, dur: [2]time.Duration{2 * m, 8 * m}, modes: numProviderModes},
	}
}

// faultPlan is the fault schedule of one run and its counters. Episodes are
// drawn before the run from the scenario's seed, one stream per source; the
// per-opportunity draws (is this event lost? this RunTask throttled?) come
// from one stream per kind, in simulation order. Same scenario, seed and
// faults: same faults; and switching one kind on or off never moves another's.
type faultPlan struct {
	on       Faults
	src      [numSources]source
	draw     [numFaultKinds]*rand.Rand
	claims   *rand.Rand // the store's claim faults (claimFaults), apart so the other store draws do not move
	injected [numFaultKinds]int
}

func newFaultPlan(sc *scenario.Scenario, on Faults) *faultPlan {
	p := &faultPlan{on: on, src: newSources()}
	end := time.Duration(sc.DurationS) * time.Second
	for i := range p.src {
		s := &p.src[i]
		if !on.Has(s.kind) {
			continue
		}
		r := rand.New(stream.New(sc.Seed, stream.FaultPlan, uint64(i)))
		t := time.Duration(r.Int64N(int64(s.gap)))
		for t < end {
			ep := episode{from: t, to: t, model: -1}
			if s.dur[1] > 0 {
				ep.to = t + s.dur[0] + time.Duration(r.Int64N(int64(s.dur[1]-s.dur[0])+1))
			}
			if s.modes > 0 {
				ep.mode = r.IntN(s.modes)
			}
			if n := len(sc.Models); n > 1 {
				// Metrics: one model half the time, all of them otherwise.
				// Provider: always one model.
				if k := r.IntN(2 * n); s.kind == FaultProvider || k < n {
					ep.model = k % n
				}
			} else if s.kind == FaultProvider {
				ep.model = 0
			}
			s.episodes = append(s.episodes, ep)
			t = ep.to + time.Duration(r.ExpFloat64()*float64(s.gap))
		}
	}
	for k := range p.draw {
		p.draw[k] = rand.New(stream.New(sc.Seed, stream.FaultDraw, uint64(k)))
	}
	p.claims = rand.New(stream.New(sc.Seed, stream.FaultDraw, uint64(numFaultKinds)))
	return p
}

// active returns the episode of source i going on at t, if any.
func (p *faultPlan) active(i int, t time.Duration) (*episode, bool) {
	eps := p.src[i].episodes
	k := sort.Search(len(eps), func(k int) bool { return eps[k].to > t })
	if k < len(eps) && eps[k].from <= t {
		return &eps[k], true
	}
	return nil, false
}

// due returns the point episode of source i whose time has come by t, not
// yet consumed; consume it with take once it fired.
func (p *faultPlan) due(i int, t time.Duration) (*episode, bool) {
	s := &p.src[i]
	if s.next < len(s.episodes) && s.episodes[s.next].from <= t {
		return &s.episodes[s.next], true
	}
	return nil, false
}

// take consumes source i's due episode and counts the fault.
func (p *faultPlan) take(i int) {
	p.src[i].next++
	p.count(p.src[i].kind)
}

func (p *faultPlan) count(k FaultKind) { p.injected[k]++ }

// chance draws whether a fault of kind k with probability q happens now.
func (p *faultPlan) chance(k FaultKind, q float64) bool { return p.draw[k].Float64() < q }

// between draws a duration uniform in [lo, hi] from kind k's stream.
func (p *faultPlan) between(k FaultKind, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(p.draw[k].Int64N(int64(hi-lo)+1))
}

// The store's faults on a Commit's claims. The DynamoDB store writes the
// model states first, then claims each grant in a transaction of its own —
// batched across queues (dynamostore/claims.go), or one queue at a time —
// so a throttling episode can meet a Commit after its states are written:
//
//   - a claim transaction throttled (claimThrottled): nothing of it is
//     written and its grant claims nothing this pass; Commit returns the
//     other grants' jobs (an error if there are none), the states stay
//     written. Must hold: the counters match the jobs; the next pass
//     admits the grant's jobs again.
//   - a claim transaction applied but its answer lost, and the read that
//     would confirm it (the queue's last_claim) failing too (claimLost):
//     its jobs are CLAIMED and the pass does not know them. Must hold: the
//     reconciler returns them to waiting after its claim grace (attempt+1);
//     none is lost or launched twice.
//
// These draw from their own stream (faultPlan.claims): a Commit's grants
// in plan order, one draw each, only inside a throttling episode.
const (
	claimThrottled = 0.3
	claimLost      = 0.1
)

// commit is dynamostore.Commit under the claim faults: the store's Commit
// of the grants not throttled, then the jobs of grants whose answer was
// lost taken out of what the pass sees. all is every job claimed (the
// simulator reads them back), seen what the pass gets.
func (c *chaos) commit(ctx context.Context, plan scheduler.Plan) (all, seen []scheduler.Job, err error) {
	p := c.plan
	if _, ok := p.active(srcThrottle, c.d.e.now); !ok || c.settling {
		all, err = c.d.store.Commit(ctx, plan)
		return all, all, err
	}
	lost := map[scheduler.QueueKey]bool{}
	throttled := 0
	kept := plan
	kept.Models = make([]scheduler.ModelPlan, len(plan.Models))
	for i, mp := range plan.Models {
		mp.Grants = slices.Clone(mp.Grants)
		mp.Grants = slices.DeleteFunc(mp.Grants, func(g scheduler.Grant) bool {
			switch x := p.claims.Float64(); {
			case x < claimThrottled:
				throttled++
				c.stats.ClaimsThrottled++
				p.count(FaultStore)
				return true
			case x < claimThrottled+claimLost:
				lost[g.Queue] = true
				c.stats.ClaimsUnconfirmed++
				p.count(FaultStore)
			}
			return false
		})
		kept.Models[i] = mp
	}
	all, err = c.d.store.Commit(ctx, kept)
	for _, j := range all {
		if !lost[scheduler.QueueKey{Account: j.Account, Project: j.Project, Batch: j.Batch, Model: j.Model}] {
			seen = append(seen, j)
		}
	}
	if err == nil && len(seen) == 0 && (throttled > 0 || len(lost) > 0) {
		err = fmt.Errorf("claim jobs: %w", errThrottled)
	}
	return all, seen, err
}
