// Package sim is the deterministic discrete-event simulator of evalsched:
// `evalsched sim --scenario FILE` (scenario format and metric definitions:
// scenarios/README.md).
//
// # Where it sits
//
// The simulator drives the real scheduler.Pass, the same code the scheduler
// Lambda runs, through in-memory adapters: the store is internal/memstore,
// the depth reader serves simulated CloudWatch datapoints, the launcher takes
// tokens from a simulated Fargate launch bucket, and the clock is simulated
// time (Epoch + t). Only the adapters are simulated; every decision of
// policy dynamic (limits, capacity, admission, breaker, priority) is the
// production code. Two baselines, static and unbounded, run the same world
// with the rules of the old system, so the numbers compare like with like.
//
// Same scenario and seed, same output, byte for byte. How the world is
// simulated, why it is deterministic, the scenario family and its oracle,
// the faults, the invariants checked after every step and what keeps it
// fast are in DESIGN.md beside this file.
package sim
