// Package operator is what an operator's commands do to a scope (an account,
// a project or a batch): read the scope as typed, check that it holds
// batches, pause or resume its admissions, and stop its running tasks.
//
// Where it sits: beside the pass, not in it. The CLI (cmd/evalsched) keeps
// the flags and the words; the store applies the writes, and the next pass
// sees them. Stopping goes through ecslauncher.Stopper, the one StopTask
// path.
package operator
