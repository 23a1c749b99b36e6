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
package dynamolease
