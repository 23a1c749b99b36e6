package template

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fixture is what the checks read: the template as plain values and the
// Makefile's text. Negative tests change a copy and run one check on it.
type fixture struct {
	root     string // the repository
	tmpl     map[string]any
	makefile string
}

var (
	loadOnce sync.Once
	loaded   *fixture
	loadErr  error
)

// load reads ../../template.yaml and ../../Makefile once; each caller gets
// its own copy.
func load(t testing.TB) *fixture {
	t.Helper()
	loadOnce.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			loadErr = err
			return
		}
		data, err := os.ReadFile(filepath.Join(root, "template.yaml"))
		if err != nil {
			loadErr = err
			return
		}
		tmpl, err := decode(data)
		if err != nil {
			loadErr = fmt.Errorf("template.yaml: %w", err)
			return
		}
		mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
		if err != nil {
			loadErr = err
			return
		}
		loaded = &fixture{root: root, tmpl: tmpl, makefile: string(mk)}
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded.clone()
}

func (f *fixture) clone() *fixture {
	c := *f
	c.tmpl = deepCopy(f.tmpl).(map[string]any)
	return &c
}

func (f *fixture) resources() map[string]any { return mapAt(f.tmpl, "Resources") }

// ids returns the logical ids of the resources of a type, sorted.
func (f *fixture) ids(typ string) []string {
	var out []string
	for id, r := range f.resources() {
		if path(r, "Type") == typ {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (f *fixture) typeOf(id string) string {
	s, _ := path(f.resources()[id], "Type").(string)
	return s
}

// props returns a resource's Properties (nil when absent).
func (f *fixture) props(id string) map[string]any { return mapAt(f.resources()[id], "Properties") }

// function returns a serverless function's properties with the Globals
// applied, as SAM deploys them.
func (f *fixture) function(id string) map[string]any {
	m, _ := merge(mapAt(f.tmpl, "Globals", "Function"), f.props(id)).(map[string]any)
	return m
}

// env returns a function's environment variables with the Globals applied.
func (f *fixture) env(id string) map[string]any {
	return mapAt(f.function(id), "Environment", "Variables")
}

// events returns a function's events of the given types, by name.
func (f *fixture) events(id string, types ...string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, ev := range mapAt(f.function(id), "Events") {
		if typ, _ := path(ev, "Type").(string); slices.Contains(types, typ) {
			out[name] = mapAt(ev, "Properties")
		}
	}
	return out
}

// parameterDefault returns a parameter's Default, rendered.
func (f *fixture) parameterDefault(name string) (string, bool) {
	d, ok := mapAt(f.tmpl, "Parameters", name)["Default"]
	if !ok {
		return "", false
	}
	return text(d)
}

// logGroupOf returns the logical id of the log group named name.
func (f *fixture) logGroupNamed(name string) string {
	for _, id := range f.ids("AWS::Logs::LogGroup") {
		if s, _ := text(f.props(id)["LogGroupName"]); s == name {
			return id
		}
	}
	return ""
}

// statement is one IAM policy statement, its values rendered by text.
type statement struct {
	where       string
	effect      string
	actions     []string
	notAction   bool
	resources   []string
	notResource bool
	conditions  map[string]map[string][]string // operator → key → values
}

func (s statement) String() string { return s.where }

// condition returns the values of a condition key under any operator with
// the given prefix (e.g. "ArnEquals", "StringEquals").
func (s statement) condition(op, key string) []string {
	for o, keys := range s.conditions {
		if strings.TrimPrefix(o, "ForAllValues:") == op || strings.TrimPrefix(o, "ForAnyValue:") == op {
			if v, ok := keys[key]; ok {
				return v
			}
		}
	}
	return nil
}

// roleStatements returns a role's statements: its inline policies and the
// AWS::IAM::Policy and ManagedPolicy resources attached to it. Problems name
// what cannot be checked: AWS managed policies, values that do not render.
func (f *fixture) roleStatements(role string) ([]statement, []string) {
	var out []statement
	var problems []string
	p := f.props(role)
	if arns := items(p["ManagedPolicyArns"]); len(arns) > 0 {
		problems = append(problems, fmt.Sprintf("%s: got ManagedPolicyArns %v, want inline policies only (a managed policy cannot be checked here)", role, arns))
	}
	for i, pol := range items(p["Policies"]) {
		name, _ := text(path(pol, "PolicyName"))
		st, pr := parseDocument(path(pol, "PolicyDocument"), fmt.Sprintf("%s/Policies[%d:%s]", role, i, name))
		out, problems = append(out, st...), append(problems, pr...)
	}
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy"} {
		for _, id := range f.ids(typ) {
			pp := f.props(id)
			attached := false
			for _, r := range items(pp["Roles"]) {
				if n, ok := ref(r); ok && n == role {
					attached = true
				}
			}
			if n, ok := ref(pp["RoleName"]); ok && n == role {
				attached = true
			}
			if attached {
				st, pr := parseDocument(pp["PolicyDocument"], id)
				out, problems = append(out, st...), append(problems, pr...)
			}
		}
	}
	return out, problems
}

// parseDocument reads the statements of a policy document.
func parseDocument(doc any, where string) ([]statement, []string) {
	var out []statement
	var problems []string
	for i, raw := range items(path(doc, "Statement")) {
		m, ok := raw.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: statement %d is a %T", where, i, raw))
			continue
		}
		sid, _ := m["Sid"].(string)
		s := statement{where: fmt.Sprintf("%s/Statement[%d]", where, i), conditions: map[string]map[string][]string{}}
		if sid != "" {
			s.where += ":" + sid
		}
		s.effect, _ = m["Effect"].(string)
		var bad []any
		if a, ok := m["NotAction"]; ok {
			s.notAction = true
			s.actions, bad = texts(a)
		} else {
			s.actions, bad = texts(m["Action"])
		}
		if r, ok := m["NotResource"]; ok {
			s.notResource = true
			var b []any
			s.resources, b = texts(r)
			bad = append(bad, b...)
		} else {
			var b []any
			s.resources, b = texts(m["Resource"])
			bad = append(bad, b...)
		}
		for op, keys := range mapAt(m, "Condition") {
			s.conditions[op] = map[string][]string{}
			km, _ := keys.(map[string]any)
			for k, v := range km {
				vals, b := texts(v)
				s.conditions[op][k] = vals
				bad = append(bad, b...)
			}
		}
		for _, b := range bad {
			problems = append(problems, fmt.Sprintf("%s: cannot read %v", s.where, b))
		}
		out = append(out, s)
	}
	return out, problems
}

// roleOf returns the logical id of the role a function runs as.
func (f *fixture) roleOf(fn string) (string, error) {
	r := f.function(fn)["Role"]
	if r == nil {
		return "", fmt.Errorf("%s: no Role: SAM would generate one, with managed policies on Resource \"*\" (AWSLambdaBasicExecutionRole, the SQS poller); name an AWS::IAM::Role", fn)
	}
	res, attr, ok := getAtt(r)
	if !ok || attr != "Arn" || f.typeOf(res) != "AWS::IAM::Role" {
		return "", fmt.Errorf("%s: Role %v is not !GetAtt <an AWS::IAM::Role of this template>.Arn", fn, r)
	}
	if f.function(fn)["Policies"] != nil {
		return "", fmt.Errorf("%s: has Policies and a Role: SAM ignores Policies; put them in %s", fn, res)
	}
	return res, nil
}

// sortedKeys returns a set's members in order, for messages.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
