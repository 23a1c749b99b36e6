// Package montecarlo replicates a sampled batch many times, fast, to
// measure the stop rule: how often the interval misses the batch's true
// pass rate at the stop and at any look, and how many jobs it runs beside
// a fixed random sample sized for the same margin.
//
// It runs the sampling package alone (no store, no scheduler): each
// replication draws every job's verdict, claims jobs as slots free up in
// the order sampling.Sequence.Next gives, draws each claimed job's time
// (a failing job's times a factor, to tie duration to outcome), and counts
// results into the sequence in release order. `evalsched sim-sampled
// --replications N` runs it on a scenario; BENCHMARKS.md holds the
// figures. Replications run on a bounded number of goroutines, each from
// its own seed, so a report depends only on the case and the seeds.
package montecarlo
