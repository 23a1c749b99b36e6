// Package resulttoken makes and checks the per-attempt result token: the
// secret that lets a sandbox speak for its own job and attempt, and for no
// other.
//
//	store claims a job ──▶ New() stored with the claim (result_token) ──▶ launcher: EVALSCHED_RESULT_TOKEN
//	sandbox ──result message {…, "result_token"}──▶ results λ ──▶ RecordResult: condition result_token = the sent one
//
// A job's id is derivable (a hash of its batch and key) and its attempt
// is small, so neither is a credential; the token is drawn from
// crypto/rand when the job is claimed (Bits bits), a new one for every
// attempt. A Token never prints itself: fmt, slog and encoding/json see
// "[redacted]", so a job logged whole does not leak it; Reveal is the one
// way to its value (the launcher's, the sandbox kit's).
//
// The simulator injects Seeded so a run stays the same for its seed.
package resulttoken
