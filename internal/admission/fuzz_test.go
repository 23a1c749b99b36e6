package admission

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

// FuzzPlan checks the invariants of Plan on arbitrary inputs: never more than
// free, never more than a batch waits, all it can when slots suffice, ByTier
// adds up, same inputs give the same outputs, inputs are left alone.
//
// data is read 4 bytes per batch: tier (signed, so out of range both ways),
// project (one of 8), seq, waiting (signed, so empty and negative batches occur).
func FuzzPlan(f *testing.F) {
	f.Add(3, 0.8, 10, []byte{0, 1, 1, 5, 1, 2, 1, 5, 2, 3, 1, 5}, 3, 0.5, "acct/p1")
	f.Add(1, 0.8, 1, []byte{0, 0, 0, 50, 0, 1, 0, 1}, 1, 0.0, "")
	f.Add(3, 0.8, 0, []byte{0, 0, 0, 9}, 3, 0.0, "")
	f.Add(3, 0.8, 5, []byte{}, 0, 0.0, "")
	f.Add(2, 1.5, 7, []byte{255, 7, 3, 3, 9, 7, 2, 200}, 5, math.Inf(1), "zzz")
	f.Add(4, -1.0, 100, []byte{3, 1, 9, 255, 2, 1, 8, 3, 1, 1, 7, 0}, 4, math.NaN(), "acct/p1")
	f.Fuzz(func(t *testing.T, tiers int, weight float64, free int, data []byte, stLen int, credit float64, last string) {
		tiers = tiers % 8 // keep Tiers small; 0 and negatives must still work
		free = free % 5000
		stLen = stLen % 8
		if stLen < 0 {
			stLen = -stLen
		}
		cfg := Config{Tiers: tiers, Weight: weight}

		var bs []Batch
		total := 0
		for i := 0; i+4 <= len(data) && len(bs) < 500; i += 4 {
			p := fmt.Sprintf("acct/p%d", data[i+1]%8)
			b := Batch{
				ID:      fmt.Sprintf("%s/b%d", p, i),
				Project: p,
				Tier:    int(int8(data[i])) % 10,
				Seq:     int64(data[i+2]),
				Waiting: int(int8(data[i+3])),
			}
			bs = append(bs, b)
			total += max(b.Waiting, 0)
		}
		st := State{Credit: make([]float64, stLen), LastProject: make([]string, stLen)}
		for i := range stLen {
			st.Credit[i] = credit * float64(i-1)
			st.LastProject[i] = last
		}
		bs0 := slices.Clone(bs)
		st0 := State{Credit: slices.Clone(st.Credit), LastProject: slices.Clone(st.LastProject)}

		r, next := Plan(cfg, free, bs, st)

		nTiers := max(tiers, 1)
		if want := max(min(free, total), 0); r.Admitted != want {
			t.Fatalf("admitted %d, want min(free %d, waiting %d) = %d", r.Admitted, free, total, want)
		}
		if len(r.ByTier) != nTiers {
			t.Fatalf("len(ByTier) = %d, want %d", len(r.ByTier), nTiers)
		}
		sum := 0
		for _, n := range r.ByTier {
			if n < 0 {
				t.Fatalf("ByTier %v has a negative entry", r.ByTier)
			}
			sum += n
		}
		if sum != r.Admitted {
			t.Fatalf("ByTier %v sums to %d, want Admitted %d", r.ByTier, sum, r.Admitted)
		}
		waiting := map[string]int{}
		for _, b := range bs {
			waiting[b.ID] = b.Waiting
		}
		seen := map[string]bool{}
		sum = 0
		for _, g := range r.Grants {
			if seen[g.BatchID] {
				t.Fatalf("batch %s granted twice", g.BatchID)
			}
			seen[g.BatchID] = true
			if g.Count <= 0 || g.Count > waiting[g.BatchID] {
				t.Fatalf("grant %v, want 1..%d", g, waiting[g.BatchID])
			}
			sum += g.Count
		}
		if sum != r.Admitted {
			t.Fatalf("grants sum to %d, want Admitted %d", sum, r.Admitted)
		}
		if len(next.Credit) != nTiers || len(next.LastProject) != nTiers {
			t.Fatalf("state lengths %d/%d, want %d", len(next.Credit), len(next.LastProject), nTiers)
		}
		for _, c := range next.Credit {
			// Carried credits are clamped to ±Tiers; one pass moves them by
			// little more than a slot's worth beyond that.
			if math.IsNaN(c) || math.Abs(c) > float64(2*nTiers+2) {
				t.Fatalf("credit %v out of bounds", next.Credit)
			}
		}
		if !reflect.DeepEqual(bs, bs0) {
			t.Fatalf("batches mutated")
		}
		if !slices.Equal(st.LastProject, st0.LastProject) || !reflect.DeepEqual(fmt.Sprint(st.Credit), fmt.Sprint(st0.Credit)) {
			t.Fatalf("state mutated")
		}

		r2, next2 := Plan(cfg, free, bs, st)
		if !reflect.DeepEqual(r, r2) || fmt.Sprint(next) != fmt.Sprint(next2) {
			t.Fatalf("not deterministic: %v %v then %v %v", r, next, r2, next2)
		}
		// The order of the input must not matter either.
		rev := slices.Clone(bs)
		slices.Reverse(rev)
		r3, next3 := Plan(cfg, free, rev, st)
		if !reflect.DeepEqual(r, r3) || fmt.Sprint(next) != fmt.Sprint(next3) {
			t.Fatalf("depends on input order: %v %v then %v %v", r, next, r3, next3)
		}
	})
}
