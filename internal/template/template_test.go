package template

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/gatewaydepth"
	"github.com/evalsched/evalsched/internal/intake"
)

// check is one named check of the template; it returns what is wrong.
type check struct {
	name string
	run  func(*fixture) []string
}

// checks lists every check, one subtest each.
func checks() []check {
	cs := []check{
		{"goformation", checkGoformation},
		{"references", checkReferences},
		{"build", checkBuild},
		{"environment", checkEnvironment},
	}
	for _, fn := range functions {
		cs = append(cs, check{"iam/" + fn.id, checkFunctionIAM(fn.id)})
	}
	return append(cs,
		check{"iam/wildcards", checkWildcards},
		check{"iam/pass-role", checkPassRole},
		check{"iam/sandbox-roles", checkSandboxRoles},
		check{"tables", checkTables},
		check{"scheduler", checkScheduler},
		check{"intake", checkIntake},
		check{"task-events", checkTaskEvents},
		check{"sandbox", checkSandbox},
		check{"parameters-outputs", checkParametersOutputs},
		check{"monitoring", checkMonitoring},
	)
}

func TestTemplate(t *testing.T) {
	f := load(t)
	for _, c := range checks() {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range c.run(f.clone()) {
				t.Error(p)
			}
		})
	}
}

// ------------------------------------------------------------ references

var pseudoParameters = []string{
	"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
	"AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix",
}

// attributes are the Fn::GetAtt attributes of the types the template uses
// (other types are not checked).
var attributes = map[string][]string{
	"AWS::SQS::Queue":           {"Arn", "QueueName", "QueueUrl"},
	"AWS::DynamoDB::Table":      {"Arn", "StreamArn"},
	"AWS::Logs::LogGroup":       {"Arn"},
	"AWS::IAM::Role":            {"Arn", "RoleId"},
	"AWS::ECS::Cluster":         {"Arn"},
	"AWS::ECS::TaskDefinition":  {"TaskDefinitionArn"},
	"AWS::SNS::Topic":           {"TopicArn", "TopicName"},
	"AWS::Serverless::Function": {"Arn"},
	"AWS::Events::Rule":         {"Arn"},
}

func checkReferences(f *fixture) []string {
	var problems []string
	params, resources := mapAt(f.tmpl, "Parameters"), f.resources()
	conditions, mappings := mapAt(f.tmpl, "Conditions"), mapAt(f.tmpl, "Mappings")
	name := func(at, n string) {
		if _, ok := params[n]; ok {
			return
		}
		if _, ok := resources[n]; ok {
			return
		}
		if slices.Contains(pseudoParameters, n) {
			return
		}
		problems = append(problems, fmt.Sprintf("%s: got a reference to %q, want a parameter, a resource or a pseudo-parameter", at, n))
	}
	attr := func(at, res, a string) {
		if _, ok := resources[res]; !ok {
			problems = append(problems, fmt.Sprintf("%s: got Fn::GetAtt of %q, want a resource of the template", at, res))
			return
		}
		if known, ok := attributes[f.typeOf(res)]; ok && !slices.Contains(known, a) {
			problems = append(problems, fmt.Sprintf("%s: got attribute %s of %s (%s), want one of %v", at, a, res, f.typeOf(res), known))
		}
	}
	walk(f.tmpl, "", func(at string, v any) {
		fn, arg, ok := intrinsic(v)
		if !ok {
			return
		}
		switch fn {
		case "Ref":
			s, _ := arg.(string)
			name(at, s)
		case "Fn::GetAtt":
			res, a, ok := getAtt(v)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: malformed Fn::GetAtt %v", at, arg))
				return
			}
			attr(at, res, a)
		case "Fn::Sub":
			s, vars, ok := subArgs(arg)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: malformed Fn::Sub %v", at, arg))
				return
			}
			for _, n := range subVars(s) {
				if _, local := vars[n]; local {
					continue
				}
				if res, a, dotted := strings.Cut(n, "."); dotted {
					attr(at, res, a)
				} else {
					name(at, n)
				}
			}
		case "Fn::If":
			l, _ := arg.([]any)
			c, _ := firstOf(l).(string)
			if _, ok := conditions[c]; !ok || len(l) != 3 {
				problems = append(problems, fmt.Sprintf("%s: got Fn::If on %q (%d arguments), want a condition of the template and 3 arguments", at, c, len(l)))
			}
		case "Fn::FindInMap":
			l, _ := arg.([]any)
			m, _ := firstOf(l).(string)
			if _, ok := mappings[m]; !ok {
				problems = append(problems, fmt.Sprintf("%s: got Fn::FindInMap of %q, want a mapping of the template", at, m))
			}
		}
	})
	for _, id := range sortedKeys(resources) {
		r := mapAt(resources, id)
		if c, ok := r["Condition"].(string); ok {
			if _, known := conditions[c]; !known {
				problems = append(problems, fmt.Sprintf("/Resources/%s: got Condition %q, want a condition of the template", id, c))
			}
		}
		for _, d := range items(r["DependsOn"]) {
			if s, _ := d.(string); resources[s] == nil {
				problems = append(problems, fmt.Sprintf("/Resources/%s: got DependsOn %v, want a resource of the template", id, d))
			}
		}
	}
	return problems
}

func firstOf(l []any) any {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}

// ----------------------------------------------------------------- build

// makeTargets reads a Makefile's rules: target → recipe lines, with
// backslash continuations joined.
func makeTargets(mk string) map[string][]string {
	out := map[string][]string{}
	rule := regexp.MustCompile(`^([A-Za-z0-9_.%/-]+(?:[ \t]+[A-Za-z0-9_.%/-]+)*)[ \t]*:([^=]|$)`)
	var current []string
	lines := strings.Split(strings.ReplaceAll(mk, "\\\n", " "), "\n")
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "\t"):
			for _, t := range current {
				out[t] = append(out[t], strings.TrimSpace(l))
			}
		case rule.MatchString(l):
			current = strings.Fields(rule.FindStringSubmatch(l)[1])
			for _, t := range current {
				if _, ok := out[t]; !ok {
					out[t] = nil
				}
			}
		case strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
		default:
			current = nil
		}
	}
	return out
}

// goArch is Lambda's architecture name in GOARCH terms.
var goArch = map[string]string{"arm64": "arm64", "x86_64": "amd64"}

func checkBuild(f *fixture) []string {
	var problems []string
	targets := makeTargets(f.makefile)
	ids := f.ids("AWS::Serverless::Function")
	for _, fn := range functions {
		if !slices.Contains(ids, fn.id) {
			problems = append(problems, fmt.Sprintf("the functions table names %s, which template.yaml does not declare", fn.id))
		}
	}
	for _, id := range ids {
		spec, ok := functionSpec(id)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: not in the functions table of spec_test.go (what it calls, where it is built from)", id))
			continue
		}
		fn := f.function(id)
		if got, _ := text(fn["Runtime"]); got != "provided.al2023" {
			problems = append(problems, fmt.Sprintf("%s: got Runtime %q, want provided.al2023", id, got))
		}
		handler, _ := text(fn["Handler"])
		if handler != "bootstrap" {
			problems = append(problems, fmt.Sprintf("%s: got Handler %q, want bootstrap", id, handler))
		}
		archs, _ := texts(fn["Architectures"])
		if len(archs) != 1 || goArch[archs[0]] == "" {
			problems = append(problems, fmt.Sprintf("%s: got Architectures %v, want one of arm64, x86_64", id, archs))
			continue
		}
		if got, _ := text(fn["CodeUri"]); got != "." && got != "./" {
			problems = append(problems, fmt.Sprintf("%s: got CodeUri %q, want . (the Makefile is at the repository root)", id, got))
		}
		if got := path(f.resources()[id], "Metadata", "BuildMethod"); got != "makefile" {
			problems = append(problems, fmt.Sprintf("%s: got Metadata.BuildMethod %v, want makefile", id, got))
		}
		target := "build-" + id
		recipe, ok := targets[target]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: the Makefile has no target %s (sam build runs it)", id, target))
			continue
		}
		var builds []string
		for _, l := range recipe {
			if regexp.MustCompile(`(^|\s)(go|\$\(GO\)|\$\{GO\})\s+build\s`).MatchString(l) {
				builds = append(builds, l)
			}
		}
		if len(builds) != 1 {
			problems = append(problems, fmt.Sprintf("%s: got %d go build lines in %s, want 1", id, len(builds), target))
			continue
		}
		problems = append(problems, checkBuildLine(id, builds[0], goArch[archs[0]], handler, spec.dir)...)
		if b, err := os.ReadFile(filepath.Join(f.root, "functions", spec.dir, "main.go")); err != nil || !strings.Contains(string(b), "package main") {
			problems = append(problems, fmt.Sprintf("%s: functions/%s/main.go is not a main package (%v)", id, spec.dir, err))
		}
	}
	return problems
}

func checkBuildLine(id, line, arch, handler, dir string) []string {
	var problems []string
	fields := strings.Fields(line)
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch} {
		if !slices.Contains(fields, want) {
			problems = append(problems, fmt.Sprintf("%s: the go build line has no %s: %q", id, want, line))
		}
	}
	var tags, out string
	for i, fl := range fields {
		next := ""
		if i+1 < len(fields) {
			next = fields[i+1]
		}
		switch {
		case fl == "-tags" || fl == "--tags":
			tags = next
		case strings.HasPrefix(fl, "-tags="):
			tags = strings.TrimPrefix(fl, "-tags=")
		case fl == "-o":
			out = next
		}
	}
	if !slices.Contains(strings.Split(strings.Trim(tags, `'"`), ","), "lambda.norpc") {
		problems = append(problems, fmt.Sprintf("%s: got -tags %q, want lambda.norpc among them: %q", id, tags, line))
	}
	if out != "$(ARTIFACTS_DIR)/"+handler && out != "${ARTIFACTS_DIR}/"+handler {
		problems = append(problems, fmt.Sprintf("%s: got -o %q, want $(ARTIFACTS_DIR)/%s (the handler)", id, out, handler))
	}
	if last := fields[len(fields)-1]; last != "./functions/"+dir {
		problems = append(problems, fmt.Sprintf("%s: builds %q, want ./functions/%s", id, last, dir))
	}
	return problems
}

// ----------------------------------------------------------- environment

// configVariables returns the variables internal/config reads.
func configVariables() map[string]bool {
	seen := map[string]bool{}
	_, _ = config.Load(func(n string) string { seen[n] = true; return "" })
	return seen
}

// placeholders stand for parameters without a default when a value must be
// computed.
var placeholders = map[string]string{
	"AWS::AccountId": "123456789012", "AWS::Partition": "aws", "AWS::Region": "us-east-1",
	"AWS::StackName": "evalsched", "AWS::URLSuffix": "amazonaws.com",
}

// evaluate computes a value as deployed with the parameters' defaults:
// resources become "<id>", their attributes "<id>.<attr>".
func (f *fixture) evaluate(v any) (string, bool) {
	// !If [condition, a, b], the condition taken at the defaults.
	if m, ok := v.(map[string]any); ok {
		if l, ok := m["Fn::If"].([]any); ok && len(l) == 3 {
			name, _ := l[0].(string)
			on, err := f.condition(name, f.parameterValues(nil))
			if err != nil {
				return "", false
			}
			return f.evaluate(l[map[bool]int{true: 1, false: 2}[on]])
		}
	}
	s, ok := text(v)
	if !ok {
		return "", false
	}
	params := mapAt(f.tmpl, "Parameters")
	return subVar.ReplaceAllStringFunc(s, func(m string) string {
		n := m[2 : len(m)-1]
		if strings.HasPrefix(n, "!") {
			return "${" + n[1:] + "}"
		}
		if p, ok := placeholders[n]; ok {
			return p
		}
		if _, ok := params[n]; ok {
			if d, ok := f.parameterDefault(n); ok {
				return d
			}
			return "example-" + strings.ToLower(n)
		}
		return n
	}), true
}

func checkEnvironment(f *fixture) []string {
	var problems []string
	known := configVariables()
	prefixes := map[string]bool{}
	for _, id := range f.ids("AWS::Serverless::Function") {
		env := f.env(id)
		for _, n := range sortedKeys(env) {
			if strings.HasPrefix(n, "EVALSCHED_") && !known[n] {
				problems = append(problems, fmt.Sprintf("%s: sets %s, which internal/config does not read", id, n))
			}
		}
		spec, _ := functionSpec(id)
		for _, n := range spec.env {
			if _, ok := env[n]; !ok {
				problems = append(problems, fmt.Sprintf("%s: got no %s, want it set (the function needs it)", id, n))
			}
		}
		p, _ := text(env["EVALSCHED_TABLE_PREFIX"])
		prefixes[p] = true

		// The environment, as deployed with the defaults, loads.
		values := map[string]string{}
		for n, v := range env {
			s, ok := f.evaluate(v)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s = %v cannot be computed", id, n, v))
			}
			values[n] = s
		}
		cfg, err := config.Load(func(n string) string { return values[n] })
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: with the parameters' defaults, config.Load fails: %v", id, err))
			continue
		}
		switch id {
		case "SchedulerFunction":
			if err := cfg.Require("EVALSCHED_CLUSTER", "EVALSCHED_SUBNETS", "EVALSCHED_DEFAULT_TASK_DEFINITION"); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", id, err))
			}
			lc := ecslauncher.Config{Cluster: cfg.Cluster, Subnets: cfg.Subnets, SecurityGroups: cfg.SecurityGroups,
				Capacity: cfg.Capacity, ContainerName: cfg.ContainerName, Rate: cfg.LaunchRate, Burst: cfg.LaunchBurst}
			if err := lc.Validate(); err != nil {
				problems = append(problems, fmt.Sprintf("%s: with the parameters' defaults: %v", id, err))
			}
			if err := (gatewaydepth.Config{Period: cfg.MetricPeriod}).Validate(); err != nil {
				problems = append(problems, fmt.Sprintf("%s: with the parameters' defaults: %v", id, err))
			}
		case "IntakeFunction":
			if _, err := intake.ConfigFrom(cfg); err != nil {
				problems = append(problems, fmt.Sprintf("%s: with the parameters' defaults: %v", id, err))
			}
		}
	}
	if len(prefixes) != 1 {
		problems = append(problems, fmt.Sprintf("got table prefixes %v, want one for all functions", sortedKeys(prefixes)))
	}
	// The settings that name resources name the template's.
	sched := f.env("SchedulerFunction")
	clusters := f.sandboxIDs("AWS::ECS::Cluster")
	if c, ok := ref(sched["EVALSCHED_CLUSTER"]); !ok || !slices.Contains(clusters, c) {
		problems = append(problems, fmt.Sprintf("SchedulerFunction: got EVALSCHED_CLUSTER %v, want !Ref of the sandbox cluster %v", sched["EVALSCHED_CLUSTER"], clusters))
	}
	for _, id := range f.ids("AWS::Serverless::Function") {
		env := f.env(id)
		if v, ok := env["EVALSCHED_CLUSTER"]; ok && !equalText(v, sched["EVALSCHED_CLUSTER"]) {
			problems = append(problems, fmt.Sprintf("%s: got EVALSCHED_CLUSTER %v, want the scheduler's %v", id, v, sched["EVALSCHED_CLUSTER"]))
		}
		if v, ok := env["EVALSCHED_CONTAINER_NAME"]; ok && !equalText(v, sched["EVALSCHED_CONTAINER_NAME"]) {
			problems = append(problems, fmt.Sprintf("%s: got EVALSCHED_CONTAINER_NAME %v, want the scheduler's %v", id, v, sched["EVALSCHED_CONTAINER_NAME"]))
		}
	}
	return problems
}

func equalText(a, b any) bool {
	ta, ok1 := text(a)
	tb, ok2 := text(b)
	return ok1 && ok2 && ta == tb
}

// ------------------------------------------------------------------- IAM

// platform returns the actions a function needs that its code does not
// call: Lambda's own, made with the function's role.
func (f *fixture) platform(id string) map[string]string {
	out := map[string]string{
		"logs:CreateLogStream": "Lambda writes the function's logs (and the EMF metrics in them)",
		"logs:PutLogEvents":    "Lambda writes the function's logs (and the EMF metrics in them)",
	}
	if len(f.events(id, "SQS")) > 0 {
		for _, a := range []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"} {
			out[a] = "the SQS event source mapping polls with the function's role"
		}
	}
	return out
}

// scope is what a function may do an action on.
type scope struct {
	resources []string            // the only resources allowed
	all       bool                // every one of them must be granted
	condition map[string][]string // condition key → values a statement must carry
}

const arnPrefix = "arn:${AWS::Partition}:ecs:${AWS::Region}:${AWS::AccountId}:"

// scopeOf returns the scope of an action for a function, or an error when
// the test has no rule for it.
func (f *fixture) scopeOf(id string, spec function, action string) (scope, error) {
	cluster := firstString(f.sandboxIDs("AWS::ECS::Cluster"))
	onCluster := map[string][]string{"ecs:cluster": {"${" + cluster + ".Arn}"}}
	switch {
	case strings.HasPrefix(action, "dynamodb:"):
		arns, err := f.tableARNs(spec.tables)
		return scope{resources: arns}, err // every table: checked over all dynamodb actions
	case action == "ecs:RunTask":
		var s scope
		for _, td := range f.sandboxIDs("AWS::ECS::TaskDefinition") {
			fam, _ := text(f.props(td)["Family"])
			s.resources = append(s.resources, arnPrefix+"task-definition/"+fam+":*")
		}
		s.all, s.condition = true, onCluster
		return s, nil
	case action == "ecs:DescribeTasks" || action == "ecs:StopTask":
		return scope{resources: []string{arnPrefix + "task/${" + cluster + "}/*"}, all: true, condition: onCluster}, nil
	case action == "ecs:ListTasks":
		// Listing a cluster's tasks is authorized on "*" (the action's only
		// resource type is container-instance); the condition scopes it.
		return scope{resources: []string{"*"}, all: true, condition: onCluster}, nil
	case action == "cloudwatch:GetMetricData":
		return scope{resources: []string{"*"}, all: true}, nil // no resource type exists
	case action == "iam:PassRole":
		return scope{resources: f.sandboxRoleARNs(), all: true,
			condition: map[string][]string{"iam:PassedToService": {"ecs-tasks.amazonaws.com"}}}, nil
	case action == "sqs:SendMessage":
		var s scope
		for _, q := range f.eventQueues(id) {
			if dlq, _, ok := getAtt(path(f.props(q), "RedrivePolicy", "deadLetterTargetArn")); ok {
				s.resources = append(s.resources, "${"+dlq+".Arn}")
			}
		}
		s.all = true
		return s, nil
	case action == "sqs:ReceiveMessage" || action == "sqs:DeleteMessage" || action == "sqs:GetQueueAttributes":
		var s scope
		for _, q := range f.eventQueues(id) {
			s.resources = append(s.resources, "${"+q+".Arn}")
		}
		s.all = true
		return s, nil
	case strings.HasPrefix(action, "logs:"):
		name, _ := text(f.function(id)["FunctionName"])
		lg := f.logGroupNamed("/aws/lambda/" + name)
		if lg == "" {
			return scope{}, fmt.Errorf("%s: no AWS::Logs::LogGroup named /aws/lambda/%s (set FunctionName and declare its log group, so the role can name it)", id, name)
		}
		return scope{resources: []string{"${" + lg + ".Arn}"}, all: true}, nil
	}
	return scope{}, fmt.Errorf("the test has no scope rule for %s: add one to scopeOf", action)
}

func firstString(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// eventQueues returns the queues of a function's SQS events.
func (f *fixture) eventQueues(id string) []string {
	var out []string
	for _, name := range sortedKeys(f.events(id, "SQS")) {
		if q, _, ok := getAtt(f.events(id, "SQS")[name]["Queue"]); ok {
			out = append(out, q)
		}
	}
	return out
}

// sandboxRoleARNs returns the roles the task definitions pass to ECS.
func (f *fixture) sandboxRoleARNs() []string {
	var out []string
	for _, td := range f.sandboxIDs("AWS::ECS::TaskDefinition") {
		for _, k := range []string{"TaskRoleArn", "ExecutionRoleArn"} {
			if s, ok := text(f.props(td)[k]); ok && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// tableARNs renders a function's tables (spec roles) as the ARNs the
// template grants: "${StateTable.Arn}", "${StateTable.Arn}/index/active", …
func (f *fixture) tableARNs(roles []string) ([]string, error) {
	prefix, _ := text(f.env("SchedulerFunction")["EVALSCHED_TABLE_PREFIX"])
	names := dynamostore.DefaultTables(prefix)
	byRole := map[string]string{"state": names.State, "models": names.Models, "pins": names.Pins}
	defs := map[string]*dynamodb.CreateTableInput{}
	for _, d := range names.Definitions() {
		defs[*d.TableName] = d
	}
	var out []string
	for _, r := range roles {
		table, index, _ := strings.Cut(r, "/index/")
		name, ok := byRole[table]
		if !ok {
			return nil, fmt.Errorf("the functions table names %q: want state, models or pins", r)
		}
		id := f.tableNamed(name)
		if id == "" {
			return nil, fmt.Errorf("no AWS::DynamoDB::Table named %q", name)
		}
		switch {
		case !strings.Contains(r, "/index/"):
			out = append(out, "${"+id+".Arn}")
		case index == "*":
			for _, g := range defs[name].GlobalSecondaryIndexes {
				out = append(out, "${"+id+".Arn}/index/"+*g.IndexName)
			}
		default:
			out = append(out, "${"+id+".Arn}/index/"+index)
		}
	}
	return out, nil
}

// tableNamed returns the logical id of the table whose TableName renders as name.
func (f *fixture) tableNamed(name string) string {
	for _, id := range f.ids("AWS::DynamoDB::Table") {
		if s, _ := text(f.props(id)["TableName"]); s == name {
			return id
		}
	}
	return ""
}

func checkFunctionIAM(id string) func(*fixture) []string {
	return func(f *fixture) []string {
		spec, ok := functionSpec(id)
		if !ok {
			return []string{id + ": not in the functions table"}
		}
		role, err := f.roleOf(id)
		if err != nil {
			return []string{err.Error()}
		}
		var problems []string
		derived := spec.derived()
		for _, a := range sortedKeys(spec.extra) {
			if from, ok := derived[a]; ok {
				problems = append(problems, fmt.Sprintf("%s: the table lists %s as extra, but %v derive it already: remove the exception", id, a, from))
			}
		}
		// What the code calls is enforced by running it under the role
		// (internal/iamcheck): here the platform's needs, and nothing
		// beyond what the code can call at all.
		possible := spec.possible()
		platform := f.platform(id)
		for a, why := range platform {
			possible[a] = why
		}
		statements, pr := f.roleStatements(role)
		problems = append(problems, pr...)
		granted := map[string][]statement{}
		for _, s := range statements {
			if s.effect != "Allow" {
				continue
			}
			if s.notAction || s.notResource {
				problems = append(problems, fmt.Sprintf("%s: NotAction/NotResource grants whatever is not listed: name the actions and resources", s))
				continue
			}
			for _, a := range s.actions {
				granted[a] = append(granted[a], s)
			}
		}
		for _, a := range sortedKeys(platform) {
			if len(granted[a]) == 0 {
				problems = append(problems, fmt.Sprintf("%s (%s): missing %s, which it needs: %s", id, role, a, platform[a]))
			}
		}
		var tableUnion []string
		for _, a := range sortedKeys(granted) {
			if _, ok := possible[a]; !ok {
				problems = append(problems, fmt.Sprintf("%s: grants %s, want it not granted (the function's code makes no such call)", granted[a][0], a))
				continue
			}
			sc, err := f.scopeOf(id, spec, a)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			var union []string
			for _, s := range granted[a] {
				for _, r := range s.resources {
					if !slices.Contains(sc.resources, r) {
						problems = append(problems, fmt.Sprintf("%s: got %s on %q, want it only on %v", s, a, r, sc.resources))
					}
					union = append(union, r)
				}
				for k, vals := range sc.condition {
					got := s.condition("ArnEquals", k)
					if got == nil {
						got = s.condition("StringEquals", k)
					}
					if got == nil {
						got = s.condition("ArnLike", k)
					}
					if !slices.Equal(got, vals) {
						problems = append(problems, fmt.Sprintf("%s: got condition %s = %v on %s, want %v", s, k, got, a, vals))
					}
				}
			}
			if strings.HasPrefix(a, "dynamodb:") {
				tableUnion = append(tableUnion, union...)
			} else if sc.all {
				for _, r := range sc.resources {
					if !slices.Contains(union, r) {
						problems = append(problems, fmt.Sprintf("%s: missing %s on %q", id, a, r))
					}
				}
			}
		}
		if tables, err := f.tableARNs(spec.tables); err != nil {
			problems = append(problems, err.Error())
		} else if len(tables) > 0 {
			for _, t := range tables {
				if !slices.Contains(tableUnion, t) {
					problems = append(problems, fmt.Sprintf("%s: grants nothing on %q, want the DynamoDB calls it makes there", id, t))
				}
			}
		}
		return problems
	}
}

// allRoleStatements returns the statements of every role of the template.
func (f *fixture) allRoleStatements() ([]statement, []string) {
	var out []statement
	var problems []string
	for _, role := range f.ids("AWS::IAM::Role") {
		st, pr := f.roleStatements(role)
		out, problems = append(out, st...), append(problems, pr...)
	}
	return out, problems
}

// starOK are the actions that take Resource "*" because they have no
// resource type (or, for ListTasks, none that names a cluster's tasks).
var starOK = map[string]string{
	"cloudwatch:GetMetricData":  "no resource type; reads metrics only",
	"ecs:ListTasks":             "scoped by the ecs:cluster condition",
	"ecr:GetAuthorizationToken": "no resource type; a registry login, the pulls are scoped",
	"cloudwatch:PutMetricData":  "no resource type; the bridge's, held to the gateway namespace (checkBridge)",
}

// resourceTypes are ARN path words a wildcard must not follow directly
// ("table/*" is every table).
var resourceTypes = []string{"table", "index", "task", "task-definition", "cluster", "container-instance",
	"repository", "log-group", "log-stream", "role", "function", "queue", "topic", "stream"}

func checkWildcards(f *fixture) []string {
	statements, problems := f.allRoleStatements()
	for _, s := range statements {
		if s.effect != "Allow" {
			continue
		}
		for _, a := range s.actions {
			if strings.Contains(a, "*") {
				problems = append(problems, fmt.Sprintf("%s: got action %q, want actions named one by one", s, a))
			}
		}
		for _, r := range s.resources {
			if r == "*" {
				for _, a := range s.actions {
					if _, ok := starOK[a]; !ok {
						problems = append(problems, fmt.Sprintf("%s: got %s on Resource \"*\", want the resources named (only %v may take \"*\")", s, a, sortedKeys(starOK)))
					}
				}
				continue
			}
			i := strings.Index(r, "*")
			if i < 0 {
				continue
			}
			seg := strings.TrimRight(r[:i], "/:")
			seg = seg[strings.LastIndexAny(seg, "/:")+1:]
			if i != len(r)-1 || slices.Contains(resourceTypes, seg) || seg == "" {
				problems = append(problems, fmt.Sprintf("%s: got resource %q, want a named resource (a wildcard only after a name, as in task/<cluster>/*)", s, r))
			}
		}
	}
	return problems
}

func checkPassRole(f *fixture) []string {
	statements, problems := f.allRoleStatements()
	roles := f.sandboxRoleARNs()
	if len(roles) != 2 {
		problems = append(problems, fmt.Sprintf("got sandbox roles %v, want a task role and an execution role", roles))
	}
	for _, s := range statements {
		if s.effect != "Allow" || !slices.Contains(s.actions, "iam:PassRole") {
			continue
		}
		for _, r := range s.resources {
			if !slices.Contains(roles, r) {
				problems = append(problems, fmt.Sprintf("%s: got iam:PassRole on %q, want only the sandbox roles %v", s, r, roles))
			}
		}
		if got := s.condition("StringEquals", "iam:PassedToService"); !slices.Equal(got, []string{"ecs-tasks.amazonaws.com"}) {
			problems = append(problems, fmt.Sprintf("%s: got iam:PassedToService %v, want [ecs-tasks.amazonaws.com]", s, got))
		}
	}
	return problems
}

// sendsResultOnly reports whether a statement of the sandbox task role
// allows exactly sqs:SendMessage on exactly the queues the results
// function reads (sandboxkit.SQSReporter): the sandbox may state its
// verdict, and the results function checks it against the job's attempt.
func (f *fixture) sendsResultOnly(s statement) bool {
	if s.notAction || s.notResource || !slices.Equal(s.actions, []string{"sqs:SendMessage"}) || len(s.resources) == 0 {
		return false
	}
	for _, r := range s.resources {
		ok := false
		for _, q := range f.eventQueues("ResultsFunction") {
			ok = ok || r == "${"+q+".Arn}"
		}
		if !ok {
			return false
		}
	}
	return true
}

// forbidden are the services the sandbox's own code must not reach: it
// runs untrusted model output (save sendsResultOnly).
var forbidden = []string{"dynamodb", "sqs", "ecs", "iam", "lambda"}

func checkSandboxRoles(f *fixture) []string {
	var problems []string
	for _, td := range f.sandboxIDs("AWS::ECS::TaskDefinition") {
		p := f.props(td)
		task, _, ok1 := getAtt(p["TaskRoleArn"])
		exec, _, ok2 := getAtt(p["ExecutionRoleArn"])
		if !ok1 || !ok2 || task == exec {
			problems = append(problems, fmt.Sprintf("%s: got TaskRoleArn %v and ExecutionRoleArn %v, want two roles of the template", td, p["TaskRoleArn"], p["ExecutionRoleArn"]))
			continue
		}
		for _, fn := range f.ids("AWS::Serverless::Function") {
			if r, _ := f.roleOf(fn); r == task || r == exec {
				problems = append(problems, fmt.Sprintf("%s: the sandbox's role %s is also %s's", td, r, fn))
			}
		}
		statements, pr := f.roleStatements(task)
		problems = append(problems, pr...)
		for _, s := range statements {
			if s.effect != "Allow" {
				continue
			}
			if f.sendsResultOnly(s) {
				continue // the one exception: its verdict to the results queue
			}
			for _, a := range s.actions {
				service, _, _ := strings.Cut(a, ":")
				if a == "*" || slices.Contains(forbidden, strings.ToLower(service)) || s.notAction {
					problems = append(problems, fmt.Sprintf("%s: the sandbox task role gets %s, want nothing of %v (the sandbox runs untrusted code)", s, a, forbidden))
				}
			}
		}
		statements, pr = f.roleStatements(exec)
		problems = append(problems, pr...)
		for _, s := range statements {
			for _, a := range s.actions {
				if service, _, _ := strings.Cut(a, ":"); s.effect == "Allow" && service != "ecr" && service != "logs" {
					problems = append(problems, fmt.Sprintf("%s: the execution role gets %s, want only ecr (image pull) and logs", s, a))
				}
			}
		}
		for _, trust := range []string{task, exec} {
			principals, _ := texts(path(firstOf(items(path(f.props(trust), "AssumeRolePolicyDocument", "Statement"))), "Principal", "Service"))
			if !slices.Equal(principals, []string{"ecs-tasks.amazonaws.com"}) {
				problems = append(problems, fmt.Sprintf("%s: got trusted services %v, want [ecs-tasks.amazonaws.com]", trust, principals))
			}
		}
	}
	return problems
}
