package iamcheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Request is one IAM authorization: an action on a resource, with the
// condition keys AWS sets for it (lower-case names).
type Request struct {
	Action   string
	Resource string
	Context  map[string][]string
}

func (r Request) String() string { return r.Action + " on " + r.Resource }

// Statement is one statement of an identity-based policy, its values
// resolved to text.
type Statement struct {
	Where       string // for messages: the role, policy and Sid
	Effect      string
	Actions     []string
	NotAction   bool
	Resources   []string
	NotResource bool
	// Conditions: operator → key → values.
	Conditions map[string]map[string][]string
}

// Policy is what one principal is granted: the statements of all its
// policies.
type Policy struct {
	Name       string
	Statements []Statement
}

// Decision is the outcome of a request against a policy.
type Decision struct {
	Allowed bool
	By      string // the statement that allowed or denied it
	Reason  string // why not, when not allowed
}

// Evaluate decides a request as IAM does for one identity-based policy set
// without boundaries: an explicit Deny wins, then any Allow, else the
// implicit deny.
func (p Policy) Evaluate(r Request) Decision {
	var allow *Statement
	for i := range p.Statements {
		s := &p.Statements[i]
		ok, err := s.matches(r)
		if err != nil {
			return Decision{Reason: fmt.Sprintf("%s: %v", s.Where, err)}
		}
		if !ok {
			continue
		}
		if strings.EqualFold(s.Effect, "Deny") {
			return Decision{By: s.Where, Reason: "an explicit deny in " + s.Where}
		}
		if allow == nil {
			allow = s
		}
	}
	if allow != nil {
		return Decision{Allowed: true, By: allow.Where}
	}
	return Decision{Reason: "no identity-based policy allows the " + r.Action + " action"}
}

func (s *Statement) matches(r Request) (bool, error) {
	hit := slices.ContainsFunc(s.Actions, func(a string) bool { return glob(strings.ToLower(a), strings.ToLower(r.Action)) })
	if hit == s.NotAction {
		return false, nil
	}
	hit = slices.ContainsFunc(s.Resources, func(p string) bool { return glob(p, r.Resource) })
	if hit == s.NotResource {
		return false, nil
	}
	for op, keys := range s.Conditions {
		for key, want := range keys {
			ok, err := condition(op, want, r.Context[strings.ToLower(key)])
			if err != nil || !ok {
				return false, err
			}
		}
	}
	return true, nil
}

// condition evaluates one condition operator on a key's values in the
// request (nil when the request has no such key).
func condition(op string, want, got []string) (bool, error) {
	base := op
	allValues := strings.HasPrefix(base, "ForAllValues:")
	base = strings.TrimPrefix(strings.TrimPrefix(base, "ForAnyValue:"), "ForAllValues:")
	ifExists := strings.HasSuffix(base, "IfExists")
	base = strings.TrimSuffix(base, "IfExists")
	if got == nil {
		switch {
		case ifExists || allValues:
			return true, nil
		case strings.Contains(base, "Not"):
			return true, nil // a negated operator holds for a missing key
		}
		return false, nil
	}
	var one func(w, g string) bool
	negate := false
	switch base {
	case "StringEquals", "ArnEquals":
		one = func(w, g string) bool { return w == g }
	case "StringEqualsIgnoreCase":
		one = strings.EqualFold
	case "StringLike", "ArnLike":
		one = glob
	case "StringNotEquals", "ArnNotEquals":
		one, negate = func(w, g string) bool { return w == g }, true
	case "StringNotLike", "ArnNotLike":
		one, negate = glob, true
	case "Bool":
		one = strings.EqualFold
	default:
		return false, fmt.Errorf("condition operator %s is not modelled here: add it to iamcheck", op)
	}
	matchOne := func(g string) bool {
		return slices.ContainsFunc(want, func(w string) bool { return one(w, g) })
	}
	var ok bool
	switch {
	case allValues:
		ok = !slices.ContainsFunc(got, func(g string) bool { return !matchOne(g) })
	default: // a single-valued key, or ForAnyValue
		ok = slices.ContainsFunc(got, matchOne)
	}
	return ok != negate, nil
}

// glob matches IAM's wildcards: * any run of characters, ? one character.
func glob(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	// Not path.Match: it treats / specially and knows [ ]; IAM does neither.
	return wild(pattern, s)
}

func wild(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if wild(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			p, s = p[1:], s[1:]
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return s == ""
}

// ParsePolicyJSON reads a policy document in JSON, as IAM takes it.
func ParsePolicyJSON(name string, data []byte) (Policy, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", name, err)
	}
	st, err := statements(doc, name)
	return Policy{Name: name, Statements: st}, err
}

// statements reads the Statement of a policy document whose values are
// already resolved (strings, lists of strings).
func statements(doc any, where string) ([]Statement, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: the policy document is a %T, not an object", where, doc)
	}
	var out []Statement
	for i, raw := range list(m["Statement"]) {
		sm, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: statement %d is a %T", where, i, raw)
		}
		s := Statement{Where: fmt.Sprintf("%s/Statement[%d]", where, i), Conditions: map[string]map[string][]string{}}
		if sid, _ := sm["Sid"].(string); sid != "" {
			s.Where += ":" + sid
		}
		s.Effect, _ = sm["Effect"].(string)
		if s.Effect != "Allow" && s.Effect != "Deny" {
			return nil, fmt.Errorf("%s: Effect %v, want Allow or Deny", s.Where, sm["Effect"])
		}
		var err error
		action, notAction := sm["Action"], sm["NotAction"]
		if s.NotAction = notAction != nil; s.NotAction {
			action = notAction
		}
		if s.Actions, err = strs(action); err != nil {
			return nil, fmt.Errorf("%s: Action: %w", s.Where, err)
		}
		resource, notResource := sm["Resource"], sm["NotResource"]
		if s.NotResource = notResource != nil; s.NotResource {
			resource = notResource
		}
		if s.Resources, err = strs(resource); err != nil {
			return nil, fmt.Errorf("%s: Resource: %w", s.Where, err)
		}
		if len(s.Actions) == 0 || len(s.Resources) == 0 {
			return nil, fmt.Errorf("%s: no actions or no resources", s.Where)
		}
		cond, _ := sm["Condition"].(map[string]any)
		for op, keys := range cond {
			km, ok := keys.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: Condition %s is a %T", s.Where, op, keys)
			}
			s.Conditions[op] = map[string][]string{}
			for k, v := range km {
				if s.Conditions[op][k], err = strs(v); err != nil {
					return nil, fmt.Errorf("%s: Condition %s %s: %w", s.Where, op, k, err)
				}
			}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no statements", where)
	}
	return out, nil
}

// list is v as a list: IAM takes one value or a list alike.
func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// strs is v as a list of strings (numbers and booleans as IAM reads them).
func strs(v any) ([]string, error) {
	var out []string
	for _, it := range list(v) {
		switch x := it.(type) {
		case string:
			out = append(out, x)
		case bool, int, float64:
			out = append(out, fmt.Sprint(x))
		default:
			return nil, fmt.Errorf("got a %T (%v), want a string", it, it)
		}
	}
	return out, nil
}
