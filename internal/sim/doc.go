// Package sim is the deterministic discrete-event simulator of evalsched:
// `evalsched sim --scenario FILE` (scenario format and metric definitions:
// scenarios/README.md).
//
// # Where it sits
//
// The simulator drives the real scheduler.Pass, the same code the scheduler
// Lambda runs, through in-memory adapters: the store is internal/memstore,
// the depth reader serves simulated CloudWatch datapoints, the launcher takes
// tokens from a simulated Fargate launch bucket, and the clock is simulated
// time (Epoch + t). Only the adapters are simulated; every decision of
// policy dynamic (limits, capacity, admission, breaker, priority) is the
// production code. Two baselines, static and unbounded, run the same world
// with the rules of the old system, so the numbers compare like with like.
//
// # The world it simulates
//
//	batch arrives ─▶ waiting ─(pass admits, launch token)─▶ RunTask ─(container_start_s)─▶ running
//	running job:  call ─▶ gateway FIFO ─▶ provider (≤ provider_concurrency in service, call_s)
//	              ─▶ think_s ─▶ call … until `calls` calls, then exit 0
//	provider error (while error_rate > 0): the call fails after error_call_s, the job exits 1
//
// In detail:
//
//   - Gateway and provider, per model: a FIFO queue in front of a provider
//     serving at most provider_concurrency calls. A failing call (429/5xx)
//     comes back after error_call_s without queueing or taking a provider
//     slot, so a failing provider leaves the gateway queue empty, as it does
//     in production: the breaker, not the depth, must catch it.
//   - Fargate: RunTask goes through a token bucket (launch_rate_per_s,
//     launch_burst; a GCRA, like golang.org/x/time/rate). A pass may issue
//     launches up to the next pass: a job whose token comes within the pass
//     interval launches at that token's time, one whose token would come
//     later gets Retry. So does a RunTask beyond global_max_running tasks
//     (starting or running): the account's task quota is Fargate's to
//     enforce, and the simulator does, so a pass that over-admits shows up
//     as refused launches, not as extra capacity.
//   - CloudWatch: the gateway depth is sampled at every whole second (the
//     sample of second s is the state after every event at or before s); a
//     pass at t reads the newest sample at least metric_delay_s old.
//   - Console edits: pins land at their time and the next pass reads them;
//     provider changes apply at their time.
//
// # Determinism
//
// Same scenario and seed, same output, byte for byte. Events are ordered by
// (time, sequence number) in a container/heap; simulated times are integer
// nanoseconds; nothing ranges over a map to decide an order. Randomness
// comes from math/rand/v2 PCG sources, one per stream, each seeded from the
// scenario seed and the stream's key through splitmix64:
//
//   - per batch, in job order: each job's number of calls, and its container
//     start latency (drawn when the scenario is loaded);
//   - per job: each call's service time, an error coin and the think time
//     after it, three draws per call whatever becomes of the call.
//
// So a job's calls, think times and container start depend on the seed and
// the job only, never on the policy or on when the job runs: the policies
// see the same work. Policies run side by side in goroutines that share only
// the read-only scenario.
//
// # Measured, not assumed
//
// The simulator keeps its own record of every job beside the store's. lost
// counts jobs in no state at the end (for dynamic also jobs the store holds
// in no state, or still CLAIMED after their pass); double_launched counts
// launches of a job that had a task already, or of an attempt that had one.
// For dynamic it calls memstore's Check after every pass and compares the
// store's counts with its own at the end; every broken invariant is a
// violation reported with its time.
//
// # Speed
//
// Jobs are preallocated records; events are 24-byte values in a
// slice-backed heap pushed and popped through heap.Fix, so nothing is
// boxed; a job's random stream lives in its record and one rand.Rand reads
// whichever stream is current. A call costs no allocation
// (TestNoAllocationsPerCall); BenchmarkSeedHotLanes measures events/s.
package sim
