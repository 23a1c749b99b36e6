// Package forecast is the forecast behind status's per-batch ETA. Per model with
// waiting batches it steps the scheduler's own admission (admission.Plan,
// the very function the pass calls) forward over simulated passes:
//
//  1. the next pass hands admission the slots the dry run of Decide found
//     free (ModelPlan.Free), exactly as the real pass will;
//  2. every later step frees slots at the model's recent end rate (jobs
//     ended per minute over the breaker's window), plus any slots free now
//     that the launch budget left for later, at most the launch budget a
//     pass; the limit and the capacity hold where they are (no limit change
//     is predicted), so a slot that frees is a slot admission refills;
//  3. admission.Plan hands the freed slots to the model's batches by tiers,
//     project turns and age, carrying its State from step to step as the
//     store does from pass to pass.
//
// A batch's start ETA is the simulated time its last waiting job is
// admitted; its done ETA adds the model's mean time in a slot, from Little's
// law: slots held (running + starting) / end rate. That mean covers start-up
// as well as the run, which is what lies between admission and the end.
//
// Handing out n slots in one Plan call gives the same sequence of admissions
// as n calls of one slot each (credits and the project rotation carry over in
// State, and no batch arrives during the forecast), so a coarse step only
// coarsens *when* each admission is counted, never *which* job it is: an ETA
// is late by at most one step. That is what bounds the work. Steps are one
// pass long at first and then grow with the simulated time t, to eps·t: an
// ETA of the next minutes is late by at most a pass, a later one by at most
// eps of itself, and reaching the horizon takes about (1 + ln(horizon/pass))
// / eps steps, whatever the backlog or the rate. eps is chosen so that this
// is at most MaxSteps: 0.6 % at 2,000 steps, 3 % at 400 (10,000 batches).
// Admission's own cost grows with the slots it hands out, so past MaxUnits
// slots a model counts its jobs in units of several (Config).
//
// The forecast is pure: its inputs are the snapshot and the dry-run plan
// status already has, and it reads no clock.
package forecast
