package forecast

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/evalsched/evalsched/internal/admission"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// Config bounds the forecast.
type Config struct {
	Pass    time.Duration // one scheduler pass (config PassInterval, 10 s)
	Horizon time.Duration // past this an ETA is unknown: 7 days
	// MinSteps and MaxSteps bound the admission calls per model; between
	// them, Work / waiting batches sets it, so the forecast of 10,000 batches
	// costs about what the forecast of 1,000 does.
	MinSteps, MaxSteps int
	Work               int // batches visited by admission calls, about, over all models
	// MaxUnits bounds the slots a model's simulation hands out one by one
	// (admission's cost is linear in them): past MaxUnits, a slot stands for
	// several jobs, so that the rest takes at most as many again. Slots / the
	// models with waiting batches sets it, at least MinUnits.
	MaxUnits, MinUnits int
	Slots              int
	// noPrune hands admission every waiting batch at every step, for the
	// test that checks the pruning changes nothing.
	noPrune bool
}

// DefaultConfig is status's forecast for a pass every pass (10 s when not
// positive).
func DefaultConfig(pass time.Duration) Config {
	if pass <= 0 {
		pass = 10 * time.Second
	}
	return Config{
		Pass: pass, Horizon: 7 * 24 * time.Hour,
		MinSteps: 200, MaxSteps: 2000, Work: 4_000_000,
		MinUnits: 20_000, MaxUnits: 1_000_000, Slots: 10_000_000,
	}
}

// ETA is one batch's forecast, in seconds from now; -1 is unknown.
type ETA struct {
	StartS float64 // when its last waiting job is admitted
	DoneS  float64 // when that job ends: StartS + the model's mean time in a slot
}

// Unknown is the ETA of a batch the forecast cannot tell.
var Unknown = ETA{StartS: -1, DoneS: -1}

// Model is one model as the forecast sees it.
type Model struct {
	Admission admission.Config
	State     admission.State   // the admission state the next pass starts from
	Batches   []admission.Batch // its unpaused waiting batches; IDs unique
	// NextPass is what the next pass hands admission (the dry run's Free);
	// Open the further slots free now that the launch budget leaves for
	// later passes.
	NextPass, Open  int
	EndedPerMin     float64
	Held            int  // running + starting, for Little's law
	LaunchesPerPass int  // the account's launch budget a pass; 0: none
	Admitting       bool // false: model disabled or breaker not closed
}

// Outlook is what ForModel found.
type Outlook struct {
	ETAs  []ETA   // per Batches index
	StepS float64 // the longest step that admitted anything: the coarsest ETA's resolution
	Unit  int     // jobs a simulated slot stands for
	Steps int     // admission calls made
}

// ForModel steps one model's admission forward until its batches are
// all admitted, the horizon passes, or nothing will ever free a slot.
//
// Regimes:
//   - end rate > 0: slots free at that rate, the ETAs follow admission's order;
//   - end rate 0 (nothing ended in the window): only the slots free now are
//     handed out; what they leave waiting is unknown;
//   - not Admitting (breaker OPEN or HALF_OPEN, model disabled): only what the
//     next pass admits (HALF_OPEN's probes) is known; when the breaker closes
//     again is not for this forecast to guess.
func ForModel(fc Config, m Model) Outlook {
	out := Outlook{ETAs: make([]ETA, len(m.Batches)), Unit: 1}
	passS := max(fc.Pass.Seconds(), 1)
	horizonS := fc.Horizon.Seconds()
	rate := max(m.EndedPerMin, 0) / 60 // jobs a second
	// Little's law: slots held = end rate × mean time in a slot.
	slotS := -1.0
	if rate > 0 && m.Held > 0 {
		slotS = float64(m.Held) / rate
	}
	done := func(start float64) ETA {
		if slotS < 0 {
			return ETA{StartS: start, DoneS: -1}
		}
		return ETA{StartS: start, DoneS: start + slotS}
	}
	open := max(m.Open, 0)
	if !m.Admitting {
		rate, open = 0, 0
	}

	// 1. What waits, counted one job a slot until MaxUnits (below), and the
	// steps' relative resolution.
	waiting := 0
	for i, b := range m.Batches {
		out.ETAs[i] = Unknown
		if b.Waiting <= 0 {
			out.ETAs[i] = done(0) // nothing left to start
			continue
		}
		waiting += b.Waiting
	}
	if waiting == 0 {
		return out
	}
	unit := 1                           // jobs a simulated slot stands for
	left := make([]int, len(m.Batches)) // units still waiting, per batch
	remaining := waiting                // units still waiting, in all
	for i, b := range m.Batches {
		left[i] = max(b.Waiting, 0)
	}
	// The relative resolution: the steps from one pass to the horizon, one
	// pass long up to t = pass/eps and eps·t after, number about
	// 1/eps + ln(horizon·eps/pass)/eps <= (1 + ln(horizon/pass))/eps.
	eps := (1 + math.Log(max(horizonS/passS, 1))) / float64(max(fc.MaxSteps, 1))
	out.StepS = passS

	// 2. Group the batches by (tier, project), oldest first, in the order
	// admission drains them (admission.Config.Compare). Only for pruning: a batch with more than `free` jobs of
	// its own group ahead of it cannot get a slot in this call, so it is
	// left out of it and admission.Plan sorts the few that can, not all of
	// them. (One batch past `free` stays in: a tier that runs dry mid-call
	// gives up its credit, so Plan must see the demand that is left.) Which
	// of those gets what is still Plan's decision.
	order := make([]int, 0, len(m.Batches))
	byID := make(map[string]int, len(m.Batches))
	for i, b := range m.Batches {
		if left[i] > 0 {
			order = append(order, i)
			byID[b.ID] = i
		}
	}
	slices.SortFunc(order, func(i, j int) int { return m.Admission.Compare(&m.Batches[i], &m.Batches[j]) })
	type group struct{ next, end int } // order[next:end]: the group's batches not yet drained
	var groups []group
	for k := 0; k < len(order); {
		a := &m.Batches[order[k]]
		end := k + 1
		for end < len(order) && m.Admission.Tier(&m.Batches[order[end]]) == m.Admission.Tier(a) && m.Batches[order[end]].Project == a.Project {
			end++
		}
		groups = append(groups, group{k, end})
		k = end
	}

	// 3. Step: hand free units to the groups' heads, record what drains.
	state := m.State
	sub := make([]admission.Batch, 0, len(groups))
	grant := func(t float64, free int) {
		sub = sub[:0]
		for _, g := range groups {
			ahead := 0
			for k := g.next; k < g.end && (ahead <= free || fc.noPrune); k++ {
				b := m.Batches[order[k]]
				b.Waiting = left[order[k]]
				sub = append(sub, b)
				ahead += b.Waiting
			}
		}
		var res admission.Result
		res, state = admission.Plan(m.Admission, free, sub, state)
		out.Steps++
		for _, g := range res.Grants {
			i := byID[g.BatchID]
			left[i] -= g.Count
			remaining -= g.Count
			if left[i] == 0 {
				out.ETAs[i] = done(t)
			}
		}
		live := groups[:0]
		for _, g := range groups {
			for g.next < g.end && left[order[g.next]] == 0 {
				g.next++
			}
			if g.next < g.end {
				live = append(live, g)
			}
		}
		groups = live
	}

	t := passS             // the next pass: within one pass from now
	avail := float64(open) // jobs' worth of free slots not yet handed out
	if first := min(max(m.NextPass, 0), remaining); first > 0 {
		grant(t, first)
	}
	handed := 0 // units handed out at unit 1
	for remaining > 0 {
		if unit == 1 && handed >= fc.MaxUnits {
			// MaxUnits slots simulated one by one: count the rest in units
			// that fit in as many again. A unit rounds each batch up by less
			// than one and turns projects a unit at a time; against the time
			// simulated so far, that moves the later ETAs by well under eps.
			reach := avail + rate*(horizonS-t)
			if k := int(math.Ceil(min(float64(remaining), reach) / float64(max(fc.MaxUnits, 1)))); k > 1 {
				unit, remaining = k, 0
				for i := range left {
					left[i] = (left[i] + k - 1) / k
					remaining += left[i]
				}
				out.Unit = k
			}
		}
		passes := max(1, int(eps*t/passS)) // passes this step spans
		dt := float64(passes) * passS
		t += dt
		if t > horizonS {
			break
		}
		avail += rate * dt
		n := int(avail / float64(unit))
		if m.LaunchesPerPass > 0 {
			n = min(n, max(1, m.LaunchesPerPass*passes/unit))
		}
		n = min(n, remaining)
		if n <= 0 {
			if rate == 0 {
				break // nothing will free a slot
			}
			continue
		}
		avail -= float64(n * unit)
		out.StepS = dt
		if unit == 1 {
			handed += n
		}
		grant(t, n)
	}
	return out
}

// Queues forecasts every queue of the snapshot, in its order, from
// the dry-run plan Decide made of it at now. Paused queues, queues of models
// without a model item, and what lies past the horizon are unknown.
func Queues(fc Config, sc scheduler.Config, snap scheduler.Snapshot, plan scheduler.Plan, now time.Time) []ETA {
	out := make([]ETA, len(snap.Queues))
	for i := range out {
		out[i] = Unknown
	}
	// 1. The queues admission sees, by model, in snapshot order (as Decide
	// groups them): paused ones hold no demand.
	pins, _ := priority.Compile(snap.Pins, sc.Tiers, now)
	pauses := scheduler.PausesOf(snap.Pauses)
	byModel := map[string][]int{}
	active := 0
	for i, q := range snap.Queues {
		if _, paused := pauses.By(q.Account, q.Project, q.Batch); paused {
			continue
		}
		byModel[q.Model] = append(byModel[q.Model], i)
		active++
	}
	models := make(map[string]scheduler.Model, len(snap.Models))
	for _, m := range snap.Models {
		models[m.Config.Name] = m
	}
	// 2. The budgets of steps and slots, shared by all models' batches.
	fc.MaxSteps = min(max(fc.Work/max(active, 1), fc.MinSteps), fc.MaxSteps)
	fc.MaxUnits = min(max(fc.Slots/max(len(byModel), 1), fc.MinUnits), fc.MaxUnits)
	acfg := admission.Config{Tiers: sc.Tiers, Weight: sc.TierWeight}

	// 3. Per model, in the plan's (name) order: the inputs, then the
	// forecasts, in parallel (each is independent and writes only its own
	// queues' entries, so the result does not depend on the schedule).
	type job struct {
		queues []int
		model  Model
	}
	var jobs []job
	for _, mp := range plan.Models {
		qs := byModel[mp.Model]
		if len(qs) == 0 {
			continue
		}
		m := models[mp.Model]
		queues := make([]scheduler.Queue, len(qs))
		for j, qi := range qs {
			queues[j] = snap.Queues[qi]
		}
		batches := scheduler.AdmissionBatches(queues, pins, sc.DefaultTier) // as Decide ranks them
		admitting := m.Config.Enabled && mp.Breaker.Allow < 0
		open := 0
		if admitting {
			open = max(0, min(mp.State.Limit.Limit, mp.Capacity)-mp.Running-mp.Starting-mp.Free)
		}
		jobs = append(jobs, job{queues: qs, model: Model{
			Admission: acfg, State: m.State.Admission, Batches: batches,
			NextPass: mp.Free, Open: open,
			EndedPerMin: EndRate(mp.State, now), Held: mp.Running + mp.Starting,
			LaunchesPerPass: sc.MaxLaunchesPerPass, Admitting: admitting,
		}})
	}
	next := make(chan job)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Go(func() {
			for j := range next {
				o := ForModel(fc, j.model)
				for k, qi := range j.queues {
					out[qi] = o.ETAs[k]
				}
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return out
}
