// Package batchmsg reads and checks the batch messages submitters put on the
// intake queue: the public contract of docs/batch-format.md, version 1.
//
// It sits at the very start of the pipeline, before anything is stored:
//
//	submitter ──SQS──▶ intake λ: batchmsg.Parse ──▶ Message.Spec ──▶ store (jobs WAITING)
//	                                   │
//	                                   └─ *Error ──▶ dead-letter queue, reason "field: rule"
//
// The intake function and the operator's `evalsched validate FILE` call the
// same Parse with the deployment's Config, so a message that validates on a
// laptop is the message the intake accepts. Parse is pure: bytes and Config
// in, a Message or errors out; no AWS, no clock.
//
// Split is its inverse for a batch too large for one message: the batch's
// fields and its jobs in, part messages out, each under the contract's
// limits. FromLines is what `evalsched submit` sends of a file of JSON
// Lines of jobs: it reads the lines, Splits them and checks every part with
// Parse, naming each broken rule by the file's line ("FILE:LINE: field:
// rule"); FromMessage checks a message sent as it is.
//
// # Strictness
//
// A message is either exactly right or rejected with every reason (up to
// 10), each naming the field and the rule, because the submitter cannot be
// asked what they meant:
//
//   - unknown fields are errors at every level: a typo ("evn", "max_attempt")
//     must not silently fall back to a default;
//   - a repeated field or env name is an error: JSON parsers disagree on
//     which copy wins, and the submitter's tooling and ours must not;
//   - integers are JSON integers: 1.0, 1e0 and "1" are not, so a float that
//     happens to be whole does not pass today and fail tomorrow;
//   - null is absent: a required field that is null is missing;
//   - one object, nothing after it, at most 1 MiB, valid UTF-8.
//
// Rejections are *Error values: invalid, never worth a retry. Config errors
// are plain errors, so a broken deployment does not dead-letter good
// messages.
//
// # Versions
//
// The contract is versioned: "version" is required and only 1 is read. A
// change to the fields or their rules is a new version with its own parse
// path, and version 1 stays accepted for as long as submitters send it. A
// message of another version is rejected on its version alone, without
// judging its other fields by version 1's rules.
//
// # Cost
//
// Parse reads the bytes once with its own lexer (no reflection, no
// backtracking): time and memory are linear in the message. A 1 MiB,
// 10,000-job message takes about 25 ms and allocates 7 MB, most of it the
// env maps it returns (BenchmarkParse, TestParseMemory). ECS's 8,192-character limit on container
// overrides is checked here, per job, with the formula of OverrideSize, so a
// job RunTask would refuse is never stored.
package batchmsg
