package faults

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/sim/stream"
)

// Kind is one kind of fault the simulator injects into policy dynamic
// (what each does and what must hold: internal/sim/DESIGN.md, "Faults").
type Kind uint8

// The fault kinds, in the order the table prints them.
const (
	Crash    Kind = iota // the scheduler dies between two steps of a pass
	Overlap              // invocations overlap: a duplicate invocation, a pass slower than its slot
	Events               // ECS task events duplicated, reordered, delayed or lost
	RunTask              // RunTask throttled, out of capacity, timing out after starting the task
	Store                // DynamoDB throttling; a concurrent claim by an overlapping pass
	Metrics              // gateway-depth datapoints missing, stale or wildly wrong
	Intake               // SQS redelivering batches and delivering their parts out of order
	Provider             // a provider failing fast or slowing down for a while
	NumKinds
)

var faultNames = [NumKinds]string{"crash", "overlap", "events", "runtask", "store", "metrics", "intake", "provider"}

func (k Kind) String() string {
	if k < NumKinds {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// Kinds lists every kind, in table order.
func Kinds() []Kind {
	out := make([]Kind, NumKinds)
	for k := range out {
		out[k] = Kind(k)
	}
	return out
}

// Set is a set of fault kinds; the zero value injects none.
type Set uint16

// All is every kind.
const All Set = 1<<NumKinds - 1

// Parse reads "all", "none" (or "") or a comma-separated list of kinds.
func Parse(s string) (Set, error) {
	switch s = strings.TrimSpace(s); s {
	case "", "none":
		return 0, nil
	case "all":
		return All, nil
	}
	var f Set
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		k := Kind(0)
		for k < NumKinds && faultNames[k] != name {
			k++
		}
		if k == NumKinds {
			return 0, fmt.Errorf("unknown fault kind %q: want all or a comma-separated list of %s", name, strings.Join(faultNames[:], ", "))
		}
		f |= 1 << k
	}
	return f, nil
}

// Has reports whether the set holds kind k.
func (f Set) Has(k Kind) bool { return f&(1<<k) != 0 }

func (f Set) String() string {
	switch f & All {
	case 0:
		return "none"
	case All:
		return "all"
	}
	var names []string
	for _, k := range Kinds() {
		if f.Has(k) {
			names = append(names, k.String())
		}
	}
	return strings.Join(names, ",")
}

// source is one family of fault episodes. Episodes of a source follow one
// another (never overlapping): the first starts within the first gap (so a
// short run still sees one), each next one an exponential gap after the end
// of the previous. A point source's episodes are consumed, each by the
// first opportunity at or after its start.
type source struct {
	kind     Kind
	gap      time.Duration    // mean time from one episode's end to the next one's start
	dur      [2]time.Duration // episode length, uniform in [dur[0], dur[1]]; zero: a point
	modes    int              // what an episode does, drawn per episode from 0..modes-1
	episodes []Episode
	next     int // point sources: the first episode not yet consumed
}

// Episode is one stretch of time during which a source injects faults.
type Episode struct {
	From, To time.Duration
	Mode     int
	Model    int // metrics and provider: the model it hits (-1: every model)
}

// The sources. Their gaps and lengths are chosen so that every kind fires
// several times in the shipped scenarios while the system still has time to
// repair between episodes; a source's stream depends on its index only.
const (
	SrcCrash     = iota // points; mode: where the pass dies (CrashAfterCommit, …)
	SrcDuplicate        // points: a second invocation starts
	SrcSlowPass         // points: a pass stalls between reading and committing, for the episode's length
	SrcEvents           // episodes: task events go wrong
	SrcRunTask          // episodes: RunTask calls fail
	SrcThrottle         // episodes: DynamoDB throttles writes
	SrcRace             // points: an overlapping pass claims between a pass's read and its commit
	SrcMetrics          // episodes; mode: MetricsMissing, …
	SrcProvider         // episodes; mode: ProviderFailing or ProviderSlow
	NumSources
)

// Where a crash kills the pass.
const (
	CrashAfterCommit = iota // jobs claimed, no RunTask issued
	CrashMidLaunch          // half the claimed jobs' RunTasks issued
	CrashAfterLaunch        // every RunTask returned, the launches never recorded
	numCrashPoints
)

// What a metrics episode does to the datapoints it touches.
const (
	MetricsMissing = iota // no datapoint
	MetricsStale          // the datapoint of ten minutes ago, with its time
	MetricsTenfold        // ×10
	MetricsZero           // 0, with a fresh time
	MetricsError          // the GetMetricData call fails
	NumMetricsModes
)

// What a provider episode does to its model.
const (
	ProviderFailing = iota // error_rate 0.8, failing after 0.5 s
	ProviderSlow           // call_s ×3
	numProviderModes
)

func newSources() [NumSources]source {
	m, s := time.Minute, time.Second
	return [NumSources]source{
		SrcCrash:     {kind: Crash, gap: 10 * m, modes: numCrashPoints},
		SrcDuplicate: {kind: Overlap, gap: 7 * m},
		SrcSlowPass:  {kind: Overlap, gap: 9 * m, dur: [2]time.Duration{5 * s, 40 * s}},
		SrcEvents:    {kind: Events, gap: 6 * m, dur: [2]time.Duration{m, 6 * m}},
		SrcRunTask:   {kind: RunTask, gap: 7 * m, dur: [2]time.Duration{30 * s, 3 * m}},
		SrcThrottle:  {kind: Store, gap: 7 * m, dur: [2]time.Duration{20 * s, 2 * m}},
		SrcRace:      {kind: Store, gap: 9 * m},
		SrcMetrics:   {kind: Metrics, gap: 6 * m, dur: [2]time.Duration{20 * s, 90 * s}, modes: NumMetricsModes},
		SrcProvider:  {kind: Provider, gap: 15 * m, dur: [2]time.Duration{2 * m, 8 * m}, modes: numProviderModes},
	}
}

// Plan is the fault schedule of one run and its counters. Episodes are
// drawn before the run from the scenario's seed, one stream per source; the
// per-opportunity draws (is this event lost? this RunTask throttled?) come
// from one stream per kind, in simulation order. Same scenario, seed and
// faults: same faults; and switching one kind on or off never moves another's.
type Plan struct {
	On       Set
	src      [NumSources]source
	draw     [NumKinds]*rand.Rand
	Claims   *rand.Rand    // the store's claim faults (the engine's storefaults.go), apart so the other store draws do not move
	Injected [NumKinds]int // faults that took effect, per kind (Count, Take)
}

// NewPlan draws the episodes of every source whose kind on holds, for the
// scenario's duration, models and seed.
func NewPlan(sc *scenario.Scenario, on Set) *Plan {
	p := &Plan{On: on, src: newSources()}
	end := time.Duration(sc.DurationS) * time.Second
	for i := range p.src {
		s := &p.src[i]
		if !on.Has(s.kind) {
			continue
		}
		r := rand.New(stream.New(sc.Seed, stream.FaultPlan, uint64(i)))
		t := time.Duration(r.Int64N(int64(s.gap)))
		for t < end {
			ep := Episode{From: t, To: t, Model: -1}
			if s.dur[1] > 0 {
				ep.To = t + s.dur[0] + time.Duration(r.Int64N(int64(s.dur[1]-s.dur[0])+1))
			}
			if s.modes > 0 {
				ep.Mode = r.IntN(s.modes)
			}
			if n := len(sc.Models); n > 1 {
				// Metrics: one model half the time, all of them otherwise.
				// Provider: always one model.
				if k := r.IntN(2 * n); s.kind == Provider || k < n {
					ep.Model = k % n
				}
			} else if s.kind == Provider {
				ep.Model = 0
			}
			s.episodes = append(s.episodes, ep)
			t = ep.To + time.Duration(r.ExpFloat64()*float64(s.gap))
		}
	}
	for k := range p.draw {
		p.draw[k] = rand.New(stream.New(sc.Seed, stream.FaultDraw, uint64(k)))
	}
	p.Claims = rand.New(stream.New(sc.Seed, stream.FaultDraw, uint64(NumKinds)))
	return p
}

// Active returns the episode of source i going on at t, if any.
func (p *Plan) Active(i int, t time.Duration) (*Episode, bool) {
	eps := p.src[i].episodes
	k := sort.Search(len(eps), func(k int) bool { return eps[k].To > t })
	if k < len(eps) && eps[k].From <= t {
		return &eps[k], true
	}
	return nil, false
}

// Due returns the point episode of source i whose time has come by t, not
// yet consumed; consume it with Take once it fired.
func (p *Plan) Due(i int, t time.Duration) (*Episode, bool) {
	s := &p.src[i]
	if s.next < len(s.episodes) && s.episodes[s.next].From <= t {
		return &s.episodes[s.next], true
	}
	return nil, false
}

// Take consumes source i's due episode and counts the fault.
func (p *Plan) Take(i int) {
	p.src[i].next++
	p.Count(p.src[i].kind)
}

// Count counts one fault of kind k that took effect.
func (p *Plan) Count(k Kind) { p.Injected[k]++ }

// Draw is kind k's stream of per-opportunity draws, for the draws Chance
// and Between do not cover (how many parts, a shuffle).
func (p *Plan) Draw(k Kind) *rand.Rand { return p.draw[k] }

// Episodes returns source i's episodes, in time order; the engine reads
// them ahead (the duplicate invocations and provider episodes it
// schedules) and may point into them.
func (p *Plan) Episodes(i int) []Episode { return p.src[i].episodes }

// Script replaces source i's episodes with eps (sorted, not overlapping):
// the engine's tests place one fault at a chosen time.
func (p *Plan) Script(i int, eps []Episode) { p.src[i].episodes = eps }

// Chance draws whether a fault of kind k with probability q happens now.
func (p *Plan) Chance(k Kind, q float64) bool { return p.draw[k].Float64() < q }

// Between draws a duration uniform in [lo, hi] from kind k's stream.
func (p *Plan) Between(k Kind, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(p.draw[k].Int64N(int64(hi-lo)+1))
}
