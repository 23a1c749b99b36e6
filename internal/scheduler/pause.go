package scheduler

import "time"

// Pause stops the admission of a scope's waiting jobs until it is lifted
// (evalsched pause/resume); running jobs go on. It is state of its own,
// apart from pins: a pin's tier, its removal or its expiry never starts,
// lifts or ends a pause, and a pause never changes a tier.
type Pause struct {
	Scope string    // "account#A", "project#A/P" or "batch#A/P/B", the form of a pin's scope
	Since time.Time // when it was paused; zero if unknown
}

// Pauses answers which pause holds a batch. Build it with PausesOf.
type Pauses struct{ scopes map[string]bool }

// PausesOf indexes the snapshot's pauses.
func PausesOf(ps []Pause) Pauses {
	p := Pauses{scopes: make(map[string]bool, len(ps))}
	for _, x := range ps {
		p.scopes[x.Scope] = true
	}
	return p
}

// By returns the scope that pauses the batch, the most specific first.
func (p Pauses) By(account, project, batch string) (string, bool) {
	if len(p.scopes) == 0 {
		return "", false
	}
	for _, scope := range []string{"batch#" + account + "/" + project + "/" + batch, "project#" + account + "/" + project, "account#" + account} {
		if p.scopes[scope] {
			return scope, true
		}
	}
	return "", false
}

// Any reports whether any scope is paused.
func (p Pauses) Any() bool { return len(p.scopes) > 0 }

// PauseKey is the scope in a pause's (and a pin's) form: "account#A",
// "project#A/P" or "batch#A/P/B".
func (s Scope) PauseKey() string {
	switch {
	case s.Project == "":
		return "account#" + s.Account
	case s.Batch == "":
		return "project#" + s.Account + "/" + s.Project
	}
	return "batch#" + s.Account + "/" + s.Project + "/" + s.Batch
}
