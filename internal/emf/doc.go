// Package emf writes a pass report as CloudWatch metrics in the Embedded
// Metric Format: JSON lines on stdout that the Lambda log agent turns into
// metrics, with no PutMetricData calls and no extra cost per call. It serves
// the last step of a pass, report (package scheduler names the steps).
//
// Per model with work: GatewayDepth, JobLimit, Running, Starting, Waiting,
// Admitted, AdmittedTier<N>, BreakerOpen (1 while not closed), dimension
// Model. Per pass: PassDuration, Claimed, Launched, LaunchRetried,
// LaunchFailed, Warnings, with no dimension and a second time with the
// dimension Shard (WriteShard; an unsharded scheduler is shard 0), and every
// document carries the property Shard; the per-model metrics keep the one
// dimension Model, which the dashboard's searches match exactly.
package emf
