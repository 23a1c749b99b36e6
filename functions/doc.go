// Package functions holds the four Lambda binaries, one main per
// directory (intake, scheduler, taskevents, results). It has no code of its
// own: its test (links_test.go) checks that no binary links the in-memory
// store, the simulator or a fake.
package functions
