// Package results is the results function: it reads the verdicts sandboxes
// send to the results queue and records each on its job, per attempt.
//
//	sandbox (task role: sqs:SendMessage on the results queue, nothing else)
//	  ──SQS results queue──▶ results λ: resultmsg.Parse ──▶ store.RecordResult (job, attempt)
//	                                      │                        └─ unknown job ─┐
//	                                      └─ invalid ──────────────────────────────┴─▶ dead-letter queue, reason
//
// The sandbox never touches the scheduler's tables: what it can say is one
// verdict for the job and attempt it names, and the store keeps it only
// while that attempt is the job's current one. A stale attempt's result
// and SQS's redelivery are acknowledged and change nothing. A message that
// cannot be read, or names no job, is not worth a retry: it goes to the
// dead-letter queue with the reason (evalsched-reason), body unchanged. A
// store failure is reported as a batch item failure, so SQS delivers just
// that message again.
package results
