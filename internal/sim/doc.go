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
// The simulator is five packages; this one is the engine, the only one
// that imports the scheduler's packages:
//
//   - internal/sim/scenario: the input, the scenario file format (parse,
//     validate, encode), its distributions, the scenario family and the
//     sampled-batch format;
//   - internal/sim/faults: which faults a run injects and when (the plan of
//     episodes and draws); the injection itself is the engine's
//     (invocation.go, ecs.go, intake.go, storefaults.go);
//   - internal/sim/stream: the random streams every package draws from;
//   - internal/sim (here): the world, the policies, the oracle, the family's
//     runs and judge, the twin bound of a lane with a capacity drop
//     (twin.go), the invariants, and the results;
//   - internal/sim/report: the results rendered (table, summaries, HTML).
//
// The engine imports scenario, faults and stream; report imports the
// engine; cmd/evalsched imports all of them but stream.
//
// Same scenario and seed, same output, byte for byte. How the world is
// simulated, why it is deterministic, the scenario family and its oracle,
// the faults, the invariants checked after every step and what keeps it
// fast are in DESIGN.md beside this file.
package sim
