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
//     pass at t reads the Maximum over the newest whole depth_period_s
//     period that ended at least metric_delay_s ago, with optional noise
//     and missing datapoints, and the gateway's error rate over the same
//     period (scenarios/README.md, "Fidelity").
//   - Providers may slow under load (slow_under_load) and answer 429 past
//     reject_over; tasks may fail to start (start_failure_rate).
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
//     after it, three draws per call whatever becomes of the call;
//   - with faults, per fault source its episodes, and per fault kind its
//     draws as the run meets them (see Faults).
//
// So a job's calls, think times and container start depend on the seed and
// the job only, never on the policy or on when the job runs: the policies
// see the same work. Policies run side by side in goroutines that share only
// the read-only scenario.
//
// # The scenario family and the oracle
//
// family.go draws random lanes from a seed; oracle.go sweeps policy
// static's caps for the best fixed cap in hindsight; familyrun.go runs
// lanes on a pool of at most two workers and judges dynamic against the
// oracle (scenarios/README.md, "Scenario family").
//
// # Measured, not assumed
//
// The simulator keeps its own record of every job beside the store's. lost
// counts jobs in no state at the end (for dynamic also jobs the store holds
// in no state, or still CLAIMED after their pass); double_launched counts
// launches of a job that had a task already, or of an attempt that had one.
// For dynamic it checks the invariants below after every step; every broken
// invariant is a violation, counted in invariant_violations and reported
// with its time (and its job, when it concerns one).
//
// # Faults
//
// `evalsched sim --faults all` (or --faults KIND,KIND) injects into policy
// dynamic the faults the real system meets; the baselines ignore them.
// Faults come in episodes drawn before the run from the scenario's seed, one
// stream per source (faults.go): a source's first episode starts within its
// mean gap, each next one an exponential gap after the previous one ends.
// Within an episode, each opportunity (an event, a RunTask, a write) draws
// from its kind's own stream. Same scenario, seed and faults, same output;
// turning one kind on or off never moves another's. faults_injected counts
// every fault that took effect (per kind in the table).
//
// With faults, passes run as they do in production: an invocation starts
// every six pass intervals (EventBridge's minute) and runs the real
// passloop.Loop under an in-memory lease with the DynamoDB lease's
// conditions, the real reconcile.Reconciler in its first slot (against the
// simulated ECS: DescribeTasks and ListTasks answer from the simulator's
// task table, a stopped task is forgotten after an hour), then
// scheduler.Pass in each slot. An invocation is a coroutine of the engine:
// its clock's Sleep hands control back until the time it sleeps to. Task
// events go through the real taskevent.Handler as EventBridge JSON (a
// provider error exits 1). The kinds:
//
//   - crash (every ~10 min): the invocation dies in a pass that claimed
//     jobs, after Commit (claimed, no RunTask), after half the RunTasks, or
//     after every RunTask returned (tasks started, launch never recorded).
//     Its lease stays until it expires; the next invocation that gets it
//     passes on. Must hold: the reconciler requeues claims without a task
//     and records those with one; no job is lost or launched twice.
//   - overlap: a duplicate invocation at a random time (~7 min), which must
//     exit on finding the lease held (or, at a hand-over, wait and take
//     it); and a pass that stalls 5-40 s between reading and committing
//     (~9 min), so it may outlive its lease while the next invocation
//     passes. Must hold: the lease is never held by two invocations; no two
//     passes holding a live lease run at once; a stalled pass's stale
//     commit is refused (see store).
//   - events (episodes of 1-6 min every ~6 min): each task event may be
//     lost (8 %), duplicated a second to 3 min later (12 %), delayed 30 s
//     to 5 min (12 %), or, a RUNNING event, held back until after its
//     task's STOPPED (10 %). Must hold: transitions are idempotent and
//     ordered; the reconciler repairs lost events.
//   - runtask (episodes of 0.5-3 min every ~7 min): a RunTask call is
//     throttled (30 %: the launcher backs off and calls again, three times,
//     then the job gets Retry), refused for capacity (15 %: Retry), or times
//     out after ECS started the task (15 %: the launcher calls again with
//     the same clientToken, and the simulated ECS, idempotent by token
//     job+attempt, answers with the task it started). Must hold: one task
//     per attempt, ever; a refused launch returns the job to waiting with
//     attempt+1, or fails it past its attempts.
//   - store (throttling episodes of 20 s-2 min every ~7 min; races every
//     ~9 min): DynamoDB throttles a write before any effect: Commit (50 %;
//     the pass fails, the next one retries), RecordLaunches (30 %, also the
//     reconciler's: tasks started, launch unrecorded, as after a crash), a
//     task event's write (20 %: the handler fails, EventBridge delivers the
//     event again 10-90 s later); and, after a Commit wrote the model
//     states, each grant's claim transaction (the DynamoDB store's batched
//     claim, or its claim one queue at a time): throttled (30 %: the grant
//     claims nothing this pass), or applied with its answer lost and
//     unconfirmed (10 %: its jobs stay CLAIMED, unknown to the pass, until
//     the reconciler requeues them). A race: an overlapping pass (an
//     invocation that lost its lease mid-pass) commits between a pass's read
//     and its commit. The in-memory store has no conditions, so the
//     adapter keeps the DynamoDB store's optimistic lock: a version per
//     model, read by Snapshot, bumped by Commit; a commit from an older
//     read is refused as stale before any effect (a model's state changes
//     every pass it has work, so a stale plan never reaches the claims).
//     Must hold: a job is claimed once; no model is over-admitted; a
//     stranded claim is requeued, never lost or launched twice.
//   - metrics (episodes of 20-90 s every ~6 min, on one model or all): the
//     gateway-depth datapoint is missing, ten minutes stale, ×10, 0, or the
//     GetMetricData call fails. Must hold: the invariants (the limit may
//     swing; it never admits past itself).
//   - intake (per batch): half the batches arrive in 2-5 parts, shuffled, a
//     few seconds apart; half have a part or the whole batch delivered again
//     up to 10 min later. Must hold: Submit creates exactly the jobs it has
//     not seen and nothing on a redelivery; no error.
//   - provider (episodes of 2-8 min every ~15 min, one model): the provider
//     fails fast (error_rate 0.8, 0.5 s) or slows down (call_s ×3), over the
//     scenario's own changes. Must hold: the invariants (the breaker, not
//     the empty gateway queue, decides).
//
// At the end the system settles: invocations stop, events and messages on
// their way land, and the reconciler runs past its grace periods until it
// repairs nothing more; then every job must be exactly where the world has
// it (a task starting: LAUNCHED; running: RUNNING; ended: SUCCEEDED or
// FAILED; none: WAITING).
//
// # Invariants
//
// The simulator reads back every job the store changes, right after the
// call that changed it (claims, launch records, task events, repairs, batch
// messages), into a shadow of the store (invariants.go), and checks:
//
//   - every submitted job is in exactly one state, reached by a legal move
//     (WAITING → CLAIMED → LAUNCHED → RUNNING → SUCCEEDED | FAILED, events
//     may skip ahead, a job that did not run returns to WAITING with
//     attempt+1, an ended job never moves), and agrees with the world: the
//     store may lag behind the world, never run ahead of it (LAUNCHED,
//     RUNNING or ended means that very task exists, or ran, in the world;
//     WAITING means the world has no task);
//   - no job has two tasks for one attempt (ECS is asked again for an
//     attempt that launched only within the launcher's own retry), nor a
//     second task while one runs (double_launched);
//   - the running and starting counters equal a recount: memstore.Check and
//     the shadow's counts after every pass, reconcile and batch message,
//     and with faults after every task event when the scenario has at most
//     20 000 jobs (a recount is O(jobs));
//   - no model holds more jobs than its limit, or than it held when the
//     limit fell (lowering a limit evicts nothing): a committed plan sets
//     each model's bound to max(new limit, running+starting it read), and
//     between passes nothing may add to what a model holds; likewise the
//     account against global_max_running;
//   - the lease is held by at most one invocation, and no two passes that
//     hold a live lease run at once.
//
// # Speed
//
// Jobs are preallocated records; events are 24-byte values in a
// slice-backed heap pushed and popped through heap.Fix, so nothing is
// boxed; a job's random stream lives in its record and one rand.Rand reads
// whichever stream is current. A call costs no allocation
// (TestNoAllocationsPerCall); BenchmarkSeedHotLanes measures events/s.
package sim
