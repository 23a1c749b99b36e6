// Package resultmsg reads the result message v1 a sandbox sends to the
// scheduler's results queue at the end of a job: its verdict on the model.
//
//	sandbox: sandboxkit.SQSReporter ──SQS results queue──▶ intake λ: resultmsg.Parse ──▶ store.RecordResult
//	                                                                 └─ *Error ──▶ dead-letter queue, reason "field: rule"
//
// The sandbox's task role may only SendMessage to that queue: it needs no
// access to the scheduler's tables, and a sandbox can do no more than state
// one verdict for the job and attempt it runs as (EVALSCHED_JOB_ID,
// EVALSCHED_ATTEMPT), proved by the attempt's result token
// (EVALSCHED_RESULT_TOKEN, internal/resulttoken): a job's id can be
// derived, its token cannot. The store keeps the verdict of the job's
// current attempt only with that token, and ignores a stale one; sampled
// batches (internal/sampling) count it toward their estimate.
//
// The message, written by sandboxkit.NewResultMessage, is one JSON object:
//
//	{"version":1,"job_id":"<32 lowercase hex>","attempt":2,"outcome":"pass","score":0.83,"result_token":"<32 base64url>"}
//
// Parse is as strict as the batch contract (internal/batchmsg): unknown or
// repeated fields, a non-integer attempt, null for a required field and
// anything after the object are errors naming the field and the rule. Parse
// is pure.
package resultmsg
