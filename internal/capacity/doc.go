// Package capacity shares one account-wide number of task slots among models.
//
// It runs in every scheduler pass (one every 10 s), in the pass's decide
// step after limits and before admission (package scheduler names the steps).
//
// Limits has by then given each model its own ceiling, but the Fargate quota
// caps running tasks for the whole account. The pass calls Split twice:
//
//  1. to split the global cap on running tasks across models, with
//     demand = min(limit, running+waiting), so one busy model may take the
//     whole quota while many busy models share it max-min fairly;
//  2. to split the launch budget of the pass (how many tasks it may start)
//     across models, with demand = each model's free slots, so one model's
//     backlog cannot starve the launches of the others.
//
// Admission then fills each model's share from its tiers.
//
// The package is pure: it does no I/O, and the same input always gives the
// same output.
package capacity
