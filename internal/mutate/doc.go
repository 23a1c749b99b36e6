// Command mutate is `make mutate`: it proves that the tests guarding the
// store's exactly-once conditions still guard them. It sits beside the
// tests, not in the pass: nothing imports it.
//
// Each mutation (mutations.go) is a small textual change to one named file
// — a condition removed, a check dropped, an attempt forced — and the tests
// that must fail because of it. mutate copies the repository's files to a
// temporary directory (the working tree is never written, so an interrupt
// or a crash leaves it as it was), runs each package's named tests once
// unchanged (they must pass, or every mutation would look killed), then per
// mutation applies it to the copy, runs the tests and puts the file back.
// It prints one line per mutation, killed or SURVIVED, and exits 1 when one
// survived, did not build, or no longer applies.
//
//	go run ./internal/mutate            every mutation
//	go run ./internal/mutate -run batched   those whose name matches
//
// A mutation no longer applies when its text is not found exactly once in
// its file: a refactor must update the list, never leave it vacuous. The
// package's own test (mutations_test.go, part of make test, fast) checks
// that every mutation applies to the current source, still parses, and
// names tests that exist.
package main
