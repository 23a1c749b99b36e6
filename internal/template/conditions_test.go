package template

import (
	"fmt"
	"slices"
	"testing"
)

// The template as deployed with given parameter values: its conditions
// decided, Fn::If resolved, AWS::NoValue dropped. goformation resolves
// conditions only for literal comparisons, and the scheduler's shards are
// conditional (one schedule target and one alarm per shard; a
// reservation only when asked for), so the checks evaluate them here for each value a parameter
// allows.

// parameterValues returns every parameter's default (rendered), overridden
// by set.
func (f *fixture) parameterValues(set map[string]string) map[string]string {
	out := map[string]string{}
	for name := range mapAt(f.tmpl, "Parameters") {
		if d, ok := f.parameterDefault(name); ok {
			out[name] = d
		}
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}

// allowedValues returns a parameter's AllowedValues, rendered.
func (f *fixture) allowedValues(name string) []string {
	var out []string
	for _, v := range items(mapAt(f.tmpl, "Parameters", name)["AllowedValues"]) {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// condition evaluates the template's condition name.
func (f *fixture) condition(name string, params map[string]string) (bool, error) {
	c, ok := mapAt(f.tmpl, "Conditions")[name]
	if !ok {
		return false, fmt.Errorf("no condition %q", name)
	}
	return f.conditionExpr(c, params, 0)
}

func (f *fixture) conditionExpr(c any, params map[string]string, depth int) (bool, error) {
	if depth > 20 {
		return false, fmt.Errorf("conditions nest too deep (a cycle?) at %v", c)
	}
	if m, ok := c.(map[string]any); ok && len(m) == 1 {
		if name, ok := m["Condition"].(string); ok {
			cc, known := mapAt(f.tmpl, "Conditions")[name]
			if !known {
				return false, fmt.Errorf("no condition %q", name)
			}
			return f.conditionExpr(cc, params, depth+1)
		}
	}
	fn, arg, ok := intrinsic(c)
	l, _ := arg.([]any)
	if !ok {
		return false, fmt.Errorf("%v is not a condition function", c)
	}
	switch fn {
	case "Fn::Equals":
		if len(l) != 2 {
			return false, fmt.Errorf("Fn::Equals of %d values", len(l))
		}
		a, err := f.scalar(l[0], params)
		if err != nil {
			return false, err
		}
		b, err := f.scalar(l[1], params)
		return a == b, err
	case "Fn::Not", "Fn::And", "Fn::Or":
		var vals []bool
		for _, x := range l {
			v, err := f.conditionExpr(x, params, depth+1)
			if err != nil {
				return false, err
			}
			vals = append(vals, v)
		}
		switch {
		case fn == "Fn::Not" && len(vals) == 1:
			return !vals[0], nil
		case fn == "Fn::And" && len(vals) >= 2:
			return !slices.Contains(vals, false), nil
		case fn == "Fn::Or" && len(vals) >= 2:
			return slices.Contains(vals, true), nil
		}
		return false, fmt.Errorf("%s of %d conditions", fn, len(vals))
	}
	return false, fmt.Errorf("%s is not a condition function", fn)
}

// scalar is a literal, or a Ref of a parameter, as text (CloudFormation
// compares strings: 1 and "1" are equal).
func (f *fixture) scalar(v any, params map[string]string) (string, error) {
	if r, ok := ref(v); ok {
		p, known := params[r]
		if !known {
			return "", fmt.Errorf("Ref %s: no value", r)
		}
		return p, nil
	}
	if _, _, ok := intrinsic(v); ok {
		return "", fmt.Errorf("cannot evaluate %v", v)
	}
	return fmt.Sprint(v), nil
}

// noValue marks what AWS::NoValue leaves out.
type noValue struct{}

// deployed returns v with every Fn::If decided and AWS::NoValue removed from
// maps and lists; other intrinsics are left as they are.
func (f *fixture) deployed(v any, params map[string]string) (any, error) {
	out, err := f.resolveIf(v, params)
	if _, gone := out.(noValue); gone {
		return nil, err
	}
	return out, err
}

func (f *fixture) resolveIf(v any, params map[string]string) (any, error) {
	if r, ok := ref(v); ok && r == "AWS::NoValue" {
		return noValue{}, nil
	}
	if fn, arg, ok := intrinsic(v); ok && fn == "Fn::If" {
		l, _ := arg.([]any)
		name, _ := firstOf(l).(string)
		if len(l) != 3 {
			return nil, fmt.Errorf("Fn::If with %d arguments", len(l))
		}
		yes, err := f.condition(name, params)
		if err != nil {
			return nil, err
		}
		if yes {
			return f.resolveIf(l[1], params)
		}
		return f.resolveIf(l[2], params)
	}
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, val := range x {
			r, err := f.resolveIf(val, params)
			if err != nil {
				return nil, err
			}
			if _, gone := r.(noValue); !gone {
				m[k] = r
			}
		}
		return m, nil
	case []any:
		l := []any{}
		for _, val := range x {
			r, err := f.resolveIf(val, params)
			if err != nil {
				return nil, err
			}
			if _, gone := r.(noValue); !gone {
				l = append(l, r)
			}
		}
		return l, nil
	}
	return v, nil
}

// deployedResources returns the resources a deployment with params creates
// (those whose Condition holds), Fn::If resolved.
func (f *fixture) deployedResources(params map[string]string) (map[string]any, error) {
	out := map[string]any{}
	for id, r := range f.resources() {
		if c, ok := path(r, "Condition").(string); ok {
			yes, err := f.condition(c, params)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			if !yes {
				continue
			}
		}
		d, err := f.deployed(r, params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		out[id] = d
	}
	return out, nil
}

func TestConditionsEvaluate(t *testing.T) {
	f := &fixture{tmpl: map[string]any{
		"Parameters": map[string]any{"N": map[string]any{"Type": "Number", "Default": 1, "AllowedValues": []any{1, 2, 3}}},
		"Conditions": map[string]any{
			"Two":    map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "N"}, "2"}},
			"NotOne": map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "N"}, 1}}}},
			"TwoOrThree": map[string]any{"Fn::Or": []any{
				map[string]any{"Condition": "Two"}, map[string]any{"Fn::Equals": []any{"3", map[string]any{"Ref": "N"}}}}},
		},
	}}
	list := []any{"a", map[string]any{"Fn::If": []any{"NotOne", "b", map[string]any{"Ref": "AWS::NoValue"}}}}
	for _, c := range []struct {
		n    string
		want []any
	}{{"1", []any{"a"}}, {"2", []any{"a", "b"}}, {"3", []any{"a", "b"}}} {
		params := f.parameterValues(map[string]string{"N": c.n})
		got, err := f.deployed(list, params)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("N=%s: got %v, %v; want %v", c.n, got, err, c.want)
		}
		two, _ := f.condition("TwoOrThree", params)
		if two != (c.n != "1") {
			t.Errorf("N=%s: TwoOrThree is %v", c.n, two)
		}
	}
	if got := f.allowedValues("N"); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("allowed values: got %v", got)
	}
}
