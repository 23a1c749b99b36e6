package template

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/evalsched/evalsched/internal/iamcheck"
)

// The template as plain values: map[string]any, []any, string, int,
// float64, bool and nil. Short-form intrinsics become their long form, the
// one JSON templates use ({"Ref": "X"}, {"Fn::GetAtt": ["X", "Arn"]}, …), so
// the checks see one shape whichever form the template uses.

// decode reads a YAML template into plain values: iamcheck.Decode, which
// the IAM check of the functions' flows reads the template with too.
func decode(data []byte) (map[string]any, error) { return iamcheck.Decode(data) }

// intrinsic reports whether v is an intrinsic function call and which.
func intrinsic(v any) (fn string, arg any, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", nil, false
	}
	for k, a := range m {
		if k == "Ref" || strings.HasPrefix(k, "Fn::") {
			return k, a, true
		}
	}
	return "", nil, false
}

// ref returns X of {"Ref": X}.
func ref(v any) (string, bool) {
	fn, arg, ok := intrinsic(v)
	if !ok || fn != "Ref" {
		return "", false
	}
	s, ok := arg.(string)
	return s, ok
}

// getAtt returns X and Attr of {"Fn::GetAtt": [X, Attr]}.
func getAtt(v any) (res, attr string, ok bool) {
	fn, arg, isFn := intrinsic(v)
	if !isFn || fn != "Fn::GetAtt" {
		return "", "", false
	}
	l, _ := arg.([]any)
	if len(l) != 2 {
		return "", "", false
	}
	res, ok1 := l[0].(string)
	attr, ok2 := l[1].(string)
	return res, attr, ok1 && ok2
}

// subVar matches ${…} in Fn::Sub; ${!…} is a literal.
var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// subVars returns the variables a Fn::Sub string refers to.
func subVars(s string) []string {
	var out []string
	for _, m := range subVar.FindAllStringSubmatch(s, -1) {
		if !strings.HasPrefix(m[1], "!") {
			out = append(out, strings.TrimSpace(m[1]))
		}
	}
	return out
}

// text renders a value CloudFormation turns into a string as a reader sees
// it, references written ${X} and ${X.Attr}: !Ref X, !GetAtt X.Arn and
// !Sub "${X.Arn}" all render alike, so the checks compare text.
func text(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int, float64, bool:
		return fmt.Sprint(x), true
	}
	fn, arg, ok := intrinsic(v)
	if !ok {
		return "", false
	}
	switch fn {
	case "Ref":
		s, ok := arg.(string)
		return "${" + s + "}", ok
	case "Fn::GetAtt":
		res, attr, ok := getAtt(v)
		return "${" + res + "." + attr + "}", ok
	case "Fn::Sub":
		s, vars, ok := subArgs(arg)
		if !ok {
			return "", false
		}
		var failed bool
		out := subVar.ReplaceAllStringFunc(s, func(m string) string {
			name := strings.TrimSpace(m[2 : len(m)-1])
			if val, ok := vars[name]; ok {
				t, ok := text(val)
				failed = failed || !ok
				return t
			}
			return m
		})
		return out, !failed
	case "Fn::Join":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return "", false
		}
		sep, ok := l[0].(string)
		if !ok {
			return "", false
		}
		if r, isRef := ref(l[1]); isRef { // a List parameter
			return "${" + r + "}", true
		}
		items, _ := l[1].([]any)
		parts := make([]string, len(items))
		for i, it := range items {
			if parts[i], ok = text(it); !ok {
				return "", false
			}
		}
		return strings.Join(parts, sep), true
	}
	return "", false
}

// subArgs splits a Fn::Sub argument into its string and variable map.
func subArgs(arg any) (string, map[string]any, bool) {
	switch a := arg.(type) {
	case string:
		return a, nil, true
	case []any:
		if len(a) != 2 {
			return "", nil, false
		}
		s, ok1 := a[0].(string)
		vars, ok2 := a[1].(map[string]any)
		return s, vars, ok1 && ok2
	}
	return "", nil, false
}

// alternatives expands Fn::If into both branches (what a deployment may
// get, whatever the condition), leaving out AWS::NoValue.
func alternatives(v any) []any {
	if v == nil {
		return nil
	}
	fn, arg, ok := intrinsic(v)
	if ok && fn == "Fn::If" {
		l, _ := arg.([]any)
		if len(l) == 3 {
			return append(alternatives(l[1]), alternatives(l[2])...)
		}
	}
	if r, ok := ref(v); ok && r == "AWS::NoValue" {
		return nil
	}
	return []any{v}
}

// items returns the elements of a list, or the one value when v is not a
// list (IAM's Action and Resource take either), branches of Fn::If expanded.
func items(v any) []any {
	var out []any
	for _, alt := range alternatives(v) {
		l, isList := alt.([]any)
		if !isList {
			out = append(out, alt)
			continue
		}
		for _, it := range l {
			out = append(out, alternatives(it)...)
		}
	}
	return out
}

// texts renders each of items(v); the second result lists what would not.
func texts(v any) (out []string, bad []any) {
	for _, it := range items(v) {
		if s, ok := text(it); ok {
			out = append(out, s)
		} else {
			bad = append(bad, it)
		}
	}
	return out, bad
}

// path walks nested maps: path(m, "Properties", "Timeout").
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// mapAt is path as a map (nil when absent or not a map).
func mapAt(v any, keys ...string) map[string]any {
	m, _ := path(v, keys...).(map[string]any)
	return m
}

// number reads an int or a float, also from a numeric string.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// deepCopy copies plain values, for tests that mutate a template.
func deepCopy(v any) any { return copyTree(v, func(any) (any, bool) { return nil, false }) }

// copyTree copies the maps and lists under v; replace may take the place
// of any value (and of all under it) by returning true.
func copyTree(v any, replace func(any) (any, bool)) any {
	if r, ok := replace(v); ok {
		return r
	}
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			m[k] = copyTree(val, replace)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, val := range x {
			l[i] = copyTree(val, replace)
		}
		return l
	}
	return v
}

// walk calls f on every value under v with its path.
func walk(v any, at string, f func(at string, v any)) {
	f(at, v)
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			walk(x[k], at+"/"+k, f)
		}
	case []any:
		for i, val := range x {
			walk(val, fmt.Sprintf("%s[%d]", at, i), f)
		}
	}
}

// merge applies SAM's Globals rule (iamcheck.Merge).
func merge(global, local any) any { return iamcheck.Merge(global, local) }
