// Package schedulerfn is one invocation of the scheduler function: take the lease,
// run a scheduler pass in each ten-second slot of the minute (passloop), and
// report every pass as one JSON log line and EMF metrics. The Lambda main
// only builds the clients and hands them over.
//
// When the models are sharded over several scheduler invocations
// (EVALSCHED_SHARDS, scheduler.ShardOf), EventBridge invokes the function
// once a minute per shard with the input {"shard": k}. Handler reads it
// (ParseShard: no shard is shard 0; one outside [0, N) is an error) and runs
// shard k's Runner — built on the shard's first invocation in the
// environment and kept, since a warm environment may serve several shards —
// under shard k's own lease, so shards pass side by side and two invocations
// of one shard never do. Log lines carry "shard", EMF documents "Shard".
package schedulerfn
