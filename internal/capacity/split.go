package capacity

import (
	"cmp"
	"slices"
)

// Split water-fills cap units across demands: every demand gets
// min(demand, fair level), max-min fair; a single demand may take all of cap.
// Results are integers in the input order; sum(result) == min(cap,
// sum(demands)); result[i] <= demands[i]; negative demands count as 0;
// cap <= 0 gives all zeros. When the fair level leaves a remainder that cannot
// be split evenly, the extra units go to the demands with the largest unmet
// demand, ties broken by the lower input index (callers sort inputs by model
// name, so the order is deterministic). O(n log n).
//
// Formula, with d_i = max(demands[i], 0):
//
//	L = the largest integer with Σ min(d_i, L) <= cap   (the fair level)
//	r = cap − Σ min(d_i, L)                              (the remainder, r < #{i : d_i > L})
//	result[i] = min(d_i, L), plus 1 for the r demands with d_i > L
//	            that have the largest d_i (lower index first on ties)
//
// Regimes:
//   - cap >= Σ d_i: there is enough for everyone; result[i] = d_i.
//   - cap < Σ d_i: demands at or below L are met in full; every larger
//     demand gets L or L+1, so no unmet demand trails any other share by
//     more than one unit.
//   - one demand: it gets min(cap, d_0), all of cap if it wants it.
//   - cap <= 0 or no demand: all zeros.
func Split(cap int, demands []int) []int {
	result := make([]int, len(demands))
	if cap <= 0 || len(demands) == 0 {
		return result
	}
	want := func(i int) int { return max(demands[i], 0) }

	// Visit demands from the smallest, so each one met in full leaves more
	// for the rest. Among equal demands the higher index comes first: the
	// remainder goes to the tail of this order, which then holds the largest
	// demands, lowest index last.
	order := make([]int, len(demands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(want(a), want(b)); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})

	left := cap
	for k, i := range order {
		n := len(order) - k // demands not yet served, i included
		level := left / n   // compares as d <= left/n, which cannot overflow like d*n
		if want(i) <= level {
			result[i] = want(i)
			left -= want(i)
			continue
		}
		// This demand and all after it exceed the level: each gets the
		// level, and the last left%n of them one unit more. Each can take
		// it, since its demand is at least level+1.
		extra := left % n
		for j, r := range order[k:] {
			result[r] = level
			if j >= n-extra {
				result[r]++
			}
		}
		break
	}
	return result
}
