// Package sampling decides which jobs of a sampled batch run and when the
// rest may be skipped: stratified sampling without replacement with a stop
// rule whose interval holds the batch's true pass rate at every look at
// once, in finite samples (docs/sampling.md has the construction, its
// proof sketch and its costs).
//
// It sits between the batch contract and the store's claim:
//
//	batch "sampling" + job "stratum" ──▶ store: per stratum, jobs in Rank order
//	pass grants k slots to the batch ──▶ Sequence.Next: which stratum each claim goes to
//	claims, in order ──▶ the store's release log
//	results of the log's completed prefix ──▶ Sequence.Add ──▶ Bounds
//	                                                  │ half-width ≤ moe
//	                                                  └──▶ the rest end SKIPPED
//
// # Release order
//
// Within a stratum jobs are released in the order of Rank(batch, key), a
// keyed hash (SHA-256 of the batch id and the key): random with respect to
// the submitter's order (which often sorts by difficulty or source), the
// same on every run and in every store, and independent between batches.
// Across strata the release order is the order of the claims. A result
// counts only once every job claimed before it has its result: when a
// job's time depends on its outcome (failures run long), results in
// arrival order are passes first, and a stop that read them would be
// biased; the completed prefix of the release order is a random sample
// whatever the durations.
//
// # Confidence sequence
//
// Sequence is a betting confidence sequence (Waudby-Smith & Ramdas,
// "Estimating means of bounded random variables by betting", and its
// without-replacement form, "Confidence sequences for sampling without
// replacement", NeurIPS 2020) made stratified by an intersection over the
// strata's means, as risk-limiting audits do (Spertus & Stark, "Sweeter
// than SUITE"). For a vector θ of stratum pass rates, the i-th result x of
// stratum h (N_h jobs, S passes among its first i−1 results) has
// conditional mean m = (N_h·θ_h − S)/(N_h − i + 1) under θ, and
//
//	M⁺(θ) = Π exp( u·f·(x − m) − (x − p̃)²·ψ(u·f) ),   ψ(v) = −log(1−v) − v
//
// with f = (N_h−i+1)/N_h and a bet u ≥ 0 (u·f ≤ 0.9) chosen from the
// earlier results only, is a nonnegative supermartingale at the true θ (Fan's
// inequality; p̃ is the stratum's earlier pass rate, smoothed). M⁻ bets
// the other way. Both are exp(±(A − D·θ) − B) for running sums A, B and
// a vector D (D_h is the sum of the bets on stratum h): linear in θ. A
// pass rate μ0 is excluded when every θ with Σ W_h θ_h = μ0 (each θ_h
// within what its stratum's results allow) has M⁺ or M⁻ ≥ 2/α; the
// least M over that set is a fractional knapsack in θ, solved exactly.
// The true θ is one of the vectors, so Ville's inequality bounds the
// chance that the truth is ever excluded by α, at every look, however the
// strata and the bets were chosen from the past.
//
// The bets make the interval short: u·f = (k/f)/(k/f + σ̃_h) with
// k = moe/Σ W_g σ̃_g is the empirical-Bernstein Kelly bet for the shift
// the batch's interval needs at the stop (k·σ̃_h in θ_h, k·σ̃_h/f in the
// next result's mean), and Next gives each claim to the stratum whose bets
// are furthest behind its weight (D_h/W_h least), which spreads claims
// near N_h·σ̃_h (Neyman allocation) and keeps D proportional to W, so the
// knapsack cannot cancel one stratum's evidence with another's.
//
// # The asymptotic rule
//
// Rule and Allocate are the rule both stores used before the release log:
// Neyman allocation from counts and Robbins' normal-mixture boundary in
// information time 1/s². It is asymptotic and undercovers near 0 and 1
// (issue 41); status still reads its ExpectedResults as a guess of the
// results to the stop, never as the interval.
//
// The package is pure: no AWS, no clock, no randomness of its own.
package sampling
