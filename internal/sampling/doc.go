// Package sampling decides which jobs of a sampled batch run and when the
// rest may be skipped: adaptive stratified sampling with a stop rule that
// stays valid however often it is checked.
//
// It sits between the batch contract and the store's claim:
//
//	batch "sampling" + job "stratum" ──▶ store: per stratum, jobs in Rank order
//	pass grants k slots to the batch ──▶ Allocate(k): which strata they go to (Neyman)
//	result of a job (results queue) ──▶ store counts per stratum ──▶ Rule.Estimate
//	                                                      │ half-width ≤ moe
//	                                                      └──▶ the rest end SKIPPED
//
// # Allocation
//
// Neyman allocation gives stratum h a share of the sample proportional to
// N_h·S_h, its size times its standard deviation, which for a pass/fail
// outcome is S_h = sqrt(p_h(1−p_h)): strata near a 50 % pass rate get the
// budget, strata that all pass or all fail little. p_h is estimated with one
// pseudo-pass and one pseudo-fail (p̃ = (passes+1)/(results+2)), so a stratum
// with no results yet gets the budget of p = 0.5, the most any stratum gets,
// and a stratum that passed its first 30 jobs still gets some. Every stratum
// first gets min_per_stratum jobs. Allocate is recomputed for every grant
// from the results so far, so the proportions follow the data.
//
// # Release order
//
// Within a stratum jobs are released in the order of Rank(batch, key), a
// keyed hash (SHA-256 of the batch id and the key): random with respect to
// the submitter's order (which often sorts by difficulty or source), the
// same on every run and in every store, and independent between batches.
//
// # Stop rule
//
// The estimate is the stratified mean μ̂ = Σ W_h·x̄_h, W_h = N_h/N, with
// variance s² = Σ W_h²·(1 − n_h/N_h)·p̃_h(1−p̃_h)/n_h (the factor is the
// finite-population correction: a stratum run in full is known exactly).
// The stop rule is checked after every result, thousands of times per
// batch, so a fixed-sample interval (μ̂ ± z·s) would be wrong: checked
// repeatedly it excludes the truth at some look far more often than 1 − c.
// Instead the half-width is that of an asymptotic confidence sequence
// (Waudby-Smith, Arnold, Wu, Ramdas, "Time-uniform central limit theory and
// asymptotic confidence sequences", 2023): in information time τ = 1/s² the
// error τ·(μ̂ − μ) behaves as a Brownian motion, and Robbins' normal-mixture
// boundary holds for all τ at once with probability ≥ c:
//
//	half-width(τ) = sqrt( 2·(τρ² + 1)/(τ²ρ²) · log( sqrt(τρ² + 1)/α ) ),   α = 1 − c
//
// ρ sets where the boundary is tightest; NewRule picks it from moe and α
// alone (the τ at which the half-width first reaches moe), never from a
// batch's data. The batch stops when every stratum has its min_per_stratum
// results and the half-width is ≤ moe. The rule is asymptotic: the
// simulator (evalsched sim-sampled) and this package's tests measure its
// coverage, and a test shows the fixed-sample rule failing where this one
// holds.
//
// The package is pure: no AWS, no clock, no randomness of its own.
package sampling
