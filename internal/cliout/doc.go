// Package cliout is what the evalsched CLI's commands share to write for a
// person: a progress line redrawn in place on a terminal, numbers with
// thousands separators, and files written whole.
//
// Where it sits: beside the CLI (cmd/evalsched) and the operator's views
// (status, deadletter), never in a pass. It reads the clock only to space
// a progress line's redraws.
package cliout
