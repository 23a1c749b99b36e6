package admission

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
)

// Batch is one queue of waiting jobs of one model: the jobs of one batch for that model.
type Batch struct {
	ID      string // "account/project/batch" (unique within the call)
	Project string // "account/project": the unit that takes turns within a tier
	Tier    int    // 0 = most urgent; already resolved by the priority package
	Seq     int64  // submission order: lower is older (older batch first within a project)
	Waiting int    // jobs waiting in this batch
}

// Config sets the tier split.
type Config struct {
	Tiers  int     // number of tiers, >= 1
	Weight float64 // share a tier takes of what is left to it, e.g. 0.8
}

// State is what admission carries from one pass to the next for one model; the store persists it as a plain value.
type State struct {
	Credit      []float64 // per tier: fractional entitlement carried between passes
	LastProject []string  // per tier: the project served last; the next turn starts after it
}

// Grant is how many jobs of one batch to start.
type Grant struct {
	BatchID string
	Count   int
}

// Result is what Plan admits.
type Result struct {
	Grants   []Grant // one per batch that gets jobs, in the order the batch first got a slot
	Admitted int     // sum of Grants' counts
	ByTier   []int   // admitted per tier, len Tiers
}

// project is one project's waiting batches within one tier: order[next:end]
// are its batches not yet drained, oldest first.
type project struct {
	name  string
	next  int // position in order of the batch being drained
	end   int
	left  int // jobs left in the batch at next
	grant int // index in Result.Grants of the batch at next; -1 until it gets a slot
}

// tierQueue is one tier's rotation of projects. Projects with jobs left form
// a circular list through ring; prev is the node just before the next turn, so
// a project that runs dry is unlinked in O(1) without scanning.
type tierQueue struct {
	active int // projects with jobs left
	prev   int // project index whose ring successor takes the next turn
	last   int // project served last this pass; -1 if none
}

// Plan hands up to free slots to the waiting batches. It never admits more than free, nor more than a batch's Waiting. Deterministic: same inputs, same outputs; never depends on map iteration order. It does not mutate its inputs: the returned State is a fresh copy.
//
// Batches with Waiting <= 0 are ignored; a Tier outside 0..Tiers-1 is clamped
// into range; a State whose slices do not have Tiers entries (first pass, or
// Tiers changed) starts from zero credits and no last project.
func Plan(cfg Config, free int, batches []Batch, st State) (Result, State) {
	tiers := max(cfg.Tiers, 1)
	credit, last := carry(st, tiers)
	res := Result{ByTier: make([]int, tiers)}

	// 1. Group: sort once by (tier, project, age) so every tier is a run of
	//    projects in name order and every project a run of batches oldest first.
	order := make([]int, 0, len(batches))
	for i := range batches {
		if batches[i].Waiting > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(i, j int) int {
		// 1–4: Compare  5: input position (total order)
		if c := cfg.Compare(&batches[i], &batches[j]); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})

	// 2. Build each tier's rotation, starting after the project served last.
	nProjects := min(len(order), 1)
	for k := 1; k < len(order); k++ {
		a, b := &batches[order[k-1]], &batches[order[k]]
		if a.Project != b.Project || clampTier(a.Tier, tiers) != clampTier(b.Tier, tiers) {
			nProjects++
		}
	}
	projects := make([]project, 0, nProjects)
	tierStart := make([]int, tiers+1) // projects[tierStart[t]:tierStart[t+1]] are tier t's
	for k := 0; k < len(order); {
		b := &batches[order[k]]
		t := clampTier(b.Tier, tiers)
		end := k + 1
		for end < len(order) {
			n := &batches[order[end]]
			if n.Project != b.Project || clampTier(n.Tier, tiers) != t {
				break
			}
			end++
		}
		projects = append(projects, project{name: b.Project, next: k, end: end, left: b.Waiting, grant: -1})
		tierStart[t+1] = len(projects)
		k = end
	}
	for t := 1; t <= tiers; t++ {
		tierStart[t] = max(tierStart[t], tierStart[t-1]) // tiers without projects are empty runs
	}
	ring := make([]int, len(projects))
	queues := make([]tierQueue, tiers)
	demand := make([]bool, tiers)
	live := 0 // tiers with demand
	for t := range tiers {
		lo, hi := tierStart[t], tierStart[t+1]
		q := &queues[t]
		q.active, q.last = hi-lo, -1
		if q.active == 0 {
			credit[t] = 0 // no hoarding while idle
			continue
		}
		demand[t] = true
		live++
		for p := lo; p < hi; p++ {
			ring[p] = p + 1
		}
		ring[hi-1] = lo
		// The first project whose name is > last, wrapping around; a project
		// that has since gone keeps its place in the order all the same.
		first := lo + sort.Search(hi-lo, func(i int) bool { return projects[lo+i].name > last[t] })
		if first == hi {
			first = lo
		}
		q.prev = first - 1
		if first == lo {
			q.prev = hi - 1
		}
	}

	// 3. Hand out slots one at a time: smooth weighted round robin over tiers,
	//    then the next project's turn, then that project's oldest batch.
	if n := min(free, len(order)); n > 0 {
		res.Grants = make([]Grant, 0, n) // no growth in the slot loop; stays nil when nothing is admitted
	}
	shares := make([]float64, tiers)
	sharesInto(cfg.Weight, demand, shares)
	for res.Admitted < free && live > 0 {
		best := -1
		for t := range tiers {
			if !demand[t] {
				continue
			}
			credit[t] += shares[t]
			if best < 0 || credit[t] > credit[best] { // ties → lower tier
				best = t
			}
		}
		credit[best]--

		q := &queues[best]
		p := ring[q.prev]
		pr := &projects[p]
		if pr.grant < 0 {
			pr.grant = len(res.Grants)
			res.Grants = append(res.Grants, Grant{BatchID: batches[order[pr.next]].ID})
		}
		res.Grants[pr.grant].Count++
		res.Admitted++
		res.ByTier[best]++
		q.last = p

		pr.left--
		if pr.left == 0 {
			pr.next++
			pr.grant = -1
			if pr.next < pr.end {
				pr.left = batches[order[pr.next]].Waiting
			}
		}
		if pr.next < pr.end {
			q.prev = p // its next turn comes after everyone else's
			continue
		}
		// The project ran dry: drop it from the rotation.
		ring[q.prev] = ring[p]
		q.active--
		if q.active == 0 {
			// The tier ran dry: its share flows down to the tiers still waiting.
			demand[best] = false
			credit[best] = 0
			live--
			sharesInto(cfg.Weight, demand, shares)
		}
	}

	for t := range tiers {
		if q := queues[t]; q.last >= 0 {
			last[t] = projects[q.last].name
		}
	}
	return res, State{Credit: credit, LastProject: last}
}

// sharesInto writes each tier's share of a slot into out, given which tiers
// have demand: the first tier with demand takes weight, the next weight of
// the rest, ..., the last tier with demand takes all that is left; tiers
// without demand, and those of out past the end of demand, get 0. The shares
// sum to 1 when any tier has demand. out must have at least len(demand)
// entries; it is the caller's, so the per-slot loop allocates nothing.
// weight is clamped to [0, 1] (NaN counts as 1: strict priority is the safe
// reading of a broken config).
func sharesInto(weight float64, demand []bool, out []float64) {
	if math.IsNaN(weight) {
		weight = 1
	}
	weight = min(max(weight, 0), 1)
	lastDemand := -1
	for t, d := range demand {
		if d {
			lastDemand = t
		}
	}
	rest := 1.0
	for t := range out {
		switch {
		case t >= len(demand) || !demand[t]:
			out[t] = 0
		case t == lastDemand:
			out[t] = rest
			rest = 0
		default:
			out[t] = rest * weight
			rest -= out[t]
		}
	}
}

// carry copies the persisted state for this pass. A slice of the wrong length
// belongs to a different tier layout, so it is dropped rather than reused: a
// credit earned as tier 2 of 3 means nothing as tier 2 of 4. Credits Plan
// produces stay within about ±1.5 (smooth weighted round robin keeps each within
// a slot or so of its entitlement), so a value that is not finite or lies
// outside ±Tiers comes from a corrupt item: it is zeroed or clamped rather than
// left to pin one tier to every slot for thousands of passes.
func carry(st State, tiers int) ([]float64, []string) {
	credit := make([]float64, tiers)
	if len(st.Credit) == tiers {
		bound := float64(tiers)
		for t, c := range st.Credit {
			if !math.IsNaN(c) {
				credit[t] = min(max(c, -bound), bound) // ±Inf clamps too
			}
		}
	}
	last := make([]string, tiers)
	if len(st.LastProject) == tiers {
		copy(last, st.LastProject)
	}
	return credit, last
}

// Compare is the order Plan drains batches in: 1: tier (as Tier files it)
// 2: project name 3: age (Seq) 4: ID. Every tier is a run of projects in
// name order and every project a run of batches, oldest first. (Plan breaks
// what ties are left by input position.) The status forecast groups batches
// by it too, so it prunes exactly what Plan could not reach.
func (c Config) Compare(a, b *Batch) int {
	tiers := max(c.Tiers, 1)
	if c := cmp.Compare(clampTier(a.Tier, tiers), clampTier(b.Tier, tiers)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Project, b.Project); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Tier is the tier Plan files b under: its Tier clamped into 0..Tiers-1.
func (c Config) Tier(b *Batch) int { return clampTier(b.Tier, max(c.Tiers, 1)) }

func clampTier(t, tiers int) int {
	return min(max(t, 0), tiers-1)
}
