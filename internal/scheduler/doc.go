// Package scheduler runs one scheduler pass: it reads a snapshot from the
// store, decides new limits and which waiting jobs start, claims those jobs and
// launches them.
//
// The decisions are pure (Decide) and live in the packages priority, breaker,
// limits, capacity and admission; this package wires them in the steps below
// and talks to the outside world only through the small interfaces it declares
// here: Store, DepthReader, Launcher and Clock. The same Pass runs in the
// scheduler Lambda (DynamoDB, CloudWatch, ECS), in the local mode and in the
// simulator (in-memory adapters).
//
// # Steps
//
// A pass runs these steps, in this order. This list is their one
// definition: code and documents elsewhere name a step, never number it.
//
//	snapshot  Store.Snapshot: models, queues with waiting counts, pins, pauses
//	depth     DepthReader.Depths: the newest gateway depth per busy model
//	decide    Decide, pure, in named phases (decide.go): compilePins (priority),
//	          activeQueues (pauses), stepModel (breaker → limits), split
//	          (capacity), admit (admission), recordHeld
//	claim     Store.Commit: new state persisted, granted jobs claimed once,
//	          if no other pass committed since the snapshot's Versions
//	launch    Launcher.Launch: one task per claimed job
//	record    Store.RecordLaunches: launched, back to waiting, or failed
//	yield     Yield: stop starting tasks of a model whose queue says it has
//	          too many jobs (limits.Decision.Yield; YieldPick chooses them
//	          in the tiers' weights, JobTierReader reading the starting
//	          jobs' tiers); each job waits again once ECS reports its task
//	          stopped
//	report    the Report returned to the caller, logged as one line
//
// # Shards
//
// Past what one pass can do in its slot, the models are sharded over N
// scheduler invocations (shard.go): ShardOf(model, N) names a model's shard,
// whose store sees only its models. With Scheduler.Sharing and
// Scheduler.Loads set, each pass (after snapshot, before decide) reads the
// shards' last loads from Loads (the store) and takes its share of the
// account-wide cap, launch budget and launch rate by load
// (Sharing.ShareByLoad; Scheduler.Rates resizes the launcher's bucket), and
// after the claim reports its own; Config holds the even static share
// (Caps.Share), the fallback when the loads cannot be read.
//
// # Pauses
//
// Pauses (pause.go) are state of their own, apart from pins: a paused
// batch holds no demand until resumed, whatever its pins say. Decide also
// keeps each model's smoothed end rate (EndRate, endrate.go) in
// its state for forecasts; no decision reads it.
package scheduler
