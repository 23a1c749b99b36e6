// Package stream gives the simulator its random streams: one PCG source per
// (seed, tag, key), so each kind of randomness (a job's calls, a fault
// source's episodes, a family lane's draws) has its own stream and adding
// draws of one kind never shifts the draws of another.
//
// # Where it sits
//
// A leaf under internal/sim: the engine (internal/sim), the scenario
// family (internal/sim/scenario) and the fault plan (internal/sim/faults)
// draw from it. Every tag is declared here, in one list, so two packages
// cannot pick the same one. Pure: it reads no clock and imports nothing of
// the project.
package stream
