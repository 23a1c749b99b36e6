// Package dynamolease is the scheduler's lease on DynamoDB: one item that
// says which invocation may run passes and until when. It implements
// passloop.Lease.
//
// Acquire is a conditional PutItem that succeeds when the item is missing,
// expired, or already ours; Renew a conditional UpdateItem that succeeds only
// while it is ours; Release a conditional DeleteItem. Every condition compares
// the owner, so an invocation that lost the lease (it stalled past the expiry
// and another took over) can never renew or release someone else's. The item
// lives in the state table (pk "LEASE", sk "SCHEDULER") with plain attributes
// an operator can read in the console: owner, until, acquired_at.
//
// When the models are sharded over several schedulers (EVALSCHED_SHARDS),
// each shard has its own item — sk "SCHEDULER" for shard 0, "SCHEDULER#<k>"
// for shard k — so the shards pass side by side while two invocations of one
// shard still never do. Shard 0 keeps the single scheduler's item: during
// the minute after sharding is turned on, the last unsharded invocation
// excludes shard 0 only; it may pass at once with shards 1…N−1 over their
// models, which the store's conditions keep safe (a model's state written by
// both makes one Commit stale (scheduler.ErrStale); a job is claimed once).
package dynamolease
