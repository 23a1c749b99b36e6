package template

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/awslabs/goformation/v7"
	cfndynamodb "github.com/awslabs/goformation/v7/cloudformation/dynamodb"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// ------------------------------------------------------------ goformation

// checkGoformation parses the template with goformation, which knows
// CloudFormation's and SAM's types and rejects unknown properties of most,
// and compares its view with the walk's.
func checkGoformation(f *fixture) []string {
	// goformation resolves !Ref to a parameter's default, a number for a
	// Number parameter, which an environment variable (a string) rejects:
	// give it the variables as text.
	tmpl := deepCopy(f.tmpl).(map[string]any)
	envs := []map[string]any{mapAt(tmpl, "Globals", "Function", "Environment", "Variables")}
	for _, id := range f.ids("AWS::Serverless::Function") {
		envs = append(envs, mapAt(tmpl, "Resources", id, "Properties", "Environment", "Variables"))
	}
	for _, env := range envs {
		for k, v := range env {
			env[k] = rendered(v)
		}
	}
	data, err := json.Marshal(tmpl)
	if err != nil {
		return []string{err.Error()}
	}
	tm, err := goformation.ParseJSONWithOptions(data, nil)
	if err != nil {
		return []string{fmt.Sprintf("goformation: %v", err)}
	}
	var problems []string
	for _, id := range sortedKeys(f.resources()) {
		r, ok := tm.Resources[id]
		if !ok {
			problems = append(problems, fmt.Sprintf("goformation: no resource %s", id))
			continue
		}
		if got, want := r.AWSCloudFormationType(), f.typeOf(id); got != want {
			problems = append(problems, fmt.Sprintf("goformation: %s: got type %s, want %s", id, got, want))
		}
	}
	for id, fn := range tm.GetAllServerlessFunctionResources() {
		walked := f.props(id)
		for name, ev := range fn.Events {
			if want := path(walked, "Events", name, "Type"); ev.Type != want {
				problems = append(problems, fmt.Sprintf("goformation: %s event %s: got type %s, want %v", id, name, ev.Type, want))
			}
		}
		for key, got := range map[string]*int{"Timeout": fn.Timeout, "MemorySize": fn.MemorySize,
			"ReservedConcurrentExecutions": fn.ReservedConcurrentExecutions} {
			v := walked[key]
			if p, isRef := ref(v); isRef { // goformation resolves a parameter to its default
				v = mapAt(f.tmpl, "Parameters", p)["Default"]
			}
			want, ok := number(v)
			if ok != (got != nil) || (got != nil && float64(*got) != want) {
				problems = append(problems, fmt.Sprintf("goformation: %s: got %s %v, the walk %v", id, key, deref(got), walked[key]))
			}
		}
	}
	return problems
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// rendered replaces every intrinsic under v by its text (or "?"), for
// decoding into goformation's typed structs.
func rendered(v any) any {
	return copyTree(v, func(v any) (any, bool) {
		if _, _, ok := intrinsic(v); !ok {
			return nil, false
		}
		if s, ok := text(v); ok {
			return s, true
		}
		return "?", true
	})
}

// ---------------------------------------------------------------- tables

func checkTables(f *fixture) []string {
	var problems []string
	prefix, _ := text(f.env("SchedulerFunction")["EVALSCHED_TABLE_PREFIX"])
	defs := dynamostore.DefaultTables(prefix).Definitions()
	seen := map[string]bool{}
	for _, def := range defs {
		name := aws.ToString(def.TableName)
		id := f.tableNamed(name)
		if id == "" {
			problems = append(problems, fmt.Sprintf("got no AWS::DynamoDB::Table named %q, want dynamostore's table (prefix %q)", name, prefix))
			continue
		}
		seen[id] = true
		data, err := json.Marshal(rendered(f.resources()[id]))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		var tb cfndynamodb.Table
		if err := json.Unmarshal(data, &tb); err != nil {
			problems = append(problems, fmt.Sprintf("%s: goformation: %v", id, err))
			continue
		}
		problems = append(problems, compareTable(id, &tb, def)...)
	}
	for _, id := range f.ids("AWS::DynamoDB::Table") {
		if !seen[id] {
			problems = append(problems, fmt.Sprintf("%s: a table dynamostore does not define", id))
		}
	}
	return problems
}

func compareTable(id string, tb *cfndynamodb.Table, def *dynamodb.CreateTableInput) []string {
	var problems []string
	bad := func(what string, got, want any) {
		problems = append(problems, fmt.Sprintf("%s: %s: got %v, want %v", id, what, got, want))
	}
	if got := aws.ToString(tb.BillingMode); got != string(types.BillingModePayPerRequest) || def.BillingMode != types.BillingModePayPerRequest {
		bad("BillingMode", got, types.BillingModePayPerRequest)
	}
	if tb.ProvisionedThroughput != nil {
		bad("ProvisionedThroughput", *tb.ProvisionedThroughput, "none (on demand)")
	}
	if p := tb.PointInTimeRecoverySpecification; p == nil || !aws.ToBool(p.PointInTimeRecoveryEnabled) {
		bad("PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled", p, true)
	}
	// Ended jobs expire on the state table's TTL attribute, the one the
	// store writes; the operator tables keep their items.
	wantTTL, gotTTL := "", ""
	if strings.HasSuffix(aws.ToString(def.TableName), "state") {
		wantTTL = dynamostore.TTLAttribute
	}
	if t := tb.TimeToLiveSpecification; t != nil && t.Enabled {
		gotTTL = aws.ToString(t.AttributeName)
	}
	if gotTTL != wantTTL {
		bad("TimeToLiveSpecification (enabled) AttributeName", gotTTL, wantTTL)
	}
	gotAttrs, wantAttrs := map[string]string{}, map[string]string{}
	for _, a := range tb.AttributeDefinitions {
		gotAttrs[a.AttributeName] = a.AttributeType
	}
	for _, a := range def.AttributeDefinitions {
		wantAttrs[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	if !maps.Equal(gotAttrs, wantAttrs) {
		bad("AttributeDefinitions", gotAttrs, wantAttrs)
	}
	if got, want := cfnKeys(tb.KeySchema), sdkKeys(def.KeySchema); !slices.Equal(got, want) {
		bad("KeySchema", got, want)
	}
	gotIdx := map[string]cfndynamodb.Table_GlobalSecondaryIndex{}
	for _, g := range tb.GlobalSecondaryIndexes {
		gotIdx[g.IndexName] = g
	}
	wantNames := []string{}
	for _, w := range def.GlobalSecondaryIndexes {
		name := aws.ToString(w.IndexName)
		wantNames = append(wantNames, name)
		g, ok := gotIdx[name]
		if !ok {
			bad("GlobalSecondaryIndexes", sortedKeys(gotIdx), "index "+name)
			continue
		}
		if got, want := cfnKeys(g.KeySchema), sdkKeys(w.KeySchema); !slices.Equal(got, want) {
			bad("index "+name+" KeySchema", got, want)
		}
		var gotType string
		var gotNonKey []string
		if g.Projection != nil {
			gotType, gotNonKey = aws.ToString(g.Projection.ProjectionType), slices.Sorted(slices.Values(g.Projection.NonKeyAttributes))
		}
		wantType := string(w.Projection.ProjectionType)
		wantNonKey := slices.Sorted(slices.Values(w.Projection.NonKeyAttributes))
		if gotType != wantType {
			bad("index "+name+" ProjectionType", gotType, wantType)
		}
		if !slices.Equal(gotNonKey, wantNonKey) {
			bad("index "+name+" NonKeyAttributes", gotNonKey, wantNonKey)
		}
		if g.ProvisionedThroughput != nil {
			bad("index "+name+" ProvisionedThroughput", *g.ProvisionedThroughput, "none (on demand)")
		}
	}
	for name := range gotIdx {
		if !slices.Contains(wantNames, name) {
			bad("GlobalSecondaryIndexes", name, "only "+strings.Join(wantNames, ", "))
		}
	}
	if len(tb.LocalSecondaryIndexes) != len(def.LocalSecondaryIndexes) {
		bad("LocalSecondaryIndexes", len(tb.LocalSecondaryIndexes), len(def.LocalSecondaryIndexes))
	}
	return problems
}

func cfnKeys(ks []cfndynamodb.Table_KeySchema) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.AttributeName+" "+k.KeyType)
	}
	return out
}

func sdkKeys(ks []types.KeySchemaElement) []string {
	var out []string
	for _, k := range ks {
		out = append(out, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return out
}

// ------------------------------------------------------------- scheduler

func checkScheduler(f *fixture) []string {
	const id = "SchedulerFunction"
	var problems []string
	bad := func(what string, got, want any) {
		problems = append(problems, fmt.Sprintf("%s: %s: got %v, want %v", id, what, got, want))
	}
	fn := f.function(id)
	problems = append(problems, checkShardSchedule(f, id)...)
	eic := mapAt(fn, "EventInvokeConfig")
	if n, ok := number(path(eic, "MaximumRetryAttempts")); !ok || n != 0 {
		bad("EventInvokeConfig.MaximumRetryAttempts", path(eic, "MaximumRetryAttempts"), "0 (a late invocation is worthless: the next minute's comes)")
	}
	if n, ok := number(path(eic, "MaximumEventAgeInSeconds")); !ok || n < 60 || n > 120 {
		bad("EventInvokeConfig.MaximumEventAgeInSeconds", path(eic, "MaximumEventAgeInSeconds"), "60..120")
	}
	// Six passes fill the minute after the start; a newcomer may wait two
	// intervals for the hand-over.
	if n, ok := number(fn["Timeout"]); !ok || n < 80 || n > 120 {
		bad("Timeout", fn["Timeout"], "80..120 s: six passes of 10 s plus a hand-over")
	}
	return problems
}

// checkShardSchedule checks the scheduler's schedule for every shard count
// the template allows: one rule, rate(1 minute), with exactly one target
// per shard whose input names it ({"shard": k}) and which is not retried;
// EVALSCHED_SHARDS set from the same parameter; EventBridge allowed to
// invoke the function; no reserved executions unless
// SchedulerReservedConcurrency asks for them; and an alarm on
// each shard's passes stalling.
func checkShardSchedule(f *fixture, id string) []string {
	var problems []string
	bad := func(what string, got, want any) {
		problems = append(problems, fmt.Sprintf("%s: %s: got %v, want %v", id, what, got, want))
	}
	// SAM's events cannot be conditional, and the shards' targets are.
	if evs := mapAt(f.function(id), "Events"); len(evs) > 0 {
		bad("events", sortedKeys(evs), "none: the schedule is an AWS::Events::Rule with a target per shard")
	}
	var rules []string
	for _, r := range f.ids("AWS::Events::Rule") {
		if f.props(r)["ScheduleExpression"] == nil {
			continue
		}
		for _, t := range items(f.props(r)["Targets"]) {
			if res, attr, ok := getAtt(path(t, "Arn")); ok && res == id && attr == "Arn" {
				rules = append(rules, r)
				break
			}
		}
	}
	if len(rules) != 1 {
		bad("schedule rules", rules, "one AWS::Events::Rule with a ScheduleExpression targeting the function")
		return problems
	}
	rule := rules[0]
	rp := f.props(rule)
	if rp["ScheduleExpression"] != "rate(1 minute)" {
		bad(rule+" ScheduleExpression", rp["ScheduleExpression"], "rate(1 minute): the passes fill the minute")
	}
	if s, ok := rp["State"]; ok && s != "ENABLED" {
		bad(rule+" State", s, "ENABLED")
	}
	permitted := false
	for _, p := range f.ids("AWS::Lambda::Permission") {
		pp := f.props(p)
		target, _, _ := getAtt(pp["FunctionName"])
		if r, ok := ref(pp["FunctionName"]); ok {
			target = r
		}
		src, attr, _ := getAtt(pp["SourceArn"])
		if target == id && pp["Principal"] == "events.amazonaws.com" && pp["Action"] == "lambda:InvokeFunction" && src == rule && attr == "Arn" {
			permitted = true
		}
	}
	if !permitted {
		bad("invoke permission", "none", fmt.Sprintf("an AWS::Lambda::Permission for events.amazonaws.com with SourceArn !GetAtt %s.Arn", rule))
	}
	param, ok := ref(f.env(id)["EVALSCHED_SHARDS"])
	if !ok || mapAt(f.tmpl, "Parameters", param) == nil {
		bad("EVALSCHED_SHARDS", f.env(id)["EVALSCHED_SHARDS"], "!Ref of the parameter that also decides the schedule's targets")
		return problems
	}
	values := f.allowedValues(param)
	if len(values) == 0 {
		bad(param+" AllowedValues", nil, "the shard counts, each checked here")
	}
	for _, v := range values {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5 {
			bad(param+" allowed value", v, "1..5 (one rule takes five targets)")
			continue
		}
		at := fmt.Sprintf("with %s=%d: ", param, n)
		res, err := f.deployedResources(f.parameterValues(map[string]string{param: v}))
		if err != nil {
			bad(at+"resources", err, "conditions that evaluate")
			continue
		}
		var shards []int
		targetIDs := map[string]bool{}
		for _, t := range items(path(res[rule], "Properties", "Targets")) {
			if r, attr, ok := getAtt(path(t, "Arn")); !ok || r != id || attr != "Arn" {
				bad(at+rule+" target", path(t, "Arn"), "!GetAtt "+id+".Arn")
			}
			tid, _ := path(t, "Id").(string)
			if targetIDs[tid] {
				bad(at+rule+" target Id", tid, "unique")
			}
			targetIDs[tid] = true
			var in struct {
				Shard *int `json:"shard"`
			}
			input, _ := path(t, "Input").(string)
			if err := json.Unmarshal([]byte(input), &in); err != nil || in.Shard == nil {
				bad(at+rule+" target "+tid+" Input", input, `{"shard": k}`)
				continue
			}
			shards = append(shards, *in.Shard)
			if n, ok := number(path(t, "RetryPolicy", "MaximumRetryAttempts")); !ok || n != 0 {
				bad(at+rule+" target "+tid+" RetryPolicy.MaximumRetryAttempts", path(t, "RetryPolicy", "MaximumRetryAttempts"), "0 (a late invocation is worthless: the next minute's comes)")
			}
		}
		slices.Sort(shards)
		want := make([]int, n)
		for k := range want {
			want[k] = k
		}
		if !slices.Equal(shards, want) {
			bad(at+rule+" targets' shards", shards, want)
		}
		// With the defaults nothing is reserved: a new account's Lambda
		// concurrency quota (10) leaves none to reserve, and each shard's
		// lease keeps its passes exclusive. Reserved, it is the operator's
		// number, two per shard in the parameter's advice.
		if rc := path(res[id], "Properties", "ReservedConcurrentExecutions"); rc != nil {
			bad(at+"ReservedConcurrentExecutions with the defaults", rc, "none (a new account, whose concurrency quota is 10, can reserve none)")
		}
		reserve := map[string]string{param: v, "SchedulerReservedConcurrency": strconv.Itoa(2 * n)}
		withReservation, err := f.deployedResources(f.parameterValues(reserve))
		if err != nil {
			bad(at+"resources", err, "conditions that evaluate")
			continue
		}
		rc := path(withReservation[id], "Properties", "ReservedConcurrentExecutions")
		if p, isRef := ref(rc); isRef {
			rc = reserve[p]
		}
		if got, ok := number(rc); !ok || got != float64(2*n) {
			bad(at+"and SchedulerReservedConcurrency="+strconv.Itoa(2*n)+": ReservedConcurrentExecutions", rc, 2*n)
		}
		alarmed := map[int]bool{}
		for _, a := range f.ids("AWS::CloudWatch::Alarm") {
			p := mapAt(res[a], "Properties")
			if p == nil || p["MetricName"] != "PassDuration" {
				continue
			}
			for _, d := range items(p["Dimensions"]) {
				if s, _ := text(path(d, "Value")); path(d, "Name") == "Shard" {
					k, _ := strconv.Atoi(s)
					alarmed[k] = true
				}
			}
		}
		for k := range n {
			if !alarmed[k] {
				bad(at+"alarms", sortedKeys(res), fmt.Sprintf("an alarm on PassDuration with dimension Shard %d (a stalled shard's models wait unnoticed)", k))
			}
		}
	}
	return problems
}

// ---------------------------------------------------------------- intake

func checkIntake(f *fixture) []string {
	const id = "IntakeFunction"
	var problems []string
	bad := func(what string, got, want any) {
		problems = append(problems, fmt.Sprintf("%s: %s: got %v, want %v", id, what, got, want))
	}
	fn := f.function(id)
	sqsEvents := f.events(id, "SQS")
	if len(sqsEvents) != 1 {
		bad("SQS events", sortedKeys(sqsEvents), "one")
		return problems
	}
	timeout, _ := number(fn["Timeout"])
	for name, ev := range sqsEvents {
		if !slices.Contains(items(ev["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
			bad(name+" FunctionResponseTypes", ev["FunctionResponseTypes"], "[ReportBatchItemFailures] (a bad message must not redeliver the batch)")
		}
		if n, ok := number(ev["BatchSize"]); !ok || n < 1 || n > 10 {
			bad(name+" BatchSize", ev["BatchSize"], "1..10")
		}
		queue, _, ok := getAtt(ev["Queue"])
		if !ok || f.typeOf(queue) != "AWS::SQS::Queue" {
			bad(name+" Queue", ev["Queue"], "!GetAtt <an AWS::SQS::Queue>.Arn")
			continue
		}
		q := f.props(queue)
		if v, ok := number(q["VisibilityTimeout"]); !ok || v < 6*timeout {
			bad(queue+" VisibilityTimeout", q["VisibilityTimeout"], fmt.Sprintf("≥ 6 × the function's Timeout %v = %v", timeout, 6*timeout))
		}
		if v, _ := number(q["MaximumMessageSize"]); v != 1<<20 {
			bad(queue+" MaximumMessageSize", q["MaximumMessageSize"], "1048576 (batch messages are up to 1 MiB)")
		}
		rp := mapAt(q, "RedrivePolicy")
		dlq, _, ok := getAtt(rp["deadLetterTargetArn"])
		if !ok || f.typeOf(dlq) != "AWS::SQS::Queue" {
			bad(queue+" RedrivePolicy.deadLetterTargetArn", rp["deadLetterTargetArn"], "!GetAtt <the dead-letter queue>.Arn")
			continue
		}
		if n, ok := number(rp["maxReceiveCount"]); !ok || n < 5 {
			bad(queue+" RedrivePolicy.maxReceiveCount", rp["maxReceiveCount"], "≥ 5")
		}
		qr, _ := number(q["MessageRetentionPeriod"])
		dr, _ := number(f.props(dlq)["MessageRetentionPeriod"])
		if dr <= qr {
			bad(dlq+" MessageRetentionPeriod", f.props(dlq)["MessageRetentionPeriod"], fmt.Sprintf("longer than the queue's %v (a message's age counts from its first send)", q["MessageRetentionPeriod"]))
		}
		if r, ok := ref(f.env(id)["EVALSCHED_DLQ_URL"]); !ok || r != dlq {
			bad("EVALSCHED_DLQ_URL", f.env(id)["EVALSCHED_DLQ_URL"], "!Ref "+dlq)
		}
	}
	return problems
}

// ----------------------------------------------------------- task events

func checkTaskEvents(f *fixture) []string {
	const id = "TaskEventsFunction"
	var problems []string
	rules := f.events(id, "EventBridgeRule", "CloudWatchEvent")
	if len(rules) != 1 {
		return []string{fmt.Sprintf("%s: got rules %v, want one EventBridge rule", id, sortedKeys(rules))}
	}
	cluster := firstString(f.sandboxIDs("AWS::ECS::Cluster"))
	for name, ev := range rules {
		p := mapAt(ev, "Pattern")
		for _, c := range []struct {
			what string
			got  any
			want string
		}{
			{"source", p["source"], "aws.ecs"},
			{"detail-type", p["detail-type"], "ECS Task State Change"},
			{"detail.clusterArn", path(p, "detail", "clusterArn"), "${" + cluster + ".Arn}"},
		} {
			got, _ := texts(c.got)
			if !slices.Equal(got, []string{c.want}) {
				problems = append(problems, fmt.Sprintf("%s: rule %s: %s: got %v, want [%s]", id, name, c.what, got, c.want))
			}
		}
		if bus := ev["EventBusName"]; bus != nil && bus != "default" {
			problems = append(problems, fmt.Sprintf("%s: rule %s: got EventBusName %v, want the default bus (where ECS sends)", id, name, bus))
		}
	}
	return problems
}

// --------------------------------------------------------------- sandbox

func checkSandbox(f *fixture) []string {
	var problems []string
	clusters := f.sandboxIDs("AWS::ECS::Cluster")
	if len(clusters) != 1 {
		return []string{fmt.Sprintf("got clusters %v, want one sandbox cluster", clusters)}
	}
	cps, _ := texts(f.props(clusters[0])["CapacityProviders"])
	for _, want := range []string{"FARGATE", "FARGATE_SPOT"} {
		if !slices.Contains(cps, want) {
			problems = append(problems, fmt.Sprintf("%s: got CapacityProviders %v, want %s among them", clusters[0], cps, want))
		}
	}
	sched := f.env("SchedulerFunction")
	family, _ := text(sched["EVALSCHED_DEFAULT_TASK_DEFINITION"])
	container, _ := text(sched["EVALSCHED_CONTAINER_NAME"])
	var found bool
	for _, td := range f.sandboxIDs("AWS::ECS::TaskDefinition") {
		p := f.props(td)
		if fam, _ := text(p["Family"]); fam != family {
			continue
		}
		found = true
		if c, _ := texts(p["RequiresCompatibilities"]); !slices.Contains(c, "FARGATE") {
			problems = append(problems, fmt.Sprintf("%s: got RequiresCompatibilities %v, want FARGATE", td, c))
		}
		if m, _ := text(p["NetworkMode"]); m != "awsvpc" {
			problems = append(problems, fmt.Sprintf("%s: got NetworkMode %q, want awsvpc (Fargate)", td, m))
		}
		var names []string
		for _, c := range items(p["ContainerDefinitions"]) {
			n, _ := text(path(c, "Name"))
			names = append(names, n)
			if n != container {
				continue
			}
			if img, ok := ref(path(c, "Image")); !ok || mapAt(f.tmpl, "Parameters", img) == nil {
				problems = append(problems, fmt.Sprintf("%s: got Image %v, want !Ref of a parameter", td, path(c, "Image")))
			}
		}
		if !slices.Contains(names, container) {
			problems = append(problems, fmt.Sprintf("%s: got containers %v, want %q (EVALSCHED_CONTAINER_NAME)", td, names, container))
		}
		if p, ok := ref(sched["EVALSCHED_CONTAINER_NAME"]); ok {
			if d, _ := f.parameterDefault(p); d != "sandbox" {
				problems = append(problems, fmt.Sprintf("parameter %s: got default %q, want \"sandbox\" (config's default)", p, d))
			}
		}
	}
	if !found {
		problems = append(problems, fmt.Sprintf("got no AWS::ECS::TaskDefinition of family %q (EVALSCHED_DEFAULT_TASK_DEFINITION)", family))
	}
	return problems
}

// ---------------------------------------------------- parameters, outputs

// parameters are the deployment's settings an operator sets.
var parameters = []string{
	"GatewayMetricNamespace", "GatewayMetricName", "GatewayMetricDimension", "GatewayMetricPeriod",
	"GatewayErrorMetricName", "GatewayCallsMetricName", "GatewayInServiceMetricName",
	"Subnets", "SecurityGroups", "AssignPublicIp", "CapacityStrategy", "GlobalMaxRunning",
	"Tiers", "TierWeight", "DefaultTier", "SandboxImage", "LaunchRate", "LaunchBurst", "SchedulerShards",
}

func checkParametersOutputs(f *fixture) []string {
	var problems []string
	params := mapAt(f.tmpl, "Parameters")
	for _, p := range parameters {
		if params[p] == nil {
			problems = append(problems, fmt.Sprintf("got no parameter %s, want it", p))
		}
	}
	used := map[string]bool{}
	for _, section := range []string{"Resources", "Outputs", "Conditions", "Globals"} {
		walk(f.tmpl[section], "", func(_ string, v any) {
			if r, ok := ref(v); ok {
				used[r] = true
			}
			if fn, arg, ok := intrinsic(v); ok && fn == "Fn::Sub" {
				s, _, _ := subArgs(arg)
				for _, n := range subVars(s) {
					used[n] = true
				}
			}
		})
	}
	for _, p := range sortedKeys(params) {
		if !used[p] {
			problems = append(problems, fmt.Sprintf("parameter %s: not used", p))
		}
	}
	outputs := map[string]bool{}
	for _, o := range mapAt(f.tmpl, "Outputs") {
		if s, ok := text(path(o, "Value")); ok {
			outputs[s] = true
		}
	}
	want := []string{}
	for _, q := range f.eventQueues("IntakeFunction") {
		want = append(want, "${"+q+"}")
		if dlq, _, ok := getAtt(path(f.props(q), "RedrivePolicy", "deadLetterTargetArn")); ok {
			want = append(want, "${"+dlq+"}")
		}
	}
	for _, t := range f.ids("AWS::DynamoDB::Table") {
		want = append(want, "${"+t+"}")
	}
	for _, c := range f.ids("AWS::ECS::Cluster") {
		want = append(want, "${"+c+"}")
	}
	for _, w := range want {
		if !outputs[w] {
			problems = append(problems, fmt.Sprintf("got no output of %s, want one (the queue URLs, table names and cluster)", w))
		}
	}
	return problems
}

// ------------------------------------------------------------ monitoring

// notYetEmitted are metrics the dashboard or the alarms name that no code
// emits yet, each with who will emit it. Keep it empty in a release.
var notYetEmitted = map[string]string{}

// emittedMetrics returns the metrics the code writes at detail: a pass's EMF
// documents (internal/emf), the intake's (internal/intake); a metric
// without a dimension by its name, one by model as name@Model.
func emittedMetrics(detail emf.Detail) (map[string]bool, error) {
	var buf bytes.Buffer
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rep := scheduler.Report{At: at, Duration: time.Second, Plan: scheduler.Plan{Models: []scheduler.ModelPlan{{
		Model: "m", Running: 1, Starting: 1, Waiting: 1, Admitted: 10, ByTier: []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		Depth: scheduler.Depth{Value: 1, At: at},
	}}}}
	if err := emf.WriteShard(&buf, "ns", 0, detail, rep); err != nil {
		return nil, err
	}
	h := &intake.Handler{Config: intake.Config{Namespace: "ns"}, Metrics: &buf, Now: func() time.Time { return at }}
	if _, err := h.Handle(context.Background(), events.SQSEvent{}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var doc struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		if err := dec.Decode(&doc); err != nil {
			return nil, err
		}
		for _, d := range doc.AWS.CloudWatchMetrics {
			for _, set := range d.Dimensions {
				for _, m := range d.Metrics {
					out[strings.Join(append([]string{m.Name}, set...), "@")] = true
				}
			}
		}
	}
	return out, nil
}

var (
	searchMetric  = regexp.MustCompile(`MetricName\s*=\s*\\?"([A-Za-z0-9_]+)\\?"`)
	searchSchema  = regexp.MustCompile(`\{([^,{}]+)(,[^{}]*)?\}`)
	insightMetric = regexp.MustCompile(`(?i)(?:MAX|MIN|SUM|AVG|COUNT)\(\s*"?([A-Za-z0-9_]+)"?\s*\)`)
	insightSchema = regexp.MustCompile(`SCHEMA\(\s*"([^"]+)"((?:\s*,\s*[A-Za-z0-9_]+)*)\s*\)`)
)

// schemaKey is a metric's key in emittedMetrics: its name, then the
// dimension names of the schema (", Model" → "@Model").
func schemaKey(name, dims string) string {
	var parts []string
	for _, d := range strings.Split(dims, ",") {
		if d = strings.TrimSpace(d); d != "" {
			parts = append(parts, d)
		}
	}
	return strings.Join(append([]string{name}, parts...), "@")
}

// checkMonitoring checks the alarms and the dashboard against the metrics
// the code emits at each detail (a deployment picks one with ModelMetrics:
// both must show what they name).
func checkMonitoring(f *fixture) []string {
	var problems []string
	for _, d := range []emf.Detail{emf.Full, emf.Essential, emf.Lean} {
		for _, p := range checkMonitoringAt(f, d) {
			problems = append(problems, fmt.Sprintf("ModelMetrics=%s: %s", d, p))
		}
	}
	return problems
}

func checkMonitoringAt(f *fixture, detail emf.Detail) []string {
	var problems []string
	emitted, err := emittedMetrics(detail)
	if err != nil {
		return []string{fmt.Sprintf("the code's metrics: %v", err)}
	}
	ns, _ := text(f.env("SchedulerFunction")["EVALSCHED_EMF_NAMESPACE"])
	nsValue, _ := f.evaluate(f.env("SchedulerFunction")["EVALSCHED_EMF_NAMESPACE"])
	for _, id := range f.ids("AWS::Logs::MetricFilter") {
		for _, t := range items(f.props(id)["MetricTransformations"]) {
			if m, _ := text(path(t, "MetricNamespace")); m == ns {
				n, _ := text(path(t, "MetricName"))
				emitted[n] = true
			}
		}
	}
	known := func(where, name string) {
		if !emitted[name] {
			if _, pending := notYetEmitted[name]; !pending {
				problems = append(problems, fmt.Sprintf("%s: names metric %s, which the code does not emit (emitted: %v)", where, name, sortedKeys(emitted)))
			}
		}
	}

	// Alarms on our metrics name emitted ones; the four an operator pages on exist.
	required := map[string]bool{"dlq": false, "PassFailed": false, "LeaseLost": false, "BreakersOpen": false}
	for _, id := range f.ids("AWS::CloudWatch::Alarm") {
		p := f.props(id)
		metricNS, _ := text(p["Namespace"])
		metric, _ := text(p["MetricName"])
		if metricNS == ns {
			known(id, metric)
		}
		var names []string
		if metric != "" {
			names = append(names, metric)
		}
		for _, q := range items(p["Metrics"]) {
			expr, _ := text(path(q, "Expression"))
			schema := insightSchema.FindStringSubmatch(expr)
			for _, m := range insightMetric.FindAllStringSubmatch(expr, -1) {
				if schema != nil && schema[1] == ns {
					known(id, schemaKey(m[1], schema[2]))
				}
				names = append(names, m[1])
			}
		}
		threshold, _ := number(p["Threshold"])
		above := p["ComparisonOperator"] == "GreaterThanThreshold" && threshold == 0
		dims := items(p["Dimensions"])
		for _, n := range names {
			switch {
			case n == "ApproximateNumberOfMessagesVisible" && metricNS == "AWS/SQS" && len(dims) == 1:
				q, attr, _ := getAtt(path(dims[0], "Value"))
				if attr == "QueueName" && slices.Contains(f.intakeDLQs(), q) && above {
					required["dlq"] = true
				}
			case n == "PassFailed" || n == "LeaseLost" || n == "BreakersOpen":
				required[n] = required[n] || above
			}
		}
	}
	for _, k := range sortedKeys(required) {
		if !required[k] {
			problems = append(problems, fmt.Sprintf("got no alarm on %s > 0, want one", k))
		}
	}

	// The dashboard parses and shows what an operator watches.
	dashboards := f.ids("AWS::CloudWatch::Dashboard")
	if len(dashboards) != 1 {
		return append(problems, fmt.Sprintf("got dashboards %v, want one", dashboards))
	}
	body, ok := f.evaluate(f.props(dashboards[0])["DashboardBody"])
	var dash struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
				Query   string  `json:"query"` // a log widget's Logs Insights query
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &dash); !ok || err != nil {
		return append(problems, fmt.Sprintf("%s: DashboardBody is not JSON: %v", dashboards[0], err))
	}
	// The depth is the gateway's own metric, the one the scheduler reads.
	gwNS, _ := f.evaluate(f.env("SchedulerFunction")["EVALSCHED_METRIC_NAMESPACE"])
	gwName, _ := f.evaluate(f.env("SchedulerFunction")["EVALSCHED_METRIC_NAME"])
	shown := map[string]bool{}
	fields, err := modelFields(detail)
	if err != nil {
		return append(problems, err.Error())
	}
	for _, w := range dash.Widgets {
		// A log widget over the pass's lines: the fields it reads are
		// those each busy model's line carries.
		for _, m := range insightsField.FindAllStringSubmatch(w.Properties.Query, -1) {
			if !fields[m[1]] {
				problems = append(problems, fmt.Sprintf("%s: its query reads %s, which no model's line carries (%v)", dashboards[0], m[1], sortedKeys(fields)))
			}
			shown[m[1]] = true
		}
		for _, m := range w.Properties.Metrics {
			if len(m) >= 2 && m[0] == nsValue {
				name, _ := m[1].(string)
				known(dashboards[0], name)
				shown[name] = true
			}
			for _, it := range m {
				opts, _ := it.(map[string]any)
				expr, _ := opts["expression"].(string)
				schema := searchSchema.FindStringSubmatch(expr)
				for _, sm := range searchMetric.FindAllStringSubmatch(expr, -1) {
					switch {
					case schema != nil && schema[1] == nsValue:
						known(dashboards[0], schemaKey(sm[1], schema[2]))
						shown[sm[1]] = true
					case schema != nil && schema[1] == gwNS && sm[1] == gwName:
						shown["GatewayDepth"] = true
					}
				}
			}
		}
	}
	for _, want := range []string{"GatewayDepth", "JobLimit", "Running", "Waiting", "AdmittedTier0", "IntakeRejected", "PassDuration", "BreakerOpen", "BreakersOpen"} {
		if !shown[want] {
			problems = append(problems, fmt.Sprintf("%s: shows no %s, want it", dashboards[0], want))
		}
	}
	return problems
}

// insightsField is a field a Logs Insights query aggregates.
var insightsField = regexp.MustCompile(`\b(?:latest|max|min|avg|sum)\(([A-Za-z0-9_]+)\)`)

// modelFields returns the fields of each busy model's line of a pass at
// detail (the EMF document's top-level keys, or the lean line's).
func modelFields(detail emf.Detail) (map[string]bool, error) {
	var buf bytes.Buffer
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rep := scheduler.Report{At: at, Plan: scheduler.Plan{Models: []scheduler.ModelPlan{{
		Model: "m", Running: 1, Waiting: 1, Depth: scheduler.Depth{Value: 1, At: at}}}}}
	if err := emf.WriteShard(&buf, "ns", 0, detail, rep); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			return nil, err
		}
		if d["Model"] == nil {
			continue
		}
		for k := range d {
			out[k] = true
		}
	}
	return out, nil
}

// intakeDLQs returns the dead-letter queues of the intake's queues.
func (f *fixture) intakeDLQs() []string {
	var out []string
	for _, q := range f.eventQueues("IntakeFunction") {
		if dlq, _, ok := getAtt(path(f.props(q), "RedrivePolicy", "deadLetterTargetArn")); ok {
			out = append(out, dlq)
		}
	}
	return out
}
