// Package status is what the operator sees of the system, for `evalsched
// status` and `evalsched why`: the state as the next pass would see it.
//
//	store ──Snapshot──▶ Look: scheduler.DryRun (nothing claimed or written)
//	                      │   + each batch's jobs by state, parts, sampled estimate
//	                      │   + each batch's forecast (internal/forecast)
//	                      ▼
//	                    View ──▶ WriteTable (status) · Why/WriteWhy (why) · JSON
//
// Look reads DynamoDB alone (the depth is the one the last pass saw, from
// each model's state), so an operator needs no CloudWatch access. The CLI
// keeps the flags and the store's set-up; the words and the tables are
// here, with their tests.
package status
