// Package passloop runs scheduler passes every ten seconds inside one
// invocation of the scheduler function.
//
// EventBridge fires at most once a minute, so each invocation covers the
// ten-second slots (:00, :10, … :50) that fall within the minute after it
// started, holding a lease so two invocations never pass at once:
//
//	invocation N   ├─ slot ─ slot ─ slot ─ slot ─ slot ─ slot ┤ release
//	invocation N+1                                    waits ─┘├─ slot …
//
// A newcomer that finds the lease held by an invocation about to hand over
// (its last slot ends within one interval) waits for the release; one that
// finds it held by a live scheduler for longer exits at once, logging whose
// lease it is. The lease is renewed every pass and expires on its own, so a
// crashed invocation blocks the next one for at most its TTL. A pass that
// overruns its slot is logged and the missed slots are skipped, never run
// twice.
package passloop
