// Package sandboxkit is what a Go sandbox imports to drive a model through
// the LLM gateway and to end its job the way evalsched reads it. The
// scheduler releases a job when the model's provider can absorb it; inside
// the container, this kit keeps the job's own calls from making things worse
// and reports what happened:
//
//	EVALSCHED_* env ─▶ JobFromEnv ─▶ harness ─▶ Client.Chat ×N ─▶ NewResult ─▶ Finish ─▶ os.Exit(code)
//	                                              │                               │
//	       Memory watermark (admission) ◀─────────┤                               ├─ SQSReporter: results queue (verdict)
//	       Breaker.Allow (OPEN: wait) ◀───────────┤                               └─ LogLineReporter: last stdout line (all)
//	       Limiter.Wait (sliding window) ◀────────┤
//	       POST /v1/chat/completions, stream ─────┤ transport: TCP_NODELAY, keep-alive pool
//	       SSEReader: TTFT, TPOT ─▶ Latency ◀─────┤ (HDR histograms)
//	       429/5xx ─▶ Breaker.Record; cut stream ─▶ backoff ∨ Retry-After, then again
//
// It lives at the module root, not under internal/, so that sandboxes in
// other modules can import it (github.com/evalsched/evalsched/sandboxkit);
// it imports nothing of the scheduler. A sandbox module pulls in the SQS
// client of aws-sdk-go-v2 (for SQSReporter) and hdrhistogram-go.
//
// # Exit codes
//
// ExitSucceeded (0), ExitJobFailed (1) and ExitProviderFailed (75,
// EX_TEMPFAIL) are the convention internal/taskevent classifies by; a test
// holds them to it. ExitCode maps an error: *ProviderError and ErrBreakerOpen
// are the provider's failure, which feeds the scheduler's per-model breaker;
// anything else is the job's own. A job that judged the model exits 0 whether
// the model passed or not: the verdict travels in the result.
//
// # TCP_NODELAY
//
// Go's net package already disables Nagle's algorithm on every TCP
// connection (newTCPConn in net/tcpsock.go calls setNoDelay(fd, true), after
// any Dialer.Control hook). The kit's Dialer sets it again, explicitly, on the
// *net.TCPConn after the dial, so the behaviour does not rest on a default,
// and so BenchmarkWriteWriteRead can turn it off (an unexported option) to
// show the ~40 ms stall Nagle plus delayed ACK cause on loopback. Measured
// (BENCHMARKS.md): the stall is real for a client that writes a request in
// pieces, and for SSE it is the gateway's side, which writes the small
// pieces, that must have TCP_NODELAY.
//
// # Limiter, breaker, retries
//
// Limiter allows at most N calls in any sliding window. Breaker is three-state
// (CLOSED, OPEN, HALF_OPEN) over the calls of this sandbox; a failure is a
// 429 or any 5xx. It trips on 5 failures in a row (so a sandbox making few
// calls stops too), or when at least 20 calls in 10 s fail at ≥ 25 % and
// by more than a provider failing at 12.5 % would show by chance (a
// Chernoff bound at 1e-4: 11 of 20, 29 of 100; the share alone tripped on
// random 10 % errors in a third of one-minute runs). It stays open a
// jittered 5–10 s, then lets 3 probes through: only calls started in
// HALF_OPEN are probes, and any failure among them reopens it. Client.Chat
// retries 429, 5xx, network errors and cut streams up to 5 requests with
// full-jitter backoff, waiting at least Retry-After; an open breaker makes it
// wait, not send; all waits of one call share a 2-minute budget. Time is an
// input (Clock), so the tests advance a fake clock and never sleep.
//
// # Latency
//
// The client times each answer on its Clock. TTFT is request sent → first
// token of any kind, a reasoning model's reasoning included; TimeToAnswer is
// request sent → first answer token; TPOT is the measured span (first token
// → last token) over the tokens inside it, less one: all completion tokens
// when the reasoning streams (delta.reasoning_content or delta.reasoning),
// the answer's alone when the provider hides its reasoning and only counts
// it (usage.completion_tokens_details.reasoning_tokens). Response documents
// each field; the log line carries the three histograms.
//
// # Memory
//
// Answers are charged to an optional Watermark until Response.Release: above
// the high mark no new call starts until releases bring the level to the low
// mark. A call already streaming is never stopped (it would hold its bytes
// while waiting for itself), so the bound is High plus MaxResponseBytes per
// call in flight; SSEReader caps one event at the same size.
//
// # Results
//
// Finish hands the Result to each Reporter and returns the exit code.
// SQSReporter sends the scheduler's result message, version 1 ({"version":1,
// "job_id", "attempt", "outcome", "score"}), to EVALSCHED_RESULT_QUEUE_URL;
// LogLineReporter writes the whole result, with the TTFT/TPOT summary and
// the call counts, as the last stdout line (LogLine documents the shape).
package sandboxkit
