// Package scenario is the simulator's input: the scenario file format
// (scenarios/README.md) parsed, defaulted, validated and written back; the
// distributions its fields draw from; the scenario family, random lanes
// drawn from a seed (scenarios/README.md, "Scenario family"), and what the
// family's judge reads off a lane (its error bursts, its small batches, the
// busy caps the oracle starts from); and the sampled-batch format of
// `evalsched sim-sampled`.
//
// # Where it sits
//
// Below the engine (internal/sim), which runs a Scenario, and the CLI
// (cmd/evalsched), which loads one. It imports no simulator package but
// internal/sim/stream, whose streams the family draws from, and
// internal/sampling for the sampled format's parameters. Pure: no AWS
// package, no clock. A rejected file gets every error at once, each naming
// the field and the rule ("scenario: models[0].call_s: …").
package scenario
