// Package depthbridge is `evalsched bridge`: it feeds the scheduler's depth
// step (package gatewaydepth) from the Prometheus endpoints that gateways
// and inference servers already serve.
//
// Every Interval (1 s) it scrapes each target (vLLM, Envoy or Envoy AI
// Gateway, LiteLLM, or any series named by a metric{label} selector),
// parses the exposition with the Prometheus project's expfmt, and sums per
// model: the calls queued (depth), in service, and the increases of the
// error and call counters. Model names go through Normalize so that they
// match the names jobs use. With Readings set (the deployed default with
// the bridge), every PublishEvery (10 s) the period's readings of every
// model — the depth's mean, the largest calls in service, the error rate —
// go to the state table's readings item (package depthitem), which the
// pass reads with one request. With a CloudWatch client, each second's
// values become high-resolution (StorageResolution 1) datapoints, zeros
// included, sent every PublishEvery in PutMetricData calls of up to 1,000.
//
// Failure is silence: a target that does not answer, answers other than
// 200 or serves what does not parse gets nothing published for its models
// that second. The pass then finds the model's newest reading stale
// or missing and the limits hold; zeros would have read as an empty queue
// and raised them. docs/bridge.md is the operator's guide.
package depthbridge
