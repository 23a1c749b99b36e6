package httpfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// ECS fakes the RunTask, DescribeTasks, ListTasks and StopTask calls of ECS.
// Knobs set before or between calls shape its answers.
type ECS struct {
	mu     sync.Mutex
	srv    *httptest.Server
	tasks  []*Task
	tokens map[string]*Task

	// Throttle answers the next N RunTask calls with ThrottlingException.
	Throttle int
	// LoseAnswers starts the tasks of the next N RunTask calls but answers
	// them with a server fault, as a response lost after ECS acted.
	LoseAnswers int
	// CapacityFail answers RunTask with a capacity failure for these capacity
	// providers ("FARGATE_SPOT", "FARGATE").
	CapacityFail map[string]bool
	// MissingTaskDefinitions answers RunTask for these with a ClientException.
	MissingTaskDefinitions map[string]bool
	// ConflictTokens answers RunTask with ConflictException naming the task of
	// the token's first call, as ECS does for a reused token.
	ConflictTokens bool
	// Calls counts requests by operation.
	Calls map[string]int
}

// Task is one task the fake started.
type Task struct {
	ARN            string
	StartedBy      string
	Group          string
	TaskDefinition string
	Capacity       string
	Env            map[string]string
	LastStatus     string
	StopCode       string
	StoppedReason  string
	ExitCode       *int // the sandbox container's, once stopped
}

// NewECS starts the fake on 127.0.0.1; Close stops it.
func NewECS() *ECS {
	e := &ECS{tokens: map[string]*Task{}, Calls: map[string]int{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

// URL is the endpoint to give the SDK client.
func (e *ECS) URL() string { return e.srv.URL }

// Close stops the server.
func (e *ECS) Close() { e.srv.Close() }

// Tasks returns a copy of the tasks started so far.
func (e *ECS) Tasks() []Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Task, len(e.tasks))
	for i, t := range e.tasks {
		out[i] = *t
	}
	return out
}

// SetStatus changes a task's lastStatus, as ECS would as it runs.
func (e *ECS) SetStatus(arn, status string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.tasks {
		if t.ARN == arn {
			t.LastStatus = status
		}
	}
}

// Stop stops a task as ECS would: with a stop code, a reason and the
// container's exit code (nil: it never exited on its own).
func (e *ECS) Stop(arn, stopCode, reason string, exitCode *int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.tasks {
		if t.ARN == arn {
			t.LastStatus, t.StopCode, t.StoppedReason, t.ExitCode = "STOPPED", stopCode, reason, exitCode
		}
	}
}

// Forget drops a task, as ECS does an hour after it stopped.
func (e *ECS) Forget(arn string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tasks = slices.DeleteFunc(e.tasks, func(t *Task) bool { return t.ARN == arn })
}

func (e *ECS) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonEC2ContainerServiceV20141113.")
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Calls[op]++
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		fail(w, "ClientException", "bad json: "+err.Error())
		return
	}
	switch op {
	case "RunTask":
		e.runTask(w, in)
	case "DescribeTasks":
		e.describeTasks(w, in)
	case "ListTasks":
		e.listTasks(w, in)
	case "StopTask":
		e.stopTask(w, in)
	default:
		fail(w, "ClientException", "httpfake: unsupported operation "+op)
	}
}

func (e *ECS) runTask(w http.ResponseWriter, in map[string]any) {
	if e.Throttle > 0 {
		e.Throttle--
		fail(w, "ThrottlingException", "Rate exceeded")
		return
	}
	td, _ := in["taskDefinition"].(string)
	if e.MissingTaskDefinitions[td] {
		fail(w, "ClientException", "TaskDefinition not found.")
		return
	}
	capacity := "FARGATE"
	if s, ok := in["capacityProviderStrategy"].([]any); ok && len(s) > 0 {
		capacity, _ = s[0].(map[string]any)["capacityProvider"].(string)
	}
	token, _ := in["clientToken"].(string)
	if t, ok := e.tokens[token]; ok && token != "" {
		if e.ConflictTokens {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"__type": "ConflictException", "message": "token in use", "resourceIds": []string{t.ARN}})
			return
		}
		reply(w, map[string]any{"tasks": []any{taskJSON(t)}, "failures": []any{}})
		return
	}
	if e.CapacityFail[capacity] {
		reply(w, map[string]any{"tasks": []any{}, "failures": []any{map[string]any{
			"reason": "Capacity is unavailable at this time. Please try again later or in a different availability zone",
		}}})
		return
	}
	t := &Task{
		ARN:            fmt.Sprintf("arn:aws:ecs:us-east-1:123456789012:task/sandbox/%032x", len(e.tasks)+1),
		TaskDefinition: td, Capacity: capacity, LastStatus: "PROVISIONING", Env: map[string]string{},
	}
	t.StartedBy, _ = in["startedBy"].(string)
	t.Group, _ = in["group"].(string)
	if ov, ok := in["overrides"].(map[string]any); ok {
		for _, c := range asList(ov["containerOverrides"]) {
			for _, kv := range asList(c.(map[string]any)["environment"]) {
				m := kv.(map[string]any)
				name, _ := m["name"].(string)
				value, _ := m["value"].(string)
				t.Env[name] = value
			}
		}
	}
	e.tasks = append(e.tasks, t)
	if token != "" {
		e.tokens[token] = t
	}
	if e.LoseAnswers > 0 {
		e.LoseAnswers--
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]any{"__type": "ServerException", "message": "httpfake: the answer was lost"})
		return
	}
	reply(w, map[string]any{"tasks": []any{taskJSON(t)}, "failures": []any{}})
}

func (e *ECS) describeTasks(w http.ResponseWriter, in map[string]any) {
	want := map[string]bool{}
	for _, a := range asList(in["tasks"]) {
		want[a.(string)] = true
	}
	var tasks, failures []any
	for arn := range want {
		found := false
		for _, t := range e.tasks {
			if t.ARN == arn {
				tasks, found = append(tasks, taskJSON(t)), true
			}
		}
		if !found {
			failures = append(failures, map[string]any{"arn": arn, "reason": "MISSING"})
		}
	}
	reply(w, map[string]any{"tasks": orEmpty(tasks), "failures": orEmpty(failures)})
}

func (e *ECS) listTasks(w http.ResponseWriter, in map[string]any) {
	by, _ := in["startedBy"].(string)
	desired, _ := in["desiredStatus"].(string)
	var arns []any
	for _, t := range e.tasks {
		stopped := t.LastStatus == "STOPPED"
		if desired == "STOPPED" && !stopped || desired != "STOPPED" && stopped {
			continue
		}
		if by == "" || t.StartedBy == by {
			arns = append(arns, t.ARN)
		}
	}
	reply(w, map[string]any{"taskArns": orEmpty(arns)})
}

func (e *ECS) stopTask(w http.ResponseWriter, in map[string]any) {
	arn, _ := in["task"].(string)
	for _, t := range e.tasks {
		if t.ARN == arn {
			t.LastStatus, t.StopCode = "STOPPED", "UserInitiated"
			t.StoppedReason, _ = in["reason"].(string)
			reply(w, map[string]any{"task": taskJSON(t)})
			return
		}
	}
	fail(w, "InvalidParameterException", "The referenced task was not found.")
}

func taskJSON(t *Task) map[string]any {
	c := map[string]any{"name": "sandbox", "lastStatus": t.LastStatus}
	if t.ExitCode != nil {
		c["exitCode"] = *t.ExitCode
	}
	var env []any
	for k, v := range t.Env {
		env = append(env, map[string]any{"name": k, "value": v})
	}
	out := map[string]any{"taskArn": t.ARN, "startedBy": t.StartedBy, "group": t.Group,
		"taskDefinitionArn": t.TaskDefinition, "lastStatus": t.LastStatus, "containers": []any{c},
		"overrides": map[string]any{"containerOverrides": []any{map[string]any{"name": "sandbox", "environment": orEmpty(env)}}}}
	if t.StopCode != "" {
		out["stopCode"], out["stoppedReason"] = t.StopCode, t.StoppedReason
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func orEmpty(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"__type": code, "message": msg})
}
