// Package gatewaydepth reads each model's gateway queue depth from CloudWatch:
// the depth step of a scheduler pass (package scheduler names the steps).
//
// The LLM gateway publishes one metric per model: the number of calls queued
// and not yet in service, with the model as a dimension, at high resolution
// (StorageResolution 1) and at a steady pace, zeros included (every second,
// say), so that a period's Average is the mean queue over it. For example,
// with the defaults:
//
//	aws cloudwatch put-metric-data --namespace LLMGateway \
//	  --metric-name QueueDepth --dimensions Model=gpt-5.5 \
//	  --storage-resolution 1 --value 37
//
// One pass makes one GetMetricData call for up to 500 models (more models,
// more calls), asking for the Average over Period of the last Lookback, newest
// first. The newest datapoint and its time go to the limits package, which
// holds on a missing or stale one. A datapoint's time is the end of its
// period. The Average, not the Maximum: each queued call is a job's
// container blocked, so the mean queue over the running jobs is the share of
// their time blocked (what the limits bound); the Maximum of a period of
// short calls is several times its mean, so a controller steering it to
// the target holds the mean queue far below it and leaves providers idle.
// A gateway that publishes only when calls queue biases the Average up: the
// limits then err low, never high.
//
// When the operator names the gateway's error and calls metrics (two
// counters per model: calls the provider answered with 429/5xx, and all
// calls), the same call asks for their Sums over Period too, and the newest
// period with calls gives the model's error rate errors/calls. The breaker
// closes on it once the provider heals, instead of waiting for whole jobs to
// end; without those metrics it goes by the jobs' exit codes alone. Query
// ids are the model's index behind a letter: m (depth), e (errors), c (calls).
package gatewaydepth
