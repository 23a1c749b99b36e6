package template

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/evalsched/evalsched/internal/dynamolease"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/gatewaydepth"
	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/reconcile/ecstasks"
)

// api is a consumer-side interface a function is wired with: each of its
// methods is a call the function's code may make.
type api struct {
	service string       // IAM service prefix
	iface   reflect.Type // the interface
}

func apiOf[T any](service string) api { return api{service: service, iface: reflect.TypeFor[T]()} }

// function is what one function of the template is and calls.
type function struct {
	id  string // logical id in template.yaml
	dir string // built from ./functions/<dir>

	// apis are the interfaces functions/<dir>/main.go wires the function
	// with; their methods, as IAM actions, bound what its policy may
	// grant. Which of them it must grant is not written here: each
	// function's flows run under its role with IAM enforced
	// (internal/iamcheck, functions/<dir>/iam_test.go), and fail on a
	// call the role refuses or a grant no flow uses.
	apis []api
	// extra are actions the code performs without a consumer-side
	// interface to derive them from, each with the reason.
	extra map[string]string
	// tables are the DynamoDB resources the function may touch, by their
	// dynamostore role: "state", "models", "pins", "state/index/<name>" or
	// "state/index/*" (every index of dynamostore's Definitions).
	tables []string
	// env are the variables the function cannot do without: the template
	// must set them.
	env []string
}

// functions is the table to adjust when a function's wiring changes.
var functions = []function{
	{
		id: "SchedulerFunction", dir: "scheduler",
		apis: []api{
			apiOf[dynamostore.DynamoDBAPI]("dynamodb"), // the store: snapshot, commit, launches, in-flight jobs
			apiOf[dynamolease.API]("dynamodb"),         // the lease item
			apiOf[ecslauncher.API]("ecs"),              // RunTask
			apiOf[gatewaydepth.API]("cloudwatch"),      // the gateway's depth
			apiOf[ecstasks.ECS]("ecs"),                 // DescribeTasks, ListTasks, StopTask
		},
		tables: []string{"state", "state/index/*", "models", "pins"},
		env: []string{
			"EVALSCHED_TABLE_PREFIX", "EVALSCHED_CLUSTER", "EVALSCHED_SUBNETS", "EVALSCHED_SECURITY_GROUPS",
			"EVALSCHED_DEFAULT_TASK_DEFINITION", "EVALSCHED_CONTAINER_NAME", "EVALSCHED_CAPACITY",
			"EVALSCHED_ASSIGN_PUBLIC_IP", "EVALSCHED_LAUNCH_RATE", "EVALSCHED_LAUNCH_BURST",
			"EVALSCHED_GLOBAL_MAX_RUNNING", "EVALSCHED_TIERS", "EVALSCHED_TIER_WEIGHT", "EVALSCHED_DEFAULT_TIER",
			"EVALSCHED_METRIC_NAMESPACE", "EVALSCHED_METRIC_NAME", "EVALSCHED_METRIC_DIMENSION",
			"EVALSCHED_METRIC_PERIOD_SECONDS", "EVALSCHED_EMF_NAMESPACE", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES",
			"EVALSCHED_JOB_RETENTION_DAYS", "EVALSCHED_MODEL_METRICS",
			"EVALSCHED_ERROR_METRIC_NAME", "EVALSCHED_CALLS_METRIC_NAME", "EVALSCHED_INSERVICE_METRIC_NAME",
		},
	},
	{
		id: "IntakeFunction", dir: "intake",
		apis: []api{
			apiOf[dynamostore.DynamoDBAPI]("dynamodb"), // the store's Submit (intake.Submitter)
			apiOf[intake.Sender]("sqs"),                // invalid messages to the dead-letter queue
		},
		tables: []string{"state"},
		env: []string{
			"EVALSCHED_TABLE_PREFIX", "EVALSCHED_DLQ_URL", "EVALSCHED_TIERS", "EVALSCHED_DEFAULT_TIER",
			"EVALSCHED_DEFAULT_TASK_DEFINITION", "EVALSCHED_EMF_NAMESPACE",
		},
	},
	{
		id: "ResultsFunction", dir: "results",
		apis: []api{
			apiOf[dynamostore.DynamoDBAPI]("dynamodb"), // the store's RecordResult (results.Recorder)
			apiOf[intake.Sender]("sqs"),                // invalid results to the dead-letter queue
		},
		tables: []string{"state"},
		env:    []string{"EVALSCHED_TABLE_PREFIX", "EVALSCHED_DLQ_URL"},
	},
	{
		id: "TaskEventsFunction", dir: "taskevents",
		apis: []api{
			apiOf[dynamostore.DynamoDBAPI]("dynamodb"), // the store's TaskStarted, TaskStopped (taskevent.Store)
		},
		tables: []string{"state"},
		env:    []string{"EVALSCHED_TABLE_PREFIX", "EVALSCHED_CONTAINER_NAME", "EVALSCHED_PROVIDER_ERROR_EXIT_CODES", "EVALSCHED_JOB_RETENTION_DAYS", "EVALSCHED_MODEL_METRICS"},
	},
}

// iamActions maps one SDK call to the IAM actions it is authorized as.
func iamActions(service, method string) []string {
	switch service + ":" + method {
	case "dynamodb:TransactWriteItems":
		// There is no IAM action of its own: each item is authorized as
		// the single-item action ("Using IAM with DynamoDB transactions").
		acts := []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
		if storeUsesConditionCheck() {
			acts = append(acts, "dynamodb:ConditionCheckItem")
		}
		return acts
	case "dynamodb:TransactGetItems":
		return []string{"dynamodb:GetItem"}
	case "ecs:RunTask":
		// RunTask hands the task its task and execution roles.
		return []string{"ecs:RunTask", "iam:PassRole"}
	}
	return []string{service + ":" + method}
}

// derived returns the IAM actions of a function's interfaces, each with the
// interfaces it comes from.
func (fn function) derived() map[string][]string {
	out := map[string][]string{}
	for _, a := range fn.apis {
		for i := range a.iface.NumMethod() {
			m := a.iface.Method(i).Name
			for _, act := range iamActions(a.service, m) {
				out[act] = append(out[act], a.iface.String()+"."+m)
			}
		}
	}
	return out
}

// possible returns the actions the function's code can perform: derived,
// plus extra.
func (fn function) possible() map[string]string {
	out := map[string]string{}
	for act, from := range fn.derived() {
		out[act] = strings.Join(from, ", ")
	}
	for act, why := range fn.extra {
		out[act] = why
	}
	return out
}

var (
	conditionCheckOnce sync.Once
	conditionCheck     bool
)

// storeUsesConditionCheck reports whether a dynamostore transaction has a
// ConditionCheck item, which IAM authorizes as dynamodb:ConditionCheckItem.
func storeUsesConditionCheck() bool {
	conditionCheckOnce.Do(func() {
		files, _ := filepath.Glob(filepath.Join("..", "dynamostore", "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err == nil && (strings.Contains(string(b), "ConditionCheck:") || strings.Contains(string(b), "types.ConditionCheck{")) {
				conditionCheck = true
			}
		}
	})
	return conditionCheck
}

// functionSpec returns the table's entry of a logical id.
func functionSpec(id string) (function, bool) {
	i := slices.IndexFunc(functions, func(f function) bool { return f.id == id })
	if i < 0 {
		return function{}, false
	}
	return functions[i], true
}
