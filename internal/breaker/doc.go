// Package breaker keeps, per model, a three-state circuit breaker over the
// recent outcomes of its jobs.
//
// It runs in every scheduler pass (one every 10 s), in the pass's decide
// step after priority and before limits (package scheduler names the steps).
//
// When a model's provider fails fast (429, 5xx), its jobs end within seconds
// with provider errors and the gateway queue in front of it empties. To the
// limit controller an empty queue looks like spare capacity: it would raise
// the limit and launch more containers that are doomed too. The breaker sees
// the failures instead and stops admission for that model until the provider
// answers again. Allow caps the jobs a model may admit this pass; the limit is
// held while Allow is 0.
//
// # States
//
//	              ┌────────────────┐
//	              │     CLOSED     │  Allow = -1 (no breaker limit)
//	              └────────────────┘
//	                 │          ▲
//	            trip │          │ good
//	                 ▼          │
//	┌────────────────┐  cooldown  ┌────────────────┐
//	│      OPEN      │ ─────────▶ │   HALF_OPEN    │  Allow = Probes − ProbesAdmitted
//	│   Allow = 0    │ ◀───────── │                │
//	└────────────────┘    bad     └────────────────┘
//
//	trip      ended ≥ MinSamples and failed/ended ≥ Threshold, over the
//	          buckets within Window of now.
//	cooldown  now − Since ≥ Cooldown. Buckets and probe counters are cleared.
//	good      ProbeOK+ProbeFailed ≥ Probes and ProbeFailed/(ProbeOK+ProbeFailed)
//	          < Threshold; or stalled with good partial evidence (below).
//	bad       ProbeOK+ProbeFailed ≥ Probes and the share ≥ Threshold; or early,
//	          ProbeFailed ≥ Probes × Threshold; or stalled otherwise (below).
//
// Every transition sets Since to now. The early reopen is deliberate: once
// ProbeFailed ≥ Probes × Threshold (2 of 3 with the defaults), counting only
// the probes the verdict can no longer be good, so the breaker reopens at
// once instead of waiting for the last probe while admitting nothing.
//
// # Window
//
// Outcomes are counted in Buckets of Bucket length, aligned to the Unix epoch
// (bucket start = time truncated to Bucket). A bucket is kept while
// now − Start < Window, so with the defaults the breaker sees the last 4m30s
// to 5m of outcomes. Outcomes of one Step go into the bucket containing now.
// Outcomes are folded in every phase, so an OPEN breaker's Reason can say what
// it still sees; the buckets are cleared when OPEN turns HALF_OPEN, so the
// failures that opened the breaker do not reopen it at once. The outcomes seen
// in the pass that ends the cooldown are dropped with them: they belong to
// jobs admitted before the breaker opened, not to probes.
//
// # Probes
//
// HALF_OPEN admits at most Probes jobs in all: the scheduler reports the jobs
// it admitted with State.Admitted. Every outcome seen while HALF_OPEN counts
// as a probe outcome; the breaker cannot tell a probe from an older job that
// happens to end now. Those older jobs ran through the outage, so their
// outcomes are evidence too.
//
// A HALF_OPEN breaker that has admitted all its probes but not heard back from
// all of them within 4 × Cooldown of entering HALF_OPEN (8 minutes with the
// defaults) is stalled: probes may be long evals, may have been cancelled, or
// their events lost. It then decides on what it has: if some probes ended and
// the failed share among them is below Threshold it closes (probes that keep
// running are not failing fast), otherwise it reopens to try again after
// another cooldown. The 4 × Cooldown run from the start of HALF_OPEN, not
// from the last probe's admission, which State does not record; probes
// admitted late only make the next attempt come sooner. While HALF_OPEN has probes left to admit it waits for
// demand as long as it takes: with nothing waiting there is nothing to protect.
//
// # The gateway's error rate
//
// Probes are whole jobs: by their exits alone a healed provider is seen only
// when a probe ends, minutes after it started. When the operator publishes
// the gateway's error and call counters (Config.GatewayThreshold > 0, see
// package gatewaydepth) Step also takes the newest error-rate datapoint:
//
//	healed    OPEN or HALF_OPEN, the datapoints since the trip below
//	          GatewayThreshold without a break span at least 20 s (one
//	          lucky period is not a trend) over at least 5 calls → CLOSED
//	          at once, whatever the cooldown, with the window emptied (its
//	          failures belong to the outage the gateway says is over).
//
// A datapoint at or above the threshold ends the run; one not newer than the
// last, measured before the trip, without calls, or not a share in [0, 1]
// is no evidence. While HALF_OPEN with the rate, failed probes do not reopen
// the breaker: they are replaced, up to Probes in flight, since their calls
// are what the rate is measured on and each costs one container start and a
// fast-failing call; Probes probes ending well still close it, so a gateway
// that publishes nothing cannot hold it HALF_OPEN. Without the rate (0, the
// default) the breaker goes by exit codes alone, as above.
//
// # Odd states
//
// Step never panics. A zero State is CLOSED. An unknown Phase is treated as
// CLOSED and the Reason says so. Negative counters are read as 0, a Since in
// the future (clock skew, a hand-edited item) is read as now, buckets are
// re-aligned, sorted and merged, and buckets from the future are merged into
// the current one. A Config field that is zero or breaks its rule takes its
// default (Validate reports the broken ones), and a Bucket longer than the
// Window is cut to the Window.
//
// The package is pure: it does no I/O and takes the time as an argument.
package breaker
