// Package limits decides a model's next job limit: how many of its jobs may hold
// a container (starting or running) at once.
//
// It runs in a scheduler pass's decide step, after the breaker (package
// scheduler names the steps). The input is the gateway queue depth
// of the model as CloudWatch last saw it (a period's Average: the mean queue),
// compared with a target depth: a queue a little above zero means the provider
// is saturated (full use of its quota) while containers wait only briefly at
// the gateway.
//
// The target steered to is the operator's, but at most MaxBlocked (5 %) of
// the jobs running (averaged over Turnover; blockedBound): each queued call is
// a job's container blocked, so the mean depth over the running jobs is the
// share of their time they wait, paid for and idle. A target of a few per cent
// of a small provider's concurrency is a tenth of its running jobs or more; on
// a large provider the operator's target binds. A knee's target is bounded by
// the jobs running at the knee.
//
// The loop is hard to control: a job launched now adds to the depth only once
// its container runs (30–120 s on Fargate) and the datapoint has aged (~20 s), so
// the dead time is one to two minutes against a 10-s pass; lowering the limit
// evicts nothing; below saturation the depth reads 0 and says nothing of how far
// below we are; at a thousand running jobs the depth jitters by ±20 on its own.
// The controller therefore has five regimes, checked in order:
//
//  1. pinned: an operator's limit_pin wins, clamped to [min, max].
//  2. blind: no datapoint, or one older than MaxAge → hold.
//  3. first queue: on a model whose knee nobody knew (no concurrency
//     configured or learned, no knee ever seen: State.KneeSeen), the
//     first fresh period that queues, with the calls in service and not a
//     drop (droppedKnee), shows the knee: InService/CallShare + target
//     running jobs (firstKnee). When the slots held are past its slots the
//     limit goes to them whatever the depth (firstQueue), and every task
//     starting beyond them stops, as on a drop: the depth is a period and
//     a metric delay old and shows a queue only beginning, while a cold
//     step's launches come up into it, and each job past the knee queues
//     a call for the rest of its life. Unlike a drop it keeps a drain's
//     trickle (the knee errs low: both shares are Maximums). The knee is
//     kept (State.Ceiling) and a cold step's pacing ends there.
//  4. over: depth > target·(1+Band) → lower to the slots that run
//     measured − LowerGain·(depth − target) jobs, never above the current
//     limit (measured: the jobs running when the datapoint was measured).
//     Each queued call is a job the provider cannot serve now, so the
//     excess depth counts jobs too many; anchoring on the jobs measured,
//     not on the limit, keeps repeated passes over the same stale
//     overshoot from compounding. It takes off no more than those jobs'
//     slots from the slots held, though: a small excess on a crest of
//     short jobs' waves is no reason to give up the slots the jobs that
//     ended since had freed. Lowering evicts nothing: the limit
//     falls by at most DrainShare of the slots ended jobs free, and the
//     rest, carried from pass to pass (State.DrainCarry), is a trickle of
//     admissions so tiers and project turns still act during a drain.
//     A fresh reading over the band also yields (Decision.Yield): the
//     tasks still starting run into the same queue, so the pass stops
//     some, at most LowerGain of the excess depth's jobs, the starting
//     ones, and the slots beyond the lowered limit; their jobs wait again.
//     A provider that lost capacity is lowered to its new knee at once
//     (droppedKnee), the limit neither held by the slots held nor
//     trickled, and every task starting beyond the knee's slots stopped: the queue still builds for a metric delay and more,
//     and its first excess is a fraction of the jobs too many, but the
//     gateway's calls in service show the loss in the first period that
//     queues. A period that queued nothing gave the share of a job's life
//     spent in a call (State.CallShare: calls in service over the jobs
//     running) and the concurrency known then (State.ShareConc: the known
//     one, and at least the calls it served without a queue); a period
//     that queues while serving fewer calls than that puts the knee at
//     inService/CallShare + target running jobs, and the pass keeps those
//     (the jobs too many set the floor and the yield as the queue's do).
//     With the provider unchanged the queue's count stands: both shares
//     come from Maximums and may put the knee low.
//     The reading that lowers
//     records the knee: the jobs running then less the excess depth (past
//     the knee each job more queues one call), in running jobs, since the
//     provider sees only those.
//     The slots a running job needs are 1 + start/life (container start,
//     job life), each by Little's law from the jobs starting and running and
//     the rates at which they begin running and end, averaged over
//     Turnover: short jobs behind long starts need three or four, and run
//     in waves, so one pass's counts on a crest or in a trough would say
//     little. Until the averages span a
//     Turnover, the slots starting now stand in (load − the excess).
//  5. under: depth < target·(1−Band) → raise ×f with
//     f = 1 + StepGain·gap, gap = (target − depth)/target, only when work
//     waits, the provider is not failing, the limit binds (load ≥
//     BindingShare·limit: no windup while demand sits below the limit), at
//     least RaiseSettled of the previous raise's launches are running (the
//     dead time), and a datapoint was measured since.
//     When every reading since that raise settled was far below (≤
//     FarBelow·target) the factor is FastFactor, so a cold model grows
//     geometrically, one step per container start. Once a knee was known
//     and none is now (the provider grew past a measured or configured
//     concurrency, or a lowering's knee expired), it is ProbeFactor (×2):
//     the limit sits near the old knee, the provider may saturate a step
//     past it, and an overshoot cannot be undone, so a raise probes as a
//     slow start does after a loss.
//     Under a known knee the raise goes at most to the slots that run
//     FastUpTo·knee jobs: the knee's jobs × slots per running job (regime 4),
//     or, while that is unknown, the limit grown by the share the jobs the
//     datapoint's slots run may grow (with long container starts most
//     slots are starting). Those
//     jobs are the ones running when the datapoint was measured and the
//     last raise's launches still starting then (Sample.Pending): a raise
//     settles once RaiseSettled of its launches run, and the rest will run
//     too, so counting only the running ones would grow the limit by them
//     twice. That count is one slot a job, and short jobs behind long
//     starts need several: until the averages span Turnover the knee's
//     jobs get at least the slots the model's first minutes show
//     (State.slotsAtLeast: the first jobs' start over the life of the
//     jobs ended, each measured low), at most ×FastFactor a step.
//     The limit binds when the slots held after the last pass's admissions
//     (State.Held) or the load now reach BindingShare of it.
//     When the gateway publishes its calls in service (Input.InService), a
//     period that queued a call gives the provider's concurrency C
//     (State.Conc); a far-below raise then stops at the knee it implies,
//     measured·C/inService + target running jobs (closed-loop Little's
//     law), instead of ×FastFactor past it. Until a queue measures C, the
//     operator's configured concurrency (Model.Conc, the gateway's own
//     setting) stands in for it, unless the gateway serves more; its knee
//     is reached in one raise, however far (FastFactor bounds a step
//     toward a knee nobody knows), and so is a learned C's while it is
//     younger than CeilingTTL (State.LearnedFresh: an older one may be
//     another provider's, so its knee keeps the bound), in the slots its jobs need; once
//     those are known from the turnover averages, which are young, the
//     step is at most ×FastFactor: short jobs behind long starts make it a
//     cohort several times the knee. Near the target (some reading
//     since the raise settled was not far below) with that knee known, a
//     raise steps to the slots the knee needs, at most ×FastFactor, instead
//     of ×(1 + StepGain·gap): with waves a crest's reading keeps the fast
//     raise off for good, and 5 % a dead time never meets the knee. A
//     period that queued already had the provider full: its knee is the
//     jobs running then plus the calls short of the target.
//     A raise toward a knee, too, goes to the slots its running jobs need.
//     No raise reads a period that began with none of the model's jobs
//     running (a model's first jobs, or the first after it had none
//     running): its calls were the first calls of jobs that came up within
//     it, and the Maximum over them is no running job's share
//     (cohortOnly); the next period is read instead, and no call share is
//     recorded from it.
//
// Where a job starts for longer than it runs (slotsPerRunning ≥ 2), the
// pass admits at most the jobs that ended since the last pass plus the
// knee's turnover, PaceKnee running jobs per job life (Decision.Pace,
// State.pace): the slots a raise adds are mostly starting ones, and
// launched in one pass they come up within a start's spread and run
// together, a wave of several knees that overloads the provider, slows
// every call and lengthens every job. Paced, they come up as a stream.
//
// A cold ×FastFactor step (toward no knee known or ever seen) is released
// over one container start (State.RampSpan: the model's first start as its
// jobs showed it, or the time the last raise's launches took to settle once
// it filled, the longer): a pass admits at most the jobs that ended since
// the last one plus RaisedBy·dt/span (State.rampPace; Decision.Pace is the
// tighter of the two bounds). Launched in one pass, the step comes up
// within a start's spread, and by the time the first period that queued
// shows (a period and a metric delay after the running jobs passed the
// knee) a small provider holds several times its knee of jobs that drain
// only as they end; released over a start, its later launches are still
// starting then, and the first queue (regime 3) stops them.
//
// A limit the breaker held through an error burst is refilled as a raise
// (State.Refill): its jobs are in dead time once the provider heals. It is
// the highest limit of the passes within MaxAge before the gateway's error
// rate first showed the failure (Input.Failing; without it, before the
// hold): the provider failed a metric delay or more before anyone could
// tell, and a lowering then read the queue of a failing provider; the
// breaker may open passes after the error rate showed; and the pass just
// before the first failing reading may have raised on a queue the failing
// calls had emptied. A datapoint measured at or before the last pass that
// held (State.HeldAt) steers nothing, a lowering no more than a raise: it
// is the failing provider's queue, or its probes'.
//
// Otherwise it holds. The result is clamped to [min, max]. Every decision carries
// a reason an operator can read in the pass log.
package limits
