// Package faults is the simulator's fault schedule: the kinds of fault
// `evalsched sim --faults` injects into policy dynamic (Kind, Set, Parse)
// and, for one run, the Plan: each source's episodes drawn before the run
// from the scenario's seed, and the per-kind streams the run draws from as
// it meets opportunities (an event, a RunTask, a write), with the count of
// faults that took effect.
//
// # Where it sits
//
// Below the engine (internal/sim), which owns the injection: the simulated
// ECS, the invocations and their lease, the store's claim faults
// (invocation.go, ecs.go, storefaults.go there) ask the Plan what is going
// on now. This package decides only when and which; what each kind does
// and what must hold is internal/sim/DESIGN.md, "Faults". Pure and
// deterministic: same scenario, seed and kinds, same plan; switching one
// kind on or off never moves another's draws.
package faults
