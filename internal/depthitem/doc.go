// Package depthitem carries the gateway's per-model readings from the
// bridge (internal/depthbridge) to the scheduler's depth step through one
// item in the state table, instead of CloudWatch: a GetMetricData query is
// billed per metric per pass (4 a busy model, $2,499 a month at the seed's
// load), an eventually consistent read of this item a fraction of a cent.
//
// Every PublishEvery the bridge writes, for every model it has seen, the
// newest depth (the mean over the period), calls in service (the
// maximum), and error rate (the newest period with calls), each with the
// end of its period: Writer.Put. The pass reads them back with Reader,
// a scheduler.DepthReader: one Query of the item's partition. A reading
// older than the lookback (3 min, gatewaydepth's default) is missing, as a
// datapoint outside GetMetricData's window is, and the limits hold.
//
// Size: an item holds at most 400 KB (DynamoDB's item size limit). Put
// splits the models into shards of at most ShardBytes of estimated item
// size, sk "0000", "0001", ...; the reader's Query reads them all and keeps
// each model's newest reading, so a shard left over from a larger fleet
// only adds readings the lookback soon drops.
package depthitem
