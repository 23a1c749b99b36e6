package bill

import (
	"fmt"
	"os"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/evalsched/evalsched/internal/emf"
)

// Deployment is what template.yaml sets that the bill depends on.
type Deployment struct {
	SchedulerMB, TaskEventsMB, ResultsMB, IntakeMB int
	ModelMetrics                                   emf.Detail
	TaskStatuses                                   []string // the rule's detail.lastStatus filter (nil: none)
	Alarms, Dashboards                             int
	MetricFilters                                  int     // metrics made from log lines (custom metrics too)
	BridgeVCPU, BridgeGB                           float64 // the bridge's task (0: none in the template)
}

// ReadTemplate reads the deployment from the SAM template at path.
func ReadTemplate(path string) (Deployment, error) {
	var d Deployment
	b, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return d, fmt.Errorf("%s: %w", path, err)
	}
	root := doc.Content[0]
	globalMB := 128
	if g := at(root, "Globals", "Function", "MemorySize"); g != nil {
		globalMB, _ = strconv.Atoi(g.Value)
	}
	mb := func(fn string) int {
		n := at(root, "Resources", fn, "Properties", "MemorySize")
		if n != nil && n.Tag == "!Ref" { // a parameter: its default
			n = at(root, "Parameters", n.Value, "Default")
		}
		if n != nil {
			v, _ := strconv.Atoi(n.Value)
			return v
		}
		return globalMB
	}
	d.SchedulerMB, d.TaskEventsMB, d.ResultsMB, d.IntakeMB = mb("SchedulerFunction"), mb("TaskEventsFunction"), mb("ResultsFunction"), mb("IntakeFunction")
	if n := at(root, "Parameters", "ModelMetrics", "Default"); n != nil {
		d.ModelMetrics = emf.Detail(n.Value)
	}
	if n := at(root, "Resources", "TaskEventsFunction", "Properties", "Events", "SandboxTaskStateChange", "Properties", "Pattern", "detail", "lastStatus"); n != nil {
		for _, s := range n.Content {
			d.TaskStatuses = append(d.TaskStatuses, s.Value)
		}
	}
	if cpu := at(root, "Resources", "BridgeTaskDefinition", "Properties", "Cpu"); cpu != nil {
		v, _ := strconv.ParseFloat(cpu.Value, 64)
		d.BridgeVCPU = v / 1024
		if mem := at(root, "Resources", "BridgeTaskDefinition", "Properties", "Memory"); mem != nil {
			m, _ := strconv.ParseFloat(mem.Value, 64)
			d.BridgeGB = m / 1024
		}
	}
	if res := at(root, "Resources"); res != nil {
		for i := 1; i < len(res.Content); i += 2 {
			switch t := at(res.Content[i], "Type"); {
			case t == nil:
			case t.Value == "AWS::CloudWatch::Alarm":
				d.Alarms++
			case t.Value == "AWS::CloudWatch::Dashboard":
				d.Dashboards++
			case t.Value == "AWS::Logs::MetricFilter":
				if tr := at(res.Content[i], "Properties", "MetricTransformations"); tr != nil {
					d.MetricFilters += len(tr.Content)
				}
			}
		}
	}
	if d.SchedulerMB == 0 || d.TaskEventsMB == 0 {
		return d, fmt.Errorf("%s: no MemorySize for the scheduler or the task-events function", path)
	}
	return d, nil
}

// at walks a mapping node by keys (nil: missing).
func at(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}
