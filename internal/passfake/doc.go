// Package passfake holds in-memory test doubles of a scheduler pass's
// adapters: a clock, the gateway's depths, a launcher and a lease.
//
// The tests of the packages that run passes (scheduler, dynamostore,
// passloop, schedulerfn) use them. Only tests import it; it imports no AWS package.
//
// Where it sits: beside the pass, not in it — it stands in for the pass's
// adapters (Clock, DepthReader, Launcher, passloop.Lease) the way memstore
// stands in for its store.
package passfake
