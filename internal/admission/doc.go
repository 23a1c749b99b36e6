// Package admission hands one model's free slots to that model's waiting jobs.
//
// It is the last part of a scheduler pass's decide step, before the claim
// (package scheduler names the steps). By the time it runs, priority has
// resolved every batch's tier, the breaker has decided the model may admit at
// all, limits and capacity have fixed how many slots the model has free this
// pass. Admission only decides whose jobs take them; the store then claims
// exactly those jobs with conditional writes. It reads counts, never jobs, so
// its cost is O(batches·log batches + free·tiers), not O(waiting jobs).
//
// Three levels, each with its own notion of fairness:
//
//  1. Tiers (urgency). The first tier with demand is entitled to Weight of a
//     slot, the next to Weight of what is left, and the last tier with demand
//     to all that remains (sharesInto):
//
//     share(t) = Weight·(1−Weight)^k  for the k-th tier with demand (k from 0),
//     share(last) = (1−Weight)^k      so the shares sum to 1.
//
//     With Weight 0.8 and three saturated tiers that is 80/16/4; with tier 0
//     empty it is 80/20 between tiers 1 and 2. Whole slots are handed out by
//     smooth weighted round robin over carried credits: per slot, every tier
//     with demand adds its share to its credit, the tier with the highest
//     credit (ties → lower tier) takes the slot and pays 1. Shares are
//     recomputed when a tier runs dry mid-pass, so what it cannot use flows
//     down at once. Credits persist in State: a model that gets one free slot
//     per pass still splits 80/16/4 over many passes, where rounding per pass
//     would give tier 0 everything. A tier without demand has its credit reset
//     to 0, so an idle tier cannot hoard entitlement and then starve the others
//     when its work arrives.
//
//  2. Projects (volume buys nothing). Within a tier, projects take turns one
//     job at a time in name order, starting after the project served last
//     (State.LastProject), so the rotation continues across passes: a
//     50,000-job project and a 10-job project start jobs at the same rate, and
//     no project with waiting work waits more than one round, even when a pass
//     has a single slot.
//
//  3. Batches (age). Within a project, the oldest batch (lowest Seq, then ID)
//     is drained before the next one starts, so a project's earlier submission
//     finishes first instead of every batch trickling along.
//
// Plan is pure and deterministic: it never reads the clock, never ranges over a
// map, and does not mutate its inputs; the returned State is a fresh value the
// store persists for the next pass of the same model.
package admission
