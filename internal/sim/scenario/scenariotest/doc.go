// Package scenariotest holds the small scenarios the simulator's tests
// (internal/sim and its report) start from. Tests only: nothing in a
// binary imports it.
package scenariotest
