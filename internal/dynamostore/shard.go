package dynamostore

import "strings"

// A scheduler shard (scheduler.ShardOf) runs its passes over a Store whose
// Owns names its models. The scoping is by reading and deciding less, not by
// writing differently: every item stays where it is, so the shard count can
// change between two minutes without moving data, and the intake, the task
// events and the operator's commands need not know there are shards.
//
// What a shard's Snapshot reads (BENCHMARKS.md, "Sharded passes": 2,000
// models, 20,000 active queues, 4 shards):
//
//	Scan models, Scan pins          every item     small, operator-edited
//	Query MODELS (model states)     every item     a shard cannot tell its
//	                                               models without their names
//	BatchGetItem counters           its models     ÷ N
//	Query active index              every entry    one partition; the other
//	                                               shards' entries are dropped
//	                                               before they are decoded
//
// and its Commit claims, records and writes the state of its models only.
// The two whole Queries are what keeps a shard's pass from costing 1/N:
// keying the active index (and the model states) by a shard bucket would,
// and needs Submit, the claims and the task events to write the bucket.

// owns reports whether the store's shard owns the model (all without Owns).
func (s *Store) owns(model string) bool { return s.Owns == nil || s.Owns(model) }

// queueModel returns the model of a queue item's pk,
// "QUEUE#<account>#<project>#<batch>#<model>": names cannot contain "#"
// (checkName), so the model is the last field. It lets a shard drop another
// shard's queue from the active index by its key alone.
func queueModel(pk string) string {
	return pk[strings.LastIndexByte(pk, '#')+1:]
}
