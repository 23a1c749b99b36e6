package template

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// bridgeCondition holds the optional gateway depth bridge's resources
// (template.yaml's last block): its cluster and task definition are not
// the sandbox's, and the sandbox checks skip them.
const bridgeCondition = "HasBridge"

// sandboxIDs is ids without the bridge's resources.
func (f *fixture) sandboxIDs(typ string) []string {
	return slices.DeleteFunc(f.ids(typ), func(id string) bool {
		c, _ := path(f.resources()[id], "Condition").(string)
		return c == bridgeCondition
	})
}

// TestBridgeService checks the optional bridge service (docs/bridge.md):
// none without BridgeImage, all of it with; its task role may publish
// metrics into the gateway namespace and nothing else; its container gets
// the configuration and the scheduler's metric names; the image it names is
// built by infra/bridge/Dockerfile with go.mod's Go.
func TestBridgeService(t *testing.T) {
	f := load(t)
	for _, p := range checkBridge(f) {
		t.Error(p)
	}
}

func checkBridge(f *fixture) []string {
	var problems []string
	var block []string
	for _, id := range sortedKeys(f.resources()) {
		if strings.HasPrefix(id, "Bridge") {
			block = append(block, id)
			if c, _ := path(f.resources()[id], "Condition").(string); c != bridgeCondition {
				problems = append(problems, fmt.Sprintf("%s: got Condition %q, want %s (no bridge without BridgeImage)", id, c, bridgeCondition))
			}
		}
	}
	for _, want := range []string{"BridgeService", "BridgeTaskDefinition", "BridgeTaskRole", "BridgeExecutionRole", "BridgeCluster", "BridgeLogGroup"} {
		if !slices.Contains(block, want) {
			problems = append(problems, fmt.Sprintf("got no resource %s, want it", want))
		}
	}

	// 1. The condition: no bridge resource without an image, all with one.
	for _, image := range []string{"", "123456789012.dkr.ecr.us-east-1.amazonaws.com/evalsched-bridge:1"} {
		deployed, err := f.deployedResources(f.parameterValues(map[string]string{"BridgeImage": image}))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, id := range block {
			if _, ok := deployed[id]; ok != (image != "") {
				problems = append(problems, fmt.Sprintf("BridgeImage %q: %s deployed %v, want %v", image, id, ok, image != ""))
			}
		}
		if _, ok := deployed["SandboxCluster"]; !ok {
			problems = append(problems, fmt.Sprintf("BridgeImage %q: the sandbox cluster is not deployed", image))
		}
	}

	// 2. Every PutMetricData of any role is held to the gateway namespace;
	// the bridge's task role does nothing else.
	all, pr := f.allRoleStatements()
	problems = append(problems, pr...)
	for _, s := range all {
		if s.effect == "Allow" && slices.Contains(s.actions, "cloudwatch:PutMetricData") {
			if got := s.condition("StringEquals", "cloudwatch:namespace"); !slices.Equal(got, []string{"${GatewayMetricNamespace}"}) {
				problems = append(problems, fmt.Sprintf("%s: got cloudwatch:namespace %v on PutMetricData, want [${GatewayMetricNamespace}]", s, got))
			}
		}
	}
	// Its other grant, PutItem of the readings items alone, is held to
	// them by the flow test (depthbridge's TestBridgeUnderTheTemplatesRole).
	task, _ := f.roleStatements("BridgeTaskRole")
	for _, s := range task {
		if s.effect == "Allow" && !slices.Equal(s.actions, []string{"cloudwatch:PutMetricData"}) && !slices.Equal(s.actions, []string{"dynamodb:PutItem"}) {
			problems = append(problems, fmt.Sprintf("%s: got %v, want cloudwatch:PutMetricData or dynamodb:PutItem only", s, s.actions))
		}
	}
	if len(task) != 2 {
		problems = append(problems, fmt.Sprintf("BridgeTaskRole: got %d statements, want two (PutItem of the readings, or PutMetricData)", len(task)))
	}

	// 3. The task and its service.
	td := f.props("BridgeTaskDefinition")
	if r, _, ok := getAtt(td["TaskRoleArn"]); !ok || r != "BridgeTaskRole" {
		problems = append(problems, fmt.Sprintf("BridgeTaskDefinition: got TaskRoleArn %v, want BridgeTaskRole", td["TaskRoleArn"]))
	}
	containers := items(td["ContainerDefinitions"])
	if len(containers) != 1 {
		return append(problems, fmt.Sprintf("BridgeTaskDefinition: got %d containers, want 1", len(containers)))
	}
	if img, ok := ref(path(containers[0], "Image")); !ok || img != "BridgeImage" {
		problems = append(problems, fmt.Sprintf("BridgeTaskDefinition: got Image %v, want !Ref BridgeImage", path(containers[0], "Image")))
	}
	env := map[string]string{}
	for _, e := range items(path(containers[0], "Environment")) {
		n, _ := text(path(e, "Name"))
		v, _ := text(path(e, "Value"))
		env[n] = v
	}
	want := map[string]string{"EVALSCHED_BRIDGE_CONFIG": "${BridgeConfig}"}
	sched := f.env("SchedulerFunction")
	for _, k := range []string{"EVALSCHED_METRIC_NAMESPACE", "EVALSCHED_METRIC_NAME", "EVALSCHED_METRIC_DIMENSION",
		"EVALSCHED_ERROR_METRIC_NAME", "EVALSCHED_CALLS_METRIC_NAME", "EVALSCHED_INSERVICE_METRIC_NAME"} {
		want[k], _ = text(sched[k]) // the names the scheduler reads
	}
	for k, v := range want {
		if env[k] != v || v == "" {
			problems = append(problems, fmt.Sprintf("bridge container: got %s=%q, want %q (the scheduler's)", k, env[k], v))
		}
	}
	svc := f.props("BridgeService")
	if c, _ := ref(svc["Cluster"]); c != "BridgeCluster" {
		problems = append(problems, fmt.Sprintf("BridgeService: got Cluster %v, want BridgeCluster (not the sandboxes': their task events go to the task-events function)", svc["Cluster"]))
	}
	if d, _ := text(svc["TaskDefinition"]); d != "${BridgeTaskDefinition}" {
		problems = append(problems, fmt.Sprintf("BridgeService: got TaskDefinition %v, want BridgeTaskDefinition", svc["TaskDefinition"]))
	}
	if n, _ := text(svc["DesiredCount"]); n != "1" {
		problems = append(problems, fmt.Sprintf("BridgeService: got DesiredCount %v, want 1 (two bridges publish twice)", n))
	}
	if arch, _ := text(path(td, "RuntimePlatform", "CpuArchitecture")); arch != "ARM64" {
		problems = append(problems, fmt.Sprintf("BridgeTaskDefinition: got CpuArchitecture %q, want ARM64 (infra/bridge builds linux/arm64)", arch))
	}

	// 4. The image's Dockerfile runs `evalsched bridge`, built with go.mod's Go.
	docker, err := os.ReadFile(filepath.Join(f.root, "infra", "bridge", "Dockerfile"))
	if err != nil {
		return append(problems, err.Error())
	}
	mod, err := os.ReadFile(filepath.Join(f.root, "go.mod"))
	if err != nil {
		return append(problems, err.Error())
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goVersion == nil || !strings.Contains(string(docker), "/golang:"+string(goVersion[1])+"-") {
		problems = append(problems, fmt.Sprintf("infra/bridge/Dockerfile: want the golang:%s image (go.mod's Go)", goVersion))
	}
	if !strings.Contains(string(docker), `ENTRYPOINT ["/usr/local/bin/evalsched", "bridge"]`) || !strings.Contains(string(docker), "./cmd/evalsched") {
		problems = append(problems, "infra/bridge/Dockerfile: want cmd/evalsched built and `evalsched bridge` as its entrypoint")
	}
	return problems
}
