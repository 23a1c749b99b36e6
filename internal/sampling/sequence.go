package sampling

import (
	"cmp"
	"math"
	"slices"
)

// maxBet caps the bet on one result: the empirical-Bernstein penalty
// ψ(u) = −log(1−u) − u grows without bound as u → 1.
const maxBet = 0.9

// Sequence is the stratified confidence sequence of one sampled batch
// (package doc, "Confidence sequence"). Results go in with Add in release
// order: the order the batch's jobs were claimed, across all strata, and
// a result only once every job claimed before it has its result. Bounds
// then holds the batch's true pass rate at every Add at once with
// probability ≥ the confidence, however the strata were chosen, as long as
// each choice used only what was known before the claim.
type Sequence struct {
	p     Params
	logT  float64   // log(2/α): each side spends α/2
	total float64   // N
	size  []float64 // N_h
	w     []float64 // W_h = N_h/N
	seen  []int     // n_h: results in the prefix
	pass  []int     // S_h: passes among them
	d     []float64 // D_h: Σ bets on stratum h
	a     float64   // A: Σ bet·((N_h−i)x + S)/N_h
	b     float64   // B: Σ (x−p̃)²·ψ(bet·(N_h−i)/N_h)
	lo    float64   // running intersection of the lower bounds
	hi    float64   // and of the upper ones
	order []int     // scratch: strata by D_h/W_h
}

// NewSequence starts the sequence of a batch whose strata have sizes jobs
// (N_h > 0 each; the order is the caller's stratum index). p must be
// valid.
func NewSequence(p Params, sizes []int) *Sequence {
	s := &Sequence{p: p, logT: math.Log(2 / (1 - p.Confidence)), hi: 1}
	for _, n := range sizes {
		s.total += float64(n)
	}
	for _, n := range sizes {
		s.size = append(s.size, float64(n))
		s.w = append(s.w, float64(n)/s.total)
	}
	s.seen = make([]int, len(sizes))
	s.pass = make([]int, len(sizes))
	s.d = make([]float64, len(sizes))
	s.order = make([]int, len(sizes))
	for i := range s.order {
		s.order[i] = i
	}
	return s
}

// spread is σ̃_h = sqrt(p̃(1−p̃)) of the prefix, p̃ = (S_h+1)/(n_h+2).
func (s *Sequence) spread(h int) float64 {
	p := float64(s.pass[h]+1) / float64(s.seen[h]+2)
	return math.Sqrt(p * (1 - p))
}

func (s *Sequence) open(h int) bool { return float64(s.seen[h]) < s.size[h] }

// k is the common scale of the bets: at the stop the Lagrange solution
// moves open stratum g by Δ_g = k·σ̃_g with k = moe/Σ W_g σ̃_g (the open
// strata only: a complete stratum is known exactly).
func (s *Sequence) k() float64 {
	var sum float64
	for g := range s.size {
		if s.open(g) {
			sum += s.w[g] * s.spread(g)
		}
	}
	if sum == 0 {
		return 0
	}
	return s.p.MOE / sum
}

// raw is the bet u on stratum h's next result: the empirical-Bernstein
// Kelly bet for the shift that result's conditional mean has at the stop.
// Without replacement a shift Δ = k·σ̃_h of θ_h moves the next result's
// mean m_i by Δ/f, f = (N_h − n_h)/N_h (the unseen share), so the Kelly
// fraction is v = (k/f)/((k/f)+σ̃_h) ≤ maxBet on x − m_i; Add scales u
// by f, so u = v/f. (With f taken as 1 the bets shrink as a stratum is
// used up, just where each result says most.)
func (s *Sequence) raw(k float64, h int) float64 {
	f := (s.size[h] - float64(s.seen[h])) / s.size[h]
	if f <= 0 {
		return 0
	}
	d := k / f
	return min(d/(d+s.spread(h)), maxBet) / f
}

// bet is the predictable bet u on the next result of stratum h: what the
// prefix alone says (package doc), never the result itself. No stratum's
// bets may run ahead of its weight by more than one step of the leanest
// stratum: bets out of proportion to W_h would let the intersection move
// that stratum's mean to an end of its range and cancel what the others
// won. (Next keeps strata from falling behind.)
func (s *Sequence) bet(h int) float64 {
	k := s.k()
	if k == 0 {
		return 0
	}
	level, step := 0.0, math.Inf(1)
	for g := range s.size {
		if s.open(g) {
			level = max(level, s.d[g]/s.w[g])
			step = min(step, s.raw(k, g)/s.w[g])
		}
	}
	return max(0, min(s.raw(k, h), s.w[h]*(level+step)-s.d[h]))
}

// Next is the stratum of the next claim, given each stratum's claims not
// yet in the prefix (in flight, or ended after an unfinished one); -1
// when every job is claimed. Claims go:
//
//  1. to a stratum with fewer than min(MinPerStratum, N_h) claims, the
//     one with fewest (ties: lowest index);
//  2. then to the stratum whose bets, counting its pending claims at its
//     current bet, are furthest behind its weight: the least
//     (D_h + pending_h·u_h)/W_h. Equal D_h/W_h is what the intersection
//     needs (see bet); it gives stratum h a share of the claims near
//     W_h·(k+σ̃_h)/k ∝ W_h·σ̃_h, Neyman allocation.
func (s *Sequence) Next(pending []int) int {
	best, bestMin, bestScore := -1, false, 0.0
	k := s.k()
	for h := range s.size {
		n := s.seen[h] + pending[h]
		if float64(n) >= s.size[h] {
			continue
		}
		if n < min(s.p.MinPerStratum, int(s.size[h])) {
			if !bestMin || n < s.seen[best]+pending[best] {
				best, bestMin = h, true
			}
			continue
		}
		if bestMin {
			continue
		}
		score := (s.d[h] + float64(pending[h])*s.raw(k, h)) / s.w[h]
		if best < 0 || score < bestScore {
			best, bestScore = h, score
		}
	}
	return best
}

// Add takes the next result in release order: a result of stratum h. It
// panics on a stratum already complete.
func (s *Sequence) Add(h int, pass bool) {
	if !s.open(h) {
		panic("sampling: result for a complete stratum")
	}
	u := s.bet(h)
	x := 0.0
	if pass {
		x = 1
	}
	n, i, sh := s.size[h], float64(s.seen[h]), float64(s.pass[h])
	mean := (sh + 1) / (i + 2) // p̃ before this result: predictable
	s.a += u * ((n-i)*x + sh) / n
	s.d[h] += u
	if f := u * (n - i) / n; f > 0 {
		s.b += (x - mean) * (x - mean) * (-math.Log1p(-f) - f)
	}
	s.seen[h]++
	if pass {
		s.pass[h]++
	}
	lo, hi := s.bounds()
	s.lo, s.hi = max(s.lo, lo), min(s.hi, hi)
	if s.lo > s.hi { // both ends at one feasible value, up to rounding
		s.lo, s.hi = s.hi, s.lo
	}
}

// Bounds is the interval [lower, upper] for the batch's pass rate after
// the results added so far.
func (s *Sequence) Bounds() (float64, float64) { return s.lo, s.hi }

// Counted is the number of results added for stratum h.
func (s *Sequence) Counted(h int) int { return s.seen[h] }

// Results is the number of results added.
func (s *Sequence) Results() int {
	n := 0
	for _, k := range s.seen {
		n += k
	}
	return n
}

// bounds computes this look's interval, before the running intersection.
//
// Lower: μ0 is excluded when every stratum vector θ with Σ W_h θ_h ≤ μ0
// (each θ_h in its feasible range) has log M⁺(θ) = A − D·θ − B ≥ log(2/α),
// i.e. when max D·θ over those vectors is ≤ R = A − B − log(2/α). That
// maximum is a fractional knapsack: θ at the bottom of every range, then
// strata raised to their top in decreasing D_h/W_h. The upper bound is
// the mirror image (log M⁻(θ) = D·θ − A − B).
func (s *Sequence) bounds() (float64, float64) {
	slices.SortFunc(s.order, func(i, j int) int {
		return cmp.Or(cmp.Compare(s.d[j]*s.w[i], s.d[i]*s.w[j]), cmp.Compare(i, j))
	})
	var muLo, muHi, dLo, dHi float64 // at θ = bottom and θ = top of the ranges
	for h := range s.size {
		bot, top := s.feasible(h)
		muLo += s.w[h] * bot
		muHi += s.w[h] * top
		dLo += s.d[h] * bot
		dHi += s.d[h] * top
	}
	lower := muLo
	if r := s.a - s.b - s.logT; dLo <= r {
		mu, dt := muLo, dLo
		for _, h := range s.order {
			bot, top := s.feasible(h)
			span := top - bot
			if dt+s.d[h]*span > r {
				mu += s.w[h] * (r - dt) / s.d[h]
				dt = r
				break
			}
			mu += s.w[h] * span
			dt += s.d[h] * span
		}
		lower = mu
		if dt < r { // every feasible μ0 excluded: only rounding gets here
			lower = muHi
		}
	}
	upper := muHi
	if r := s.a + s.b + s.logT; dHi >= r {
		mu, dt := muHi, dHi
		for _, h := range s.order {
			bot, top := s.feasible(h)
			span := top - bot
			if dt-s.d[h]*span < r {
				mu -= s.w[h] * (dt - r) / s.d[h]
				dt = r
				break
			}
			mu -= s.w[h] * span
			dt -= s.d[h] * span
		}
		upper = mu
		if dt > r {
			upper = muLo
		}
	}
	return lower, upper
}

// feasible is the range of stratum h's pass rate that its prefix allows:
// every job not yet measured failing, or passing.
func (s *Sequence) feasible(h int) (float64, float64) {
	n, k, sh := s.size[h], float64(s.seen[h]), float64(s.pass[h])
	return sh / n, (sh + n - k) / n
}

// SequenceState is what a store keeps of a Sequence between looks: the
// running sums, per stratum in the caller's stratum order, and the
// running interval. It holds O(strata) numbers, never one per job, so a
// store can keep it in one record whatever the batch's size.
type SequenceState struct {
	Seen   []int     // n_h
	Pass   []int     // S_h
	D      []float64 // D_h
	A, B   float64
	Lo, Hi float64
}

// State is the sequence's state, for RestoreSequence.
func (s *Sequence) State() SequenceState {
	return SequenceState{Seen: slices.Clone(s.seen), Pass: slices.Clone(s.pass), D: slices.Clone(s.d), A: s.a, B: s.b, Lo: s.lo, Hi: s.hi}
}

// RestoreSequence is NewSequence(p, sizes) after the results st counts: the
// same sequence, bit for bit, as the one State was read from. ok is false
// when st does not fit sizes (other lengths, a count out of range).
func RestoreSequence(p Params, sizes []int, st SequenceState) (*Sequence, bool) {
	s := NewSequence(p, sizes)
	if len(st.Seen) != len(sizes) || len(st.Pass) != len(sizes) || len(st.D) != len(sizes) {
		return nil, false
	}
	for h, n := range sizes {
		if st.Seen[h] < 0 || st.Seen[h] > n || st.Pass[h] < 0 || st.Pass[h] > st.Seen[h] {
			return nil, false
		}
	}
	copy(s.seen, st.Seen)
	copy(s.pass, st.Pass)
	copy(s.d, st.D)
	s.a, s.b, s.lo, s.hi = st.A, st.B, st.Lo, st.Hi
	return s, true
}

// Passes is the number of passes added for stratum h.
func (s *Sequence) Passes(h int) int { return s.pass[h] }

// Size is stratum h's size N_h.
func (s *Sequence) Size(h int) int { return int(s.size[h]) }
