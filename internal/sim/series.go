package sim

import "math"

// Series is what the HTML report plots: every pass of every model, and the
// container starts by tier and by project, cumulative at each pass.
type Series struct {
	Models   []string
	Targets  []float64 // target depth per model
	Projects []string  // account/project, in order of first batch
	Tiers    int
	T        []int       // pass times, seconds
	Limit    [][]int     // [model][pass] limit the pass used
	Depth    [][]float64 // [model][pass] depth the pass saw; NaN: none
	Running  [][]int     // [model][pass] containers running before the pass
	Holding  [][]int     // [model][pass] slots held before the pass: reserved, starting or running
	Waiting  [][]int     // [model][pass] jobs waiting before the pass
	Capacity [][]int     // [model][pass] provider concurrency
	Held     [][]bool    // [model][pass] the breaker held admission back (OPEN or HALF_OPEN); dynamic only

	TierStarts    [][]int // [tier][pass] container starts so far
	ProjectStarts [][]int // [project][pass] container starts so far

	tierNow, projNow []int
}

func newSeries(e *engine) *Series {
	n := len(e.models)
	s := &Series{
		Projects: e.projects, Tiers: e.sc.Tiers,
		Limit: make([][]int, n), Depth: make([][]float64, n), Running: make([][]int, n), Holding: make([][]int, n),
		Waiting: make([][]int, n), Capacity: make([][]int, n), Held: make([][]bool, n),
		TierStarts: make([][]int, e.sc.Tiers), ProjectStarts: make([][]int, len(e.projects)),
		tierNow: make([]int, e.sc.Tiers), projNow: make([]int, len(e.projects)),
	}
	for i := range e.models {
		s.Models = append(s.Models, e.models[i].cfg.Name)
		s.Targets = append(s.Targets, e.models[i].cfg.TargetDepth)
	}
	return s
}

// beforePass records what a pass sees before it runs and returns its row;
// afterPass fills in the row's limit and depth. Rows are reserved in pass
// order, so a pass that stalls while another runs keeps its own row.
func (s *Series) beforePass(e *engine) int {
	s.T = append(s.T, int(e.now.Seconds()))
	for i := range e.models {
		m := &e.models[i]
		s.Running[i] = append(s.Running[i], m.running)
		s.Holding[i] = append(s.Holding[i], m.holding)
		s.Waiting[i] = append(s.Waiting[i], m.waiting)
		s.Capacity[i] = append(s.Capacity[i], m.conc)
		s.Limit[i] = append(s.Limit[i], 0)
		s.Held[i] = append(s.Held[i], false)
		s.Depth[i] = append(s.Depth[i], math.NaN())
	}
	for t, n := range s.tierNow {
		s.TierStarts[t] = append(s.TierStarts[t], n)
	}
	for p, n := range s.projNow {
		s.ProjectStarts[p] = append(s.ProjectStarts[p], n)
	}
	return len(s.T) - 1
}

func (s *Series) afterPass(row int, seen []seenModel) {
	for i := range seen {
		d := math.NaN()
		if seen[i].hasDepth {
			d = seen[i].depth
		}
		s.Limit[i][row] = seen[i].limit
		s.Depth[i][row] = d
		s.Held[i][row] = seen[i].held
	}
}

func (s *Series) started(e *engine, jb *job) {
	s.tierNow[jb.tier]++
	s.projNow[e.batches[jb.batch].project]++
}

// points is model i's trace in the JSON form.
func (s *Series) points(i int) []PassPoint {
	out := make([]PassPoint, len(s.T))
	for k, t := range s.T {
		out[k] = PassPoint{T: t, Limit: s.Limit[i][k], Depth: s.Depth[i][k], Running: s.Running[i][k], Waiting: s.Waiting[i][k]}
	}
	return out
}
