package template

import (
	"slices"
	"strings"
	"testing"
)

// A check that passes on every template proves nothing: each case breaks
// a copy of template.yaml (or the Makefile) the way a careless edit would
// and wants the check to say so.
func TestChecksCatchBrokenTemplates(t *testing.T) {
	cases := []struct {
		name   string
		check  string
		break_ func(t *testing.T, f *fixture)
		want   string // in one of the check's problems
	}{
		{"intake gains a call its code cannot make", "iam/IntakeFunction", func(t *testing.T, f *fixture) {
			s := statementWithSid(t, f, "IntakeRole", "SubmitBatches")
			s["Action"] = append(s["Action"].([]any), "dynamodb:DeleteTable")
		}, "grants dynamodb:DeleteTable"},
		{"scheduler loses its logs", "iam/SchedulerFunction", func(t *testing.T, f *fixture) {
			removeStatement(t, f, "SchedulerRole", "Logs")
		}, "missing logs:CreateLogStream"},
		{"task events write to every table", "iam/TaskEventsFunction", func(t *testing.T, f *fixture) {
			statementWithSid(t, f, "TaskEventsRole", "FinishJobs")["Resource"] = "*"
		}, `on "*"`},
		{"DynamoDB on Resource *", "iam/wildcards", func(t *testing.T, f *fixture) {
			statementWithSid(t, f, "TaskEventsRole", "FinishJobs")["Resource"] = "*"
		}, `Resource "*"`},
		{"every index of the table", "iam/wildcards", func(t *testing.T, f *fixture) {
			statementWithSid(t, f, "SchedulerRole", "Indexes")["Resource"] = map[string]any{"Fn::Sub": "${StateTable.Arn}/index/*"}
		}, "want a named resource"},
		{"RunTask of any task definition", "iam/SchedulerFunction", func(t *testing.T, f *fixture) {
			statementWithSid(t, f, "SchedulerRole", "Launch")["Resource"] = map[string]any{
				"Fn::Sub": "arn:${AWS::Partition}:ecs:${AWS::Region}:${AWS::AccountId}:task-definition/*"}
		}, "want it only on"},
		{"RunTask in any cluster", "iam/SchedulerFunction", func(t *testing.T, f *fixture) {
			delete(statementWithSid(t, f, "SchedulerRole", "Launch"), "Condition")
		}, "got condition ecs:cluster = []"},
		{"PassRole of any role", "iam/pass-role", func(t *testing.T, f *fixture) {
			statementWithSid(t, f, "SchedulerRole", "PassSandboxRoles")["Resource"] = "*"
		}, "want only the sandbox roles"},
		{"sandbox task role reads DynamoDB", "iam/sandbox-roles", func(t *testing.T, f *fixture) {
			f.props("SandboxTaskRole")["Policies"] = []any{map[string]any{
				"PolicyName": "oops",
				"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
					"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": map[string]any{"Fn::GetAtt": []any{"StateTable", "Arn"}},
				}}},
			}}
		}, "the sandbox task role gets dynamodb:GetItem"},
		{"sandbox task role sends to the intake queue", "iam/sandbox-roles", func(t *testing.T, f *fixture) {
			statementWithSid(t, f, "SandboxTaskRole", "SendResult")["Resource"] = map[string]any{"Fn::GetAtt": []any{"IntakeQueue", "Arn"}}
		}, "the sandbox task role gets sqs:SendMessage"},
		{"sandbox task role reads the results queue", "iam/sandbox-roles", func(t *testing.T, f *fixture) {
			statementWithSid(t, f, "SandboxTaskRole", "SendResult")["Action"] = []any{"sqs:SendMessage", "sqs:ReceiveMessage"}
		}, "the sandbox task role gets sqs:ReceiveMessage"},
		{"function without a role of its own", "iam/IntakeFunction", func(t *testing.T, f *fixture) {
			delete(f.props("IntakeFunction"), "Role")
		}, "no Role"},
		{"dangling reference", "references", func(t *testing.T, f *fixture) {
			mapAt(f.props("SchedulerFunction"), "Environment", "Variables")["EVALSCHED_CLUSTER"] = map[string]any{"Ref": "NoSuchCluster"}
		}, `"NoSuchCluster"`},
		{"dangling Sub variable", "references", func(t *testing.T, f *fixture) {
			f.props("StateTable")["TableName"] = map[string]any{"Fn::Sub": "${StackName}-state"}
		}, `"StackName"`},
		{"Makefile without lambda.norpc", "build", func(t *testing.T, f *fixture) {
			f.makefile = strings.ReplaceAll(f.makefile, "-tags lambda.norpc ", "")
		}, "want lambda.norpc"},
		{"Makefile builds for amd64", "build", func(t *testing.T, f *fixture) {
			f.makefile = strings.ReplaceAll(f.makefile, "GOARCH=arm64", "GOARCH=amd64")
		}, "GOARCH=arm64"},
		{"no build target", "build", func(t *testing.T, f *fixture) {
			f.makefile = strings.ReplaceAll(f.makefile, "build-TaskEventsFunction:", "build-TaskEvents:")
		}, "no target build-TaskEventsFunction"},
		{"unknown variable", "environment", func(t *testing.T, f *fixture) {
			mapAt(f.props("IntakeFunction"), "Environment", "Variables")["EVALSCHED_DLQ"] = "x"
		}, "EVALSCHED_DLQ, which internal/config does not read"},
		{"default tier out of range", "environment", func(t *testing.T, f *fixture) {
			mapAt(f.tmpl, "Parameters", "DefaultTier")["Default"] = 7
		}, "EVALSCHED_DEFAULT_TIER"},
		{"GSI projects everything", "tables", func(t *testing.T, f *fixture) {
			gsi := items(f.props("StateTable")["GlobalSecondaryIndexes"])[0].(map[string]any)
			gsi["Projection"] = map[string]any{"ProjectionType": "ALL"}
		}, "ProjectionType: got ALL, want INCLUDE"},
		{"provisioned table", "tables", func(t *testing.T, f *fixture) {
			f.props("PinsTable")["BillingMode"] = "PROVISIONED"
		}, "BillingMode"},
		{"ended jobs never expire", "tables", func(t *testing.T, f *fixture) {
			delete(f.props("StateTable"), "TimeToLiveSpecification")
		}, "TimeToLiveSpecification (enabled) AttributeName: got , want expires_at"},
		{"TTL on another attribute", "tables", func(t *testing.T, f *fixture) {
			f.props("StateTable")["TimeToLiveSpecification"] = map[string]any{"AttributeName": "ttl", "Enabled": true}
		}, "got ttl, want expires_at"},
		{"no point-in-time recovery", "tables", func(t *testing.T, f *fixture) {
			delete(f.props("ModelsTable"), "PointInTimeRecoverySpecification")
		}, "PointInTimeRecoveryEnabled"},
		{"scheduler retried", "scheduler", func(t *testing.T, f *fixture) {
			mapAt(f.props("SchedulerFunction"), "EventInvokeConfig")["MaximumRetryAttempts"] = 2
		}, "MaximumRetryAttempts: got 2"},
		{"scheduler every five minutes", "scheduler", func(t *testing.T, f *fixture) {
			f.props("SchedulerSchedule")["ScheduleExpression"] = "rate(5 minutes)"
		}, "want rate(1 minute)"},
		{"a reservation a new account cannot make", "scheduler", func(t *testing.T, f *fixture) {
			f.props("SchedulerFunction")["ReservedConcurrentExecutions"] = 2
		}, "with SchedulerShards=1: ReservedConcurrentExecutions with the defaults: got 2, want none"},
		{"the reservation parameter ignored", "scheduler", func(t *testing.T, f *fixture) {
			delete(f.props("SchedulerFunction"), "ReservedConcurrentExecutions")
		}, "and SchedulerReservedConcurrency=8: ReservedConcurrentExecutions: got <nil>, want 8"},
		{"shard 3 has no target", "scheduler", func(t *testing.T, f *fixture) {
			targets := f.props("SchedulerSchedule")["Targets"].([]any)
			f.props("SchedulerSchedule")["Targets"] = targets[:3]
		}, "with SchedulerShards=4: SchedulerSchedule targets' shards: got [0 1 2], want [0 1 2 3]"},
		{"a target for a shard that does not exist", "scheduler", func(t *testing.T, f *fixture) {
			targets := f.props("SchedulerSchedule")["Targets"].([]any)
			targets[1] = path(targets[1], "Fn::If").([]any)[1] // shard 1's target, unconditional
		}, "with SchedulerShards=1: SchedulerSchedule targets' shards: got [0 1], want [0]"},
		{"the function does not know the shard count", "scheduler", func(t *testing.T, f *fixture) {
			delete(mapAt(f.props("SchedulerFunction"), "Environment", "Variables"), "EVALSCHED_SHARDS")
		}, "EVALSCHED_SHARDS"},
		{"EventBridge may not invoke the scheduler", "scheduler", func(t *testing.T, f *fixture) {
			delete(f.resources(), "SchedulerSchedulePermission")
		}, "invoke permission"},
		{"a shard's stall goes unnoticed", "scheduler", func(t *testing.T, f *fixture) {
			delete(f.resources(), "SchedulerShard2StalledAlarm")
		}, "dimension Shard 2"},
		{"intake without partial batch responses", "intake", func(t *testing.T, f *fixture) {
			delete(mapAt(f.props("IntakeFunction"), "Events", "Batches", "Properties"), "FunctionResponseTypes")
		}, "ReportBatchItemFailures"},
		{"visibility shorter than the intake's runs", "intake", func(t *testing.T, f *fixture) {
			f.props("IntakeQueue")["VisibilityTimeout"] = 300
		}, "VisibilityTimeout: got 300"},
		{"messages dead-lettered at once", "intake", func(t *testing.T, f *fixture) {
			mapAt(f.props("IntakeQueue"), "RedrivePolicy")["maxReceiveCount"] = 1
		}, "maxReceiveCount: got 1"},
		{"rule on every cluster", "task-events", func(t *testing.T, f *fixture) {
			delete(mapAt(f.props("TaskEventsFunction"), "Events", "SandboxTaskStateChange", "Properties", "Pattern"), "detail")
		}, "detail.clusterArn"},
		{"container renamed", "sandbox", func(t *testing.T, f *fixture) {
			items(f.props("SandboxTaskDefinition")["ContainerDefinitions"])[0].(map[string]any)["Name"] = "eval"
		}, "want \"${ContainerName}\""},
		{"no output of the queue", "parameters-outputs", func(t *testing.T, f *fixture) {
			delete(mapAt(f.tmpl, "Outputs"), "IntakeQueueUrl")
		}, "${IntakeQueue}"},
		{"alarm on a metric nobody emits", "monitoring", func(t *testing.T, f *fixture) {
			f.props("PassFailedAlarm")["MetricName"] = "PassFailures"
		}, "names metric PassFailures"},
		{"no breaker alarm", "monitoring", func(t *testing.T, f *fixture) {
			delete(f.resources(), "BreakerOpenAlarm")
		}, "no alarm on BreakersOpen"},
		{"unknown table property", "goformation", func(t *testing.T, f *fixture) {
			f.props("StateTable")["BilingMode"] = "PAY_PER_REQUEST"
		}, "BilingMode"},
	}
	all := checks()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := slices.IndexFunc(all, func(x check) bool { return x.name == c.check })
			if i < 0 {
				t.Fatalf("no check %q", c.check)
			}
			f := load(t)
			if got := all[i].run(f.clone()); len(got) != 0 {
				t.Fatalf("check %s fails on the unbroken template: %v", c.check, got)
			}
			c.break_(t, f)
			got := all[i].run(f)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("check %s: got problems %q, want one containing %q", c.check, got, c.want)
			}
		})
	}
}

// statementWithSid returns a statement of a role's inline policies.
func statementWithSid(t *testing.T, f *fixture, role, sid string) map[string]any {
	t.Helper()
	for _, pol := range items(f.props(role)["Policies"]) {
		for _, s := range items(path(pol, "PolicyDocument", "Statement")) {
			if m, ok := s.(map[string]any); ok && m["Sid"] == sid {
				return m
			}
		}
	}
	t.Fatalf("%s has no statement %s", role, sid)
	return nil
}

// removeStatement drops a statement from a role's inline policies.
func removeStatement(t *testing.T, f *fixture, role, sid string) {
	t.Helper()
	for _, pol := range items(f.props(role)["Policies"]) {
		doc := mapAt(pol, "PolicyDocument")
		l, _ := doc["Statement"].([]any)
		if i := slices.IndexFunc(l, func(s any) bool { return path(s, "Sid") == sid }); i >= 0 {
			doc["Statement"] = slices.Delete(l, i, i+1)
			return
		}
	}
	t.Fatalf("%s has no statement %s", role, sid)
}

// The walk reads the short forms as CloudFormation does.
func TestDecodeShortForms(t *testing.T) {
	got, err := decode([]byte(`
A: !Ref X
B: !GetAtt T.Arn
C: !Sub "${T.Arn}/index/${!Literal}"
D: !If [Cond, !Ref AWS::NoValue, [!GetAtt Q.QueueName]]
E: !Join [",", !Ref L]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, want string
	}{
		{"A", "${X}"}, {"B", "${T.Arn}"}, {"C", "${T.Arn}/index/${!Literal}"}, {"E", "${L}"},
	} {
		if s, ok := text(got[c.key]); !ok || s != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.key, s, ok, c.want)
		}
	}
	if s, _ := texts(got["D"]); !slices.Equal(s, []string{"${Q.QueueName}"}) {
		t.Errorf("D: got %v, want [${Q.QueueName}] (the If's branches, NoValue dropped)", s)
	}
	if vars := subVars(got["C"].(map[string]any)["Fn::Sub"].(string)); !slices.Equal(vars, []string{"T.Arn"}) {
		t.Errorf("C: got variables %v, want [T.Arn]", vars)
	}
	if _, err := decode([]byte("A: 1\nA: 2\n")); err == nil {
		t.Error("a repeated key: got no error")
	}
	if _, err := decode([]byte("A: !Reff X\n")); err == nil {
		t.Error("an unknown tag: got no error")
	}
}
