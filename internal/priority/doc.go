// Package priority decides the tier of a batch from the operator's pins.
//
// It runs in every scheduler pass (one every 10 s), first in the pass's
// decide step (package scheduler names the steps).
//
// The snapshot carries the pin items exactly as an operator left them in the
// DynamoDB console. Compile turns them into a Table once per pass, so an edit
// takes effect on the next pass, and reports every pin it cannot use as a
// Warning instead of failing: a typo in one pin must never stop the scheduler.
// Admission then asks the Table for the tier of each active batch.
//
// The tier of a batch is, in order: its batch pin, its project pin, its
// account pin, the tier it was submitted with, the default. The most specific
// pin wins so an operator can lift one batch out of a pinned project.
//
// The package is pure: it does no I/O and takes the time as an argument.
package priority
