package batchmsg

import "errors"

// Error is one way a message breaks the contract: which field, what rule.
// Every *Error means the message is invalid as sent: the intake dead-letters
// it with the reason attached and never retries it, since a redelivery would
// fail the same way. An error from Parse that is not an *Error (a bad Config)
// is the deployment's fault, not the message's.
type Error struct {
	// Field is the path of the offending value in the message, as in
	// "tier", "jobs[17].key" or "jobs[17].env.TASK_ID". A problem with a
	// member name (an unknown field, a duplicate, a bad env name) is
	// reported on the object holding it: "jobs[2]", "jobs[17].env"; one
	// with the whole message (size, syntax, trailing data) on "message".
	Field string
	// Rule is what the value breaks, lowercase, quoting the value:
	// `"a b" has characters outside A-Z a-z 0-9 . _ : / -`.
	Rule string
}

// Error returns "field: rule".
func (e *Error) Error() string { return e.Field + ": " + e.Rule }

// Errors returns the *Error values in err, in the order Parse found them:
// err itself, or the members of the errors.Join that Parse returns when a
// message breaks several rules. It returns nil for an err holding none.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if errors.As(err, &e) {
			out = append(out, e)
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}
