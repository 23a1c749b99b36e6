package iamcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/evalsched/evalsched/internal/localservers"
)

// Stack is template.yaml as deployed under a fake account, region and
// stack name: every intrinsic resolves to a concrete value. A resource
// that names itself (TableName, QueueName, …) gets that name; one that does
// not gets a name like CloudFormation's, <stack>-<LogicalId>-<suffix>.
type Stack struct {
	Name      string // AWS::StackName
	Account   string
	Region    string
	Partition string

	params map[string]string // given values; the rest take their defaults
	tmpl   map[string]any
}

// Fake account and region of the stacks the tests deploy in their heads.
const (
	FakeAccount   = "123456789012"
	FakeRegion    = "us-east-1"
	FakeStackName = "evalsched"
	// generatedSuffix stands for the random tail of a name CloudFormation
	// generates.
	generatedSuffix = "1A2B3C4D5E6F"
)

// LoadTemplate reads the repository's template.yaml (found from the
// working directory up) as the stack FakeStackName in FakeAccount and
// FakeRegion, with params for parameters (the rest take their defaults; a
// parameter with no default an example value).
func LoadTemplate(params map[string]string) (*Stack, error) {
	root, err := localservers.RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	tmpl, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("template.yaml: %w", err)
	}
	return &Stack{Name: FakeStackName, Account: FakeAccount, Region: FakeRegion, Partition: "aws", params: params, tmpl: tmpl}, nil
}

// ------------------------------------------------------------------ YAML

// shortForms maps the YAML tags of intrinsic functions to their long names.
var shortForms = map[string]string{
	"!Ref": "Ref", "!Condition": "Condition",
	"!GetAtt": "Fn::GetAtt", "!Sub": "Fn::Sub", "!Join": "Fn::Join", "!Select": "Fn::Select",
	"!Split": "Fn::Split", "!If": "Fn::If", "!Equals": "Fn::Equals", "!Not": "Fn::Not",
	"!And": "Fn::And", "!Or": "Fn::Or", "!FindInMap": "Fn::FindInMap", "!Base64": "Fn::Base64",
	"!Cidr": "Fn::Cidr", "!GetAZs": "Fn::GetAZs", "!ImportValue": "Fn::ImportValue",
	"!Transform": "Fn::Transform", "!Length": "Fn::Length", "!ToJsonString": "Fn::ToJsonString",
}

// Decode reads a YAML template into plain values (map[string]any, []any,
// string, int, float64, bool, nil). Short-form intrinsics become their long
// form, the one JSON templates use ({"Ref": "X"}, {"Fn::GetAtt": ["X",
// "Arn"]}, …), so readers see one shape whichever form the template uses.
func Decode(data []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	v, err := convert(&doc)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the template is a %T, not a mapping", v)
	}
	return m, nil
}

func convert(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return convert(n.Content[0])
	case yaml.AliasNode:
		return convert(n.Alias)
	}
	fn, intrinsic := shortForms[n.Tag]
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") && !intrinsic {
		return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
	}
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: key %q repeated", n.Content[i].Line, k)
			}
			val, err := convert(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = val
		}
		v = m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			val, err := convert(c)
			if err != nil {
				return nil, err
			}
			l = append(l, val)
		}
		v = l
	case yaml.ScalarNode:
		if intrinsic {
			v = n.Value
		} else if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
	}
	if !intrinsic {
		return v, nil
	}
	if s, ok := v.(string); ok && fn == "Fn::GetAtt" {
		res, attr, _ := strings.Cut(s, ".")
		v = []any{res, attr}
	}
	return map[string]any{fn: v}, nil
}

// ------------------------------------------------------------ resolution

// noValue is AWS::NoValue: the property or list item it stands for is left out.
type noValue struct{}

func (s *Stack) section(name string) map[string]any { m, _ := s.tmpl[name].(map[string]any); return m }

func (s *Stack) resource(id string) (map[string]any, bool) {
	r, ok := s.section("Resources")[id].(map[string]any)
	return r, ok
}

func (s *Stack) typeOf(id string) string {
	r, _ := s.resource(id)
	t, _ := r["Type"].(string)
	return t
}

func (s *Stack) props(id string) map[string]any {
	r, _ := s.resource(id)
	p, _ := r["Properties"].(map[string]any)
	return p
}

// Resolve evaluates every intrinsic under v.
func (s *Stack) Resolve(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := []any{}
		for _, it := range x {
			r, err := s.Resolve(it)
			if err != nil {
				return nil, err
			}
			if _, skip := r.(noValue); !skip {
				out = append(out, r)
			}
		}
		return out, nil
	case map[string]any:
		if fn, arg, ok := intrinsic(x); ok {
			return s.call(fn, arg)
		}
		out := map[string]any{}
		for k, it := range x {
			r, err := s.Resolve(it)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if _, skip := r.(noValue); !skip {
				out[k] = r
			}
		}
		return out, nil
	}
	return v, nil
}

// ResolveString resolves v to a string.
func (s *Stack) ResolveString(v any) (string, error) {
	r, err := s.Resolve(v)
	if err != nil {
		return "", err
	}
	switch x := r.(type) {
	case string:
		return x, nil
	case int, float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("got a %T (%v), want a string", r, r)
}

func intrinsic(m map[string]any) (string, any, bool) {
	if len(m) != 1 {
		return "", nil, false
	}
	for k, a := range m {
		if k == "Ref" || strings.HasPrefix(k, "Fn::") {
			return k, a, true
		}
	}
	return "", nil, false
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (s *Stack) call(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		return s.ref(name)
	case "Fn::GetAtt":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt %v: want [resource, attribute]", arg)
		}
		id, _ := l[0].(string)
		attr, _ := l[1].(string)
		return s.getAtt(id, attr)
	case "Fn::Sub":
		str, vars := "", map[string]any{}
		switch a := arg.(type) {
		case string:
			str = a
		case []any:
			if len(a) != 2 {
				return nil, fmt.Errorf("Fn::Sub %v: want a string and a map", arg)
			}
			str, _ = a[0].(string)
			vars, _ = a[1].(map[string]any)
		}
		var failed error
		out := subVar.ReplaceAllStringFunc(str, func(m string) string {
			name := strings.TrimSpace(m[2 : len(m)-1])
			if strings.HasPrefix(name, "!") {
				return "${" + name[1:] + "}"
			}
			var v any
			var err error
			if val, ok := vars[name]; ok {
				v, err = s.Resolve(val)
			} else if id, attr, dotted := strings.Cut(name, "."); dotted {
				v, err = s.getAtt(id, attr)
			} else {
				v, err = s.ref(name)
			}
			if err == nil {
				var ok bool
				if m, ok = v.(string); !ok {
					err = fmt.Errorf("${%s} is a %T, not a string", name, v)
				}
			}
			if err != nil && failed == nil {
				failed = err
			}
			return m
		})
		return out, failed
	case "Fn::Join":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("Fn::Join %v: want [separator, list]", arg)
		}
		sep, _ := l[0].(string)
		items, err := s.Resolve(l[1])
		if err != nil {
			return nil, err
		}
		parts, err := strs(items)
		if err != nil {
			return nil, fmt.Errorf("Fn::Join: %w", err)
		}
		return strings.Join(parts, sep), nil
	case "Fn::If":
		l, _ := arg.([]any)
		if len(l) != 3 {
			return nil, fmt.Errorf("Fn::If %v: want [condition, then, else]", arg)
		}
		name, _ := l[0].(string)
		ok, err := s.Condition(name)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.Resolve(l[1])
		}
		return s.Resolve(l[2])
	case "Fn::Select":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("Fn::Select %v: want [index, list]", arg)
		}
		idx, err := s.ResolveString(l[0])
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(idx)
		if err != nil {
			return nil, fmt.Errorf("Fn::Select index %q: %w", idx, err)
		}
		items, err := s.Resolve(l[1])
		if err != nil {
			return nil, err
		}
		li, _ := items.([]any)
		if i < 0 || i >= len(li) {
			return nil, fmt.Errorf("Fn::Select %d of %d items", i, len(li))
		}
		return li[i], nil
	case "Fn::Split":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return nil, fmt.Errorf("Fn::Split %v: want [separator, string]", arg)
		}
		sep, _ := l[0].(string)
		str, err := s.ResolveString(l[1])
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(str, sep) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::ToJsonString":
		v, err := s.Resolve(arg)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		return string(b), err
	case "Fn::FindInMap":
		l, _ := arg.([]any)
		if len(l) != 3 {
			return nil, fmt.Errorf("Fn::FindInMap %v: want [map, key, key]", arg)
		}
		var keys [3]string
		for i := range l {
			k, err := s.ResolveString(l[i])
			if err != nil {
				return nil, err
			}
			keys[i] = k
		}
		m, _ := s.section("Mappings")[keys[0]].(map[string]any)
		top, _ := m[keys[1]].(map[string]any)
		v, ok := top[keys[2]]
		if !ok {
			return nil, fmt.Errorf("Fn::FindInMap %v: no such entry", keys)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%s is not resolved by iamcheck: add it to Stack.call", fn)
}

// Condition evaluates one of the template's conditions.
func (s *Stack) Condition(name string) (bool, error) {
	c, ok := s.section("Conditions")[name]
	if !ok {
		return false, fmt.Errorf("no condition %q", name)
	}
	ok, err := s.boolean(c)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	return ok, nil
}

func (s *Stack) boolean(v any) (bool, error) {
	m, _ := v.(map[string]any)
	if name, ok := m["Condition"].(string); ok && len(m) == 1 {
		return s.Condition(name)
	}
	fn, arg, ok := intrinsic(m)
	if !ok {
		return false, fmt.Errorf("%v is not a condition function", v)
	}
	l, _ := arg.([]any)
	switch fn {
	case "Fn::Equals":
		if len(l) != 2 {
			return false, fmt.Errorf("Fn::Equals %v: want two values", arg)
		}
		a, err := s.ResolveString(l[0])
		if err != nil {
			return false, err
		}
		b, err := s.ResolveString(l[1])
		return a == b, err
	case "Fn::Not":
		if len(l) != 1 {
			return false, fmt.Errorf("Fn::Not %v: want one condition", arg)
		}
		ok, err := s.boolean(l[0])
		return !ok, err
	case "Fn::And", "Fn::Or":
		all := fn == "Fn::And"
		for _, c := range l {
			ok, err := s.boolean(c)
			if err != nil {
				return false, err
			}
			if ok != all {
				return ok, nil
			}
		}
		return all, nil
	}
	return false, fmt.Errorf("%s is not a condition function", fn)
}

// Parameter returns a parameter's value: the one given, else its default,
// else an example value. List parameters resolve to lists.
func (s *Stack) Parameter(name string) (any, bool) {
	p, ok := s.section("Parameters")[name].(map[string]any)
	if !ok {
		return nil, false
	}
	typ, _ := p["Type"].(string)
	val, given := s.params[name]
	if !given {
		if d, ok := p["Default"]; ok {
			val = fmt.Sprint(d)
		} else {
			val = "example-" + strings.ToLower(name)
		}
	}
	if strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList" {
		var out []any
		for _, it := range strings.Split(val, ",") {
			out = append(out, it)
		}
		return out, true
	}
	return val, true
}

func (s *Stack) ref(name string) (any, error) {
	switch name {
	case "AWS::StackName":
		return s.Name, nil
	case "AWS::AccountId":
		return s.Account, nil
	case "AWS::Region":
		return s.Region, nil
	case "AWS::Partition":
		return s.Partition, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackId":
		return fmt.Sprintf("arn:%s:cloudformation:%s:%s:stack/%s/00000000-0000-0000-0000-000000000000", s.Partition, s.Region, s.Account, s.Name), nil
	case "AWS::NoValue":
		return noValue{}, nil
	}
	if v, ok := s.Parameter(name); ok {
		return v, nil
	}
	if _, ok := s.resource(name); !ok {
		return nil, fmt.Errorf("!Ref %s: no parameter or resource of that name", name)
	}
	phys, err := s.PhysicalName(name)
	if err != nil {
		return nil, err
	}
	switch s.typeOf(name) {
	case "AWS::SQS::Queue":
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", s.Region, s.Account, phys), nil
	case "AWS::ECS::TaskDefinition", "AWS::SNS::Topic", "AWS::IAM::ManagedPolicy", "AWS::ECS::Service":
		return s.getAtt(name, "Arn")
	}
	return phys, nil
}

// nameProperty is the property that names a resource of each type.
var nameProperty = map[string]string{
	"AWS::DynamoDB::Table":       "TableName",
	"AWS::SQS::Queue":            "QueueName",
	"AWS::IAM::Role":             "RoleName",
	"AWS::IAM::ManagedPolicy":    "ManagedPolicyName",
	"AWS::ECS::Cluster":          "ClusterName",
	"AWS::ECS::TaskDefinition":   "Family",
	"AWS::ECS::Service":          "ServiceName",
	"AWS::Logs::LogGroup":        "LogGroupName",
	"AWS::Serverless::Function":  "FunctionName",
	"AWS::Lambda::Function":      "FunctionName",
	"AWS::Events::Rule":          "Name",
	"AWS::SNS::Topic":            "TopicName",
	"AWS::CloudWatch::Dashboard": "DashboardName",
	"AWS::CloudWatch::Alarm":     "AlarmName",
}

// PhysicalName is the name a resource gets: its name property, else one
// CloudFormation generates.
func (s *Stack) PhysicalName(id string) (string, error) {
	if _, ok := s.resource(id); !ok {
		return "", fmt.Errorf("no resource %s", id)
	}
	if p := nameProperty[s.typeOf(id)]; p != "" {
		if v, ok := s.props(id)[p]; ok {
			name, err := s.ResolveString(v)
			if err != nil {
				return "", fmt.Errorf("%s.%s: %w", id, p, err)
			}
			return name, nil
		}
	}
	return s.Name + "-" + id + "-" + generatedSuffix, nil
}

func (s *Stack) getAtt(id, attr string) (any, error) {
	phys, err := s.PhysicalName(id)
	if err != nil {
		return nil, fmt.Errorf("!GetAtt %s.%s: %w", id, attr, err)
	}
	p, r, a := s.Partition, s.Region, s.Account
	typ := s.typeOf(id)
	switch typ + "." + attr {
	case "AWS::DynamoDB::Table.Arn":
		return fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", p, r, a, phys), nil
	case "AWS::DynamoDB::Table.StreamArn":
		return fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s/stream/1970-01-01T00:00:00.000", p, r, a, phys), nil
	case "AWS::SQS::Queue.Arn":
		return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", p, r, a, phys), nil
	case "AWS::SQS::Queue.QueueName":
		return phys, nil
	case "AWS::SQS::Queue.QueueUrl":
		return s.ref(id)
	case "AWS::IAM::Role.Arn":
		return fmt.Sprintf("arn:%s:iam::%s:role/%s", p, a, phys), nil
	case "AWS::IAM::Role.RoleId":
		return "AROA" + strings.ToUpper(generatedSuffix), nil
	case "AWS::IAM::ManagedPolicy.Arn", "AWS::IAM::ManagedPolicy.PolicyArn":
		return fmt.Sprintf("arn:%s:iam::%s:policy/%s", p, a, phys), nil
	case "AWS::ECS::Cluster.Arn":
		return fmt.Sprintf("arn:%s:ecs:%s:%s:cluster/%s", p, r, a, phys), nil
	case "AWS::ECS::TaskDefinition.Arn", "AWS::ECS::TaskDefinition.TaskDefinitionArn":
		return fmt.Sprintf("arn:%s:ecs:%s:%s:task-definition/%s:1", p, r, a, phys), nil
	case "AWS::ECS::Service.Arn", "AWS::ECS::Service.ServiceArn":
		return fmt.Sprintf("arn:%s:ecs:%s:%s:service/%s", p, r, a, phys), nil
	case "AWS::Logs::LogGroup.Arn":
		return fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s:*", p, r, a, phys), nil
	case "AWS::Serverless::Function.Arn", "AWS::Lambda::Function.Arn":
		return fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", p, r, a, phys), nil
	case "AWS::Events::Rule.Arn":
		return fmt.Sprintf("arn:%s:events:%s:%s:rule/%s", p, r, a, phys), nil
	case "AWS::SNS::Topic.Arn", "AWS::SNS::Topic.TopicArn":
		return fmt.Sprintf("arn:%s:sns:%s:%s:%s", p, r, a, phys), nil
	case "AWS::SNS::Topic.TopicName":
		return phys, nil
	}
	return nil, fmt.Errorf("!GetAtt %s.%s: iamcheck does not know attribute %s of %s: add it to Stack.getAtt", id, attr, attr, typ)
}

// ------------------------------------------------------------ functions

// function returns a serverless function's properties with the Globals
// applied, as SAM deploys them.
func (s *Stack) function(id string) (map[string]any, error) {
	if t := s.typeOf(id); t != "AWS::Serverless::Function" {
		return nil, fmt.Errorf("%s is a %q, not an AWS::Serverless::Function", id, t)
	}
	globals, _ := s.section("Globals")["Function"].(map[string]any)
	m, _ := Merge(globals, s.props(id)).(map[string]any)
	return m, nil
}

// Merge applies SAM's Globals rule: maps merge key by key, lists are
// concatenated (globals first), anything else the resource's value wins.
func Merge(global, local any) any {
	gm, gok := global.(map[string]any)
	lm, lok := local.(map[string]any)
	if gok && lok {
		if _, _, isFn := intrinsic(lm); isFn {
			return local
		}
		out := map[string]any{}
		for k, v := range gm {
			out[k] = v
		}
		for k, v := range lm {
			out[k] = Merge(gm[k], v)
		}
		return out
	}
	gl, gok := global.([]any)
	ll, lok := local.([]any)
	if gok && lok {
		return append(slices.Clone(gl), ll...)
	}
	if local == nil {
		return global
	}
	return local
}

// Environment returns a function's environment variables as the template
// sets them (Globals applied), resolved.
func (s *Stack) Environment(fn string) (map[string]string, error) {
	f, err := s.function(fn)
	if err != nil {
		return nil, err
	}
	vars, _ := f["Environment"].(map[string]any)
	vars, _ = vars["Variables"].(map[string]any)
	out := map[string]string{}
	for k, v := range vars {
		r, err := s.Resolve(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", fn, k, err)
		}
		if _, skip := r.(noValue); skip {
			continue
		}
		if out[k], err = s.ResolveString(r); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", fn, k, err)
		}
	}
	return out, nil
}

// FunctionPolicy returns what a function's role grants: the role it names
// with Role (!GetAtt <role>.Arn), or the role SAM generates from its
// Policies.
func (s *Stack) FunctionPolicy(fn string) (Policy, error) {
	f, err := s.function(fn)
	if err != nil {
		return Policy{}, err
	}
	if r, ok := f["Role"]; ok {
		m, _ := r.(map[string]any)
		l, _ := m["Fn::GetAtt"].([]any)
		if len(l) != 2 || l[1] != "Arn" {
			return Policy{}, fmt.Errorf("%s: Role %v is not !GetAtt <a role of this template>.Arn: its policies cannot be read", fn, r)
		}
		role, _ := l[0].(string)
		return s.RolePolicy(role)
	}
	// SAM generates the role: AWSLambdaBasicExecutionRole plus Policies.
	p := Policy{Name: fn + "Role (generated by SAM)"}
	p.Statements = append(p.Statements, Statement{Where: p.Name + "/AWSLambdaBasicExecutionRole", Effect: "Allow",
		Actions: []string{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}, Resources: []string{"*"}})
	for i, pol := range list(f["Policies"]) {
		st, err := s.samPolicy(pol, fmt.Sprintf("%s/Policies[%d]", fn, i))
		if err != nil {
			return Policy{}, err
		}
		p.Statements = append(p.Statements, st...)
	}
	return p, nil
}

// RolePolicy returns what a role of the template grants: its inline
// policies, the managed policies of the template it lists, and the
// AWS::IAM::Policy (ManagedPolicy, RolePolicy) resources attached to it.
// An AWS managed policy cannot be read here: it is an error.
func (s *Stack) RolePolicy(role string) (Policy, error) {
	if t := s.typeOf(role); t != "AWS::IAM::Role" {
		return Policy{}, fmt.Errorf("%s is a %q, not an AWS::IAM::Role", role, t)
	}
	p := Policy{Name: role}
	props := s.props(role)
	for i, pol := range list(props["Policies"]) {
		pm, _ := pol.(map[string]any)
		name, _ := pm["PolicyName"].(string)
		st, err := s.document(pm["PolicyDocument"], fmt.Sprintf("%s/Policies[%d:%s]", role, i, name))
		if err != nil {
			return Policy{}, err
		}
		p.Statements = append(p.Statements, st...)
	}
	for _, arn := range list(props["ManagedPolicyArns"]) {
		m, _ := arn.(map[string]any)
		id, isRef := m["Ref"].(string)
		if !isRef || s.typeOf(id) != "AWS::IAM::ManagedPolicy" {
			return Policy{}, fmt.Errorf("%s: ManagedPolicyArns %v is not a managed policy of this template: it cannot be checked", role, arn)
		}
		st, err := s.document(s.props(id)["PolicyDocument"], id)
		if err != nil {
			return Policy{}, err
		}
		p.Statements = append(p.Statements, st...)
	}
	ids := make([]string, 0)
	for id := range s.section("Resources") {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		switch s.typeOf(id) {
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy":
		default:
			continue
		}
		if live, err := s.exists(id); err != nil || !live {
			if err != nil {
				return Policy{}, err
			}
			continue
		}
		pp := s.props(id)
		attached := false
		for _, r := range append(list(pp["Roles"]), pp["RoleName"]) {
			if m, ok := r.(map[string]any); ok && m["Ref"] == role {
				attached = true
			}
		}
		if attached {
			st, err := s.document(pp["PolicyDocument"], id)
			if err != nil {
				return Policy{}, err
			}
			p.Statements = append(p.Statements, st...)
		}
	}
	return p, nil
}

// exists reports whether a resource is created: its Condition, if any, holds.
func (s *Stack) exists(id string) (bool, error) {
	r, _ := s.resource(id)
	c, ok := r["Condition"].(string)
	if !ok {
		return true, nil
	}
	return s.Condition(c)
}

// document resolves a policy document of the template and reads it.
func (s *Stack) document(doc any, where string) ([]Statement, error) {
	r, err := s.Resolve(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return statements(r, where)
}

// samPolicy reads one entry of a SAM function's Policies: a policy
// document, or a SAM policy template with its parameters.
func (s *Stack) samPolicy(pol any, where string) ([]Statement, error) {
	m, ok := pol.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: %v: AWS managed policies cannot be checked here; write the statements", where, pol)
	}
	if _, ok := m["Statement"]; ok {
		return s.document(m, where)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("%s: %v is neither a policy document nor one SAM policy template", where, pol)
	}
	for name, args := range m {
		tmpl, ok := samTemplates[name]
		if !ok {
			return nil, fmt.Errorf("%s: SAM policy template %s is not modelled in iamcheck: add it to samTemplates", where, name)
		}
		resolved, err := s.Resolve(args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		params, _ := resolved.(map[string]any)
		var res []string
		for _, r := range tmpl.resources {
			res = append(res, subVar.ReplaceAllStringFunc(r, func(v string) string {
				switch k := v[2 : len(v)-1]; k {
				case "AWS::Partition":
					return s.Partition
				case "AWS::Region":
					return s.Region
				case "AWS::AccountId":
					return s.Account
				default:
					return fmt.Sprint(params[k])
				}
			}))
		}
		return []Statement{{Where: where + ":" + name, Effect: "Allow", Actions: tmpl.actions, Resources: res}}, nil
	}
	return nil, nil
}

// samTemplate is one of SAM's policy templates (policy_templates.json of
// aws/serverless-application-model), by its documented actions.
type samTemplate struct {
	actions   []string
	resources []string
}

var samTemplates = map[string]samTemplate{
	"DynamoDBCrudPolicy": {
		actions: []string{"dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:Query",
			"dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:DescribeTable", "dynamodb:ConditionCheckItem"},
		resources: []string{"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${TableName}",
			"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${TableName}/index/*"},
	},
	"DynamoDBReadPolicy": {
		actions: []string{"dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:DescribeTable"},
		resources: []string{"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${TableName}",
			"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${TableName}/index/*"},
	},
	"DynamoDBWritePolicy": {
		actions:   []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"},
		resources: []string{"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${TableName}"},
	},
	"SQSPollerPolicy": {
		actions: []string{"sqs:ChangeMessageVisibility", "sqs:ChangeMessageVisibilityBatch", "sqs:DeleteMessage",
			"sqs:DeleteMessageBatch", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
		resources: []string{"arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${QueueName}"},
	},
	"SQSSendMessagePolicy": {
		actions:   []string{"sqs:SendMessage*"},
		resources: []string{"arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${QueueName}"},
	},
	"CloudWatchPutMetricPolicy": {
		actions:   []string{"cloudwatch:PutMetricData"},
		resources: []string{"*"},
	},
}

// TaskDefinitionRoles returns the roles (ARNs) the template's task
// definition of a family hands ECS: RunTask passes them.
func (s *Stack) TaskDefinitionRoles(family string) ([]string, error) {
	for id := range s.section("Resources") {
		if s.typeOf(id) != "AWS::ECS::TaskDefinition" {
			continue
		}
		fam, err := s.PhysicalName(id)
		if err != nil {
			return nil, err
		}
		if fam != family {
			continue
		}
		var out []string
		for _, k := range []string{"TaskRoleArn", "ExecutionRoleArn"} {
			if v, ok := s.props(id)[k]; ok {
				arn, err := s.ResolveString(v)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: %w", id, k, err)
				}
				out = append(out, arn)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no AWS::ECS::TaskDefinition of family %q in the template", family)
}
