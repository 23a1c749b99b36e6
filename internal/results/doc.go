// Package results is the results function: it reads the verdicts sandboxes
// send to the results queue and records each on its job, per attempt.
//
//	sandbox (task role: sqs:SendMessage on the results queue, nothing else)
//	  ──SQS results queue──▶ results λ: resultmsg.Parse ──▶ store.RecordResult (job, attempt, token)
//	                                      │                        └─ unknown job, wrong token ─┐
//	                                      └─ invalid ───────────────────────────────────────────┴─▶ dead-letter queue, reason
//
// The sandbox never touches the scheduler's tables: what it can say is one
// verdict for the job and attempt it names, with that attempt's result
// token (internal/resulttoken), and the store keeps it only while that
// attempt is the job's current one and the token is the one its claim
// drew — checked in the write that records the verdict. A stale attempt's
// result and SQS's redelivery are acknowledged and change nothing. A
// message that cannot be read, names no job, or names the current attempt
// with another token (a forgery) is not worth a retry: it goes to the
// dead-letter queue with the reason (evalsched-reason), body unchanged. A
// store failure is reported as a batch item failure, so SQS delivers just
// that message again.
package results
