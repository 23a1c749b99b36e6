package admission

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

// batch builds a fixture: batch("acme/p", "b1", tier, seq, waiting) has ID "acme/p/b1".
func batch(proj, name string, tier int, seq int64, waiting int) Batch {
	return Batch{ID: proj + "/" + name, Project: proj, Tier: tier, Seq: seq, Waiting: waiting}
}

var cfg3 = Config{Tiers: 3, Weight: 0.8}

// saturated returns one huge batch per tier: demand that never runs out.
func saturated(tiers int) []Batch {
	var bs []Batch
	for t := range tiers {
		bs = append(bs, batch(fmt.Sprintf("acct/t%d", t), "b", t, 1, 1<<30))
	}
	return bs
}

// counts maps grants to batch ID → count, for order-insensitive checks.
func counts(r Result) map[string]int {
	m := map[string]int{}
	for _, g := range r.Grants {
		m[g.BatchID] += g.Count
	}
	return m
}

// shares is sharesInto into a fresh slice of max(cfg.Tiers, len(demand))
// entries, so a demand shorter than the tiers shows the padding's zeros.
func shares(cfg Config, demand []bool) []float64 {
	out := make([]float64, max(cfg.Tiers, len(demand)))
	sharesInto(cfg.Weight, demand, out)
	return out
}

func TestShares(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		demand []bool
		want   []float64
	}{
		{"all three", cfg3, []bool{true, true, true}, []float64{0.8, 0.16, 0.04}},
		{"top empty flows down", cfg3, []bool{false, true, true}, []float64{0, 0.8, 0.2}},
		{"middle empty", cfg3, []bool{true, false, true}, []float64{0.8, 0, 0.2}},
		{"only bottom", cfg3, []bool{false, false, true}, []float64{0, 0, 1}},
		{"only top", cfg3, []bool{true, false, false}, []float64{1, 0, 0}},
		{"none", cfg3, []bool{false, false, false}, []float64{0, 0, 0}},
		{"short demand padded to Tiers", cfg3, []bool{true}, []float64{1, 0, 0}},
		{"weight above 1 clamped", Config{Tiers: 2, Weight: 3}, []bool{true, true}, []float64{1, 0}},
		{"weight NaN is strict priority", Config{Tiers: 2, Weight: math.NaN()}, []bool{true, true}, []float64{1, 0}},
		{"weight 0.5 four tiers", Config{Tiers: 4, Weight: 0.5}, []bool{true, true, true, true}, []float64{0.5, 0.25, 0.125, 0.125}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := shares(tc.cfg, tc.demand)
			if len(got) != len(tc.want) {
				t.Fatalf("Shares(%v) = %v, want %v", tc.demand, got, tc.want)
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Fatalf("Shares(%v) = %v, want %v", tc.demand, got, tc.want)
				}
			}
		})
	}
}

// TestTierSplit runs passes against saturated or partly empty tiers and checks
// the long-run split per tier, in percent.
func TestTierSplit(t *testing.T) {
	tests := []struct {
		name    string
		batches []Batch
		passes  int
		free    int
		want    []float64 // percent per tier
	}{
		{"80/16/4 at 1 slot per pass", saturated(3), 1000, 1, []float64{80, 16, 4}},
		{"80/16/4 at 1000 slots per pass", saturated(3), 1, 1000, []float64{80, 16, 4}},
		{"80/16/4 at 3 slots per pass", saturated(3), 500, 3, []float64{80, 16, 4}},
		{"tier 0 empty flows down", saturated(3)[1:], 1000, 1, []float64{0, 80, 20}},
		{"tier 1 empty", []Batch{saturated(3)[0], saturated(3)[2]}, 100, 10, []float64{80, 0, 20}},
		{"only tier 2 takes all", saturated(3)[2:], 10, 10, []float64{0, 0, 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			byTier := make([]int, 3)
			total := 0
			for range tc.passes {
				var r Result
				r, st = Plan(cfg3, tc.free, tc.batches, st)
				for i, n := range r.ByTier {
					byTier[i] += n
				}
				total += r.Admitted
			}
			if want := tc.passes * tc.free; total != want {
				t.Fatalf("admitted %d, want %d", total, want)
			}
			for i, n := range byTier {
				got := 100 * float64(n) / float64(total)
				if math.Abs(got-tc.want[i]) > 2 {
					t.Errorf("tier %d: got %.1f%% (%v), want %.0f%% ± 2", i, got, byTier, tc.want[i])
				}
			}
		})
	}
}

// TestFlowDownMidPass: a tier that runs dry mid-pass leaves the rest to the
// tiers below at once, and gives its credit up.
func TestFlowDownMidPass(t *testing.T) {
	bs := []Batch{
		batch("a/x", "b", 0, 1, 5),
		batch("a/y", "b", 1, 1, 1000),
		batch("a/z", "b", 2, 1, 1000),
	}
	r, st := Plan(cfg3, 105, bs, State{})
	if got, want := r.ByTier[0], 5; got != want {
		t.Errorf("tier 0: got %d, want %d", got, want)
	}
	if got, want := r.Admitted, 105; got != want {
		t.Errorf("admitted: got %d, want %d", got, want)
	}
	// Of the 100 slots left after tier 0 is done, tiers 1 and 2 split ≈ 80/20.
	if got := r.ByTier[1]; got < 78 || got > 84 {
		t.Errorf("tier 1: got %d, want ≈ 81 (5×0.16 + 100×0.8)", got)
	}
	if got, want := st.Credit[0], 0.0; got != want {
		t.Errorf("tier 0 credit after running dry: got %v, want %v", got, want)
	}
}

func TestProjectRoundRobin(t *testing.T) {
	three := []Batch{
		batch("acct/c", "b", 0, 1, 100),
		batch("acct/a", "b", 0, 1, 100),
		batch("acct/b", "b", 0, 1, 100),
	}
	tests := []struct {
		name    string
		batches []Batch
		last    string // State.LastProject[0] before the first pass
		passes  int
		free    int
		want    []string // projects served, in order, over all passes
	}{
		{"name order from the start", three, "", 1, 5, []string{"acct/a", "acct/b", "acct/c", "acct/a", "acct/b"}},
		{"persists across 1-slot passes", three, "", 5, 1, []string{"acct/a", "acct/b", "acct/c", "acct/a", "acct/b"}},
		{"persists across 2-slot passes", three, "", 2, 2, []string{"acct/a", "acct/b", "acct/c", "acct/a"}},
		{"starts after last", three, "acct/b", 1, 3, []string{"acct/c", "acct/a", "acct/b"}},
		{"last was the end: wraps", three, "acct/c", 1, 2, []string{"acct/a", "acct/b"}},
		{"last project gone: next name after it", []Batch{three[0], three[1]}, "acct/b", 1, 3, []string{"acct/c", "acct/a", "acct/c"}},
		{"last sorts past all: wraps", three, "zzz", 1, 1, []string{"acct/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := State{Credit: []float64{0}, LastProject: []string{tc.last}}
			var got []string
			for range tc.passes {
				var r Result
				r, st = Plan(Config{Tiers: 1, Weight: 0.8}, tc.free, tc.batches, st)
				// Each project has one batch and takes one job per turn, so with
				// ≤ 1 turn per project per pass the grant order is the turn order;
				// for longer passes, replay turns from the counts.
				got = append(got, turns(r, tc.batches)...)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("served %v, want %v", got, tc.want)
			}
		})
	}
}

// turns rebuilds the sequence of project turns of one pass with single-batch
// projects in one tier: grants are in first-slot order, and each round serves
// every project still holding jobs once.
func turns(r Result, bs []Batch) []string {
	proj := map[string]string{}
	for _, b := range bs {
		proj[b.ID] = b.Project
	}
	left := make([]int, len(r.Grants))
	for i, g := range r.Grants {
		left[i] = g.Count
	}
	var out []string
	for more := true; more; {
		more = false
		for i, g := range r.Grants {
			if left[i] > 0 {
				out = append(out, proj[g.BatchID])
				left[i]--
				more = true
			}
		}
	}
	return out
}

// TestVolumeBuysNothing: a 50,000-job project and a 10-job project start jobs
// at the same rate until the small one is done.
func TestVolumeBuysNothing(t *testing.T) {
	bs := []Batch{
		batch("acct/big", "b", 0, 1, 50_000),
		batch("acct/small", "b", 0, 2, 10),
	}
	tests := []struct {
		name      string
		free      int
		passes    int
		wantBig   int
		wantSmall int
	}{
		{"one pass of 20", 20, 1, 10, 10},
		{"one pass of 8", 8, 1, 4, 4},
		{"small runs dry, big takes the rest", 100, 1, 90, 10},
		{"20 passes of 1 slot", 1, 20, 10, 10},
		{"7 passes of 3 slots", 3, 7, 11, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			cur := slices.Clone(bs)
			total := map[string]int{}
			for range tc.passes {
				var r Result
				r, st = Plan(Config{Tiers: 1, Weight: 0.8}, tc.free, cur, st)
				for i := range cur {
					n := counts(r)[cur[i].ID]
					cur[i].Waiting -= n // the jobs started leave the queue
					total[cur[i].Project] += n
				}
			}
			if got := total["acct/big"]; got != tc.wantBig {
				t.Errorf("big: got %d, want %d", got, tc.wantBig)
			}
			if got := total["acct/small"]; got != tc.wantSmall {
				t.Errorf("small: got %d, want %d", got, tc.wantSmall)
			}
		})
	}
}

// TestNoProjectWaitsMoreThanOneRound: with 1 slot per pass and n projects,
// every project is served exactly once in every n consecutive passes.
func TestNoProjectWaitsMoreThanOneRound(t *testing.T) {
	var bs []Batch
	for i := range 7 {
		bs = append(bs, batch(fmt.Sprintf("acct/p%d", i), "b", 0, int64(i), 1000*(i+1)))
	}
	var st State
	lastServed := map[string]int{}
	for pass := range 70 {
		var r Result
		r, st = Plan(Config{Tiers: 1, Weight: 0.8}, 1, bs, st)
		if len(r.Grants) != 1 {
			t.Fatalf("pass %d: got %d grants, want 1", pass, len(r.Grants))
		}
		id := r.Grants[0].BatchID
		if prev, ok := lastServed[id]; ok && pass-prev != len(bs) {
			t.Fatalf("pass %d: %s served after %d passes, want %d", pass, id, pass-prev, len(bs))
		}
		lastServed[id] = pass
	}
}

func TestOldestBatchFirst(t *testing.T) {
	tests := []struct {
		name    string
		batches []Batch
		free    int
		want    []Grant
	}{
		{
			name: "lower seq drains first",
			batches: []Batch{
				batch("a/p", "new", 0, 20, 5),
				batch("a/p", "old", 0, 10, 3),
			},
			free: 5,
			want: []Grant{{"a/p/old", 3}, {"a/p/new", 2}},
		},
		{
			name: "same seq: ID breaks the tie",
			batches: []Batch{
				batch("a/p", "b2", 0, 1, 2),
				batch("a/p", "b1", 0, 1, 2),
			},
			free: 3,
			want: []Grant{{"a/p/b1", 2}, {"a/p/b2", 1}},
		},
		{
			name: "empty batches are skipped",
			batches: []Batch{
				batch("a/p", "old", 0, 1, 0),
				batch("a/p", "neg", 0, 2, -4),
				batch("a/p", "new", 0, 3, 2),
			},
			free: 5,
			want: []Grant{{"a/p/new", 2}},
		},
		{
			name: "age orders batches within a project, not across projects",
			batches: []Batch{
				batch("a/x", "young", 0, 99, 2),
				batch("a/y", "old", 0, 1, 2),
			},
			free: 4,
			want: []Grant{{"a/x/young", 2}, {"a/y/old", 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := Plan(Config{Tiers: 1, Weight: 0.8}, tc.free, tc.batches, State{})
			if !reflect.DeepEqual(r.Grants, tc.want) {
				t.Errorf("grants: got %v, want %v", r.Grants, tc.want)
			}
		})
	}
}

func TestEdges(t *testing.T) {
	some := []Batch{batch("a/p", "b", 0, 1, 4), batch("a/q", "b", 2, 1, 4)}
	tests := []struct {
		name       string
		cfg        Config
		free       int
		batches    []Batch
		st         State
		wantAdmit  int
		wantByTier []int
		wantCredit []float64
		wantLast   []string
	}{
		{
			name: "free=0 admits nothing and keeps credits of tiers with demand",
			cfg:  cfg3, free: 0, batches: some,
			st:         State{Credit: []float64{0.5, 0.7, -0.2}, LastProject: []string{"x", "y", "z"}},
			wantByTier: []int{0, 0, 0},
			wantCredit: []float64{0.5, 0, -0.2}, wantLast: []string{"x", "y", "z"},
		},
		{
			name: "negative free admits nothing",
			cfg:  cfg3, free: -3, batches: some,
			wantByTier: []int{0, 0, 0},
			wantCredit: []float64{0, 0, 0}, wantLast: []string{"", "", ""},
		},
		{
			name: "no batches resets idle credits",
			cfg:  cfg3, free: 10,
			st:         State{Credit: []float64{0.5, 0.7, -0.2}, LastProject: []string{"x", "y", "z"}},
			wantByTier: []int{0, 0, 0},
			wantCredit: []float64{0, 0, 0}, wantLast: []string{"x", "y", "z"},
		},
		{
			name: "more free than waiting admits all waiting",
			cfg:  cfg3, free: 100, batches: some,
			wantAdmit: 8, wantByTier: []int{4, 0, 4},
			wantCredit: []float64{0, 0, 0}, wantLast: []string{"a/p", "", "a/q"},
		},
		{
			name: "short state is reset",
			cfg:  cfg3, free: 0, batches: some,
			st:         State{Credit: []float64{9}, LastProject: []string{"x"}},
			wantByTier: []int{0, 0, 0},
			wantCredit: []float64{0, 0, 0}, wantLast: []string{"", "", ""},
		},
		{
			name: "long state is reset",
			cfg:  Config{Tiers: 2, Weight: 0.8}, free: 0, batches: some,
			st:         State{Credit: []float64{1, 2, 3, 4}, LastProject: []string{"a", "b", "c", "d"}},
			wantByTier: []int{0, 0},
			wantCredit: []float64{0, 0}, wantLast: []string{"", ""},
		},
		{
			name: "NaN credit becomes 0, huge credits are clamped to ±Tiers",
			cfg:  cfg3, free: 0, batches: []Batch{batch("a/p", "b", 0, 1, 4), batch("a/q", "b", 1, 1, 4), batch("a/r", "b", 2, 1, 4)},
			st:         State{Credit: []float64{math.NaN(), math.Inf(-1), 1e300}, LastProject: []string{"", "", ""}},
			wantByTier: []int{0, 0, 0},
			wantCredit: []float64{0, -3, 3}, wantLast: []string{"", "", ""},
		},
		{
			name: "tiers out of range are clamped",
			cfg:  Config{Tiers: 2, Weight: 1}, free: 3,
			batches:   []Batch{batch("a/lo", "b", -5, 1, 1), batch("a/hi", "b", 7, 1, 5)},
			wantAdmit: 3, wantByTier: []int{1, 2},
			wantCredit: []float64{0, 0}, wantLast: []string{"a/lo", "a/hi"},
		},
		{
			name: "Tiers 0 means one tier",
			cfg:  Config{Tiers: 0, Weight: 0.8}, free: 2, batches: some,
			wantAdmit: 2, wantByTier: []int{2},
			wantCredit: []float64{0}, wantLast: []string{"a/q"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, st := Plan(tc.cfg, tc.free, tc.batches, tc.st)
			if r.Admitted != tc.wantAdmit {
				t.Errorf("admitted: got %d, want %d", r.Admitted, tc.wantAdmit)
			}
			if !slices.Equal(r.ByTier, tc.wantByTier) {
				t.Errorf("by tier: got %v, want %v", r.ByTier, tc.wantByTier)
			}
			for i := range st.Credit {
				if i >= len(tc.wantCredit) || math.Abs(st.Credit[i]-tc.wantCredit[i]) > 1e-9 {
					t.Errorf("credit: got %v, want %v", st.Credit, tc.wantCredit)
					break
				}
			}
			if len(st.Credit) != len(tc.wantCredit) {
				t.Errorf("credit: got %v, want %v", st.Credit, tc.wantCredit)
			}
			if !slices.Equal(st.LastProject, tc.wantLast) {
				t.Errorf("last project: got %q, want %q", st.LastProject, tc.wantLast)
			}
		})
	}
}

func TestDoesNotMutateInputs(t *testing.T) {
	bs := []Batch{batch("a/q", "b", 1, 2, 4), batch("a/p", "b", 0, 1, 4), batch("a/p", "a", 0, 0, 1)}
	st := State{Credit: []float64{0.3, -0.3, 0}, LastProject: []string{"a/p", "", ""}}
	bs0, st0 := slices.Clone(bs), State{Credit: slices.Clone(st.Credit), LastProject: slices.Clone(st.LastProject)}
	_, next := Plan(cfg3, 5, bs, st)
	if !reflect.DeepEqual(bs, bs0) {
		t.Errorf("batches: got %v, want %v", bs, bs0)
	}
	if !reflect.DeepEqual(st, st0) {
		t.Errorf("state: got %v, want %v", st, st0)
	}
	next.Credit[0], next.LastProject[0] = 99, "zzz"
	if st.Credit[0] == 99 || st.LastProject[0] == "zzz" {
		t.Errorf("returned state aliases the input state")
	}
}

// benchBatches builds n batches in n/5 projects spread over tiers.
func benchBatches(n, projects, tiers int) []Batch {
	bs := make([]Batch, n)
	for i := range bs {
		p := i % projects
		bs[i] = Batch{
			ID:      fmt.Sprintf("acct%d/proj%d/batch%d", p%50, p, i),
			Project: fmt.Sprintf("acct%d/proj%d", p%50, p),
			Tier:    p % tiers,
			Seq:     int64(n - i),
			Waiting: 1 + (i*7919)%200,
		}
	}
	return bs
}

func BenchmarkPlan(b *testing.B) {
	cases := []struct {
		name                     string
		batches, projects, tiers int
		free                     int
	}{
		{"2000b_400p_3t_500free", 2000, 400, 3, 500},
		{"10000b_2000p_3t_5000free", 10000, 2000, 3, 5000},
		{"2000b_400p_3t_1free", 2000, 400, 3, 1},
	}
	for _, c := range cases {
		bs := benchBatches(c.batches, c.projects, c.tiers)
		cfg := Config{Tiers: c.tiers, Weight: 0.8}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var st State
			for b.Loop() {
				_, st = Plan(cfg, c.free, bs, st)
			}
		})
	}
}
