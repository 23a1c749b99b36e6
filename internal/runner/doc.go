// Package runner is one invocation of the scheduler function: take the lease,
// run a scheduler pass in each ten-second slot of the minute (passloop), and
// report every pass as one JSON log line and EMF metrics. The Lambda main
// only builds the clients and hands them over.
package runner
