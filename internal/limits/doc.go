// Package limits decides a model's next job limit: how many of its jobs may hold
// a container (starting or running) at once.
//
// It is step 2 of a scheduler pass (snapshot → priority → breaker → limits →
// capacity → admission → claim and launch). The input is the gateway queue depth
// of the model as CloudWatch last saw it, compared with a target depth: a queue a
// little above zero means the provider is saturated (full use of its quota)
// while containers wait only briefly at the gateway.
//
// The loop is hard to control: a job launched now adds to the depth only once
// its container runs (30–120 s on Fargate) and the datapoint has aged (~20 s), so
// the dead time is one to two minutes against a 10-s pass; lowering the limit
// evicts nothing; below saturation the depth reads 0 and says nothing of how far
// below we are; at a thousand running jobs the depth jitters by ±20 on its own.
// The model the controller steers by is a closed loop: each running job
// keeps some calls at the gateway; past the knee (the load at which the
// provider is full) each job more adds one queued call, so depth = load −
// knee (Little's law). An overshoot cannot be undone (running jobs are not
// evicted, and an overloaded gateway slows their drain too), so every
// raise is bounded by the load a datapoint measured, never by the limit.
// The load is the slots in steady use when the datapoint was measured:
// running jobs and those starting in place of ended ones, without the
// launches of the last raise still starting (no datapoint saw them). The
// regimes, checked in order:
//
//  1. pinned: an operator's limit_pin wins, clamped to [min, max].
//  2. blind: no datapoint, or one older than MaxAge → hold.
//  3. over: depth > target·(1+Band) → lower to measured − (depth − target),
//     never above the current limit, by at most DrainShare of the slots
//     ended jobs free (a trickle still admits by tier and project).
//  4. under: depth < target·(1−Band), work waits, the limit binds (the
//     slots held at the last pass, load + ended, ≥ BindingShare·limit), the
//     last raise settled (RaiseSettled of its launches run) and a datapoint
//     measured after that:
//     - a queue under the target → measured + (target − depth);
//     - far below (all readings since ≤ FarBelow·target), under a knee seen
//     before → back to knee + target, at most ×Growth of measured;
//     - far below at or past the knee (the provider grew) → the knee moves
//     up to measured, and a probe of target, doubling with each confirmed
//     probe;
//     - far below with no knee yet → ×Growth of measured (slow start).
//     The knee is running − depth of the last reading that saw a queue;
//     no timer forgets it, only new readings move it.
//
// Otherwise it holds. The result is clamped to [min, max]. Every decision
// carries a reason an operator can read in the pass log.
package limits
