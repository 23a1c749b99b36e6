package template

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The tables' upgrade and teardown path (docs/deploy.md, "Upgrade" and
// "Teardown"): they hold the jobs and the operator's items, so they outlive
// the stack and are never replaced by an update; their names derive from
// the stack's, so a redeploy under the same name finds them, and adopts
// them with an IMPORT change set of infra/import/tables.yaml, which must
// declare them exactly as template.yaml does.

// checkTablesLifecycle returns what breaks that path; importTmpl is
// infra/import/tables.yaml decoded, deployGuide docs/deploy.md's text.
func checkTablesLifecycle(f *fixture, importTmpl map[string]any, deployGuide string) []string {
	var problems []string
	imported := mapAt(importTmpl, "Resources")
	if _, ok := importTmpl["Transform"]; ok {
		problems = append(problems, "infra/import/tables.yaml: has a Transform, which an IMPORT change set refuses")
	}
	for _, id := range f.ids("AWS::DynamoDB::Table") {
		r := mapAt(f.resources(), id)
		for _, k := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
			if r[k] != "Retain" {
				problems = append(problems, fmt.Sprintf("%s: got %s %v, want Retain (the table outlives the stack and any replacement)", id, k, r[k]))
			}
		}
		if name, _ := text(f.props(id)["TableName"]); !strings.HasPrefix(name, "${AWS::StackName}-") {
			problems = append(problems, fmt.Sprintf("%s: got TableName %q, want ${AWS::StackName}-…: a redeploy under the stack's name finds its tables", id, name))
		}
		if !reflect.DeepEqual(imported[id], r) {
			problems = append(problems, fmt.Sprintf("%s: infra/import/tables.yaml declares it otherwise than template.yaml: copy the resource over (an import must match the template that follows it)", id))
		}
		if !strings.Contains(deployGuide, `"LogicalResourceId": "`+id+`"`) {
			problems = append(problems, fmt.Sprintf("%s: docs/deploy.md's resources to import do not list it", id))
		}
	}
	for id := range imported {
		if f.typeOf(id) != "AWS::DynamoDB::Table" {
			problems = append(problems, fmt.Sprintf("infra/import/tables.yaml: %s is not a table of template.yaml", id))
		}
	}
	return problems
}

func lifecycleInputs(t *testing.T, f *fixture) (map[string]any, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.root, "infra", "import", "tables.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	imp, err := decode(data)
	if err != nil {
		t.Fatalf("infra/import/tables.yaml: %v", err)
	}
	guide, err := os.ReadFile(filepath.Join(f.root, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	return imp, string(guide)
}

func TestTablesLifecycle(t *testing.T) {
	f := load(t)
	imp, guide := lifecycleInputs(t, f)
	for _, p := range checkTablesLifecycle(f, imp, guide) {
		t.Error(p)
	}
}

func TestTablesLifecycleCatchesBreaks(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(f *fixture, imp map[string]any) string
		want   string
	}{
		{"replaced by an update", func(f *fixture, _ map[string]any) string {
			delete(mapAt(f.resources(), "StateTable"), "UpdateReplacePolicy")
			return ""
		}, "StateTable: got UpdateReplacePolicy <nil>, want Retain"},
		{"a name of CloudFormation's", func(f *fixture, _ map[string]any) string {
			delete(f.props("PinsTable"), "TableName")
			return ""
		}, "PinsTable: got TableName"},
		{"a table changed, its import not", func(f *fixture, _ map[string]any) string {
			f.props("ModelsTable")["BillingMode"] = "PROVISIONED"
			return ""
		}, "ModelsTable: infra/import/tables.yaml declares it otherwise"},
		{"the guide forgets a table", func(f *fixture, _ map[string]any) string {
			return `"LogicalResourceId": "PinsTable"`
		}, "PinsTable: docs/deploy.md's resources to import do not list it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := load(t)
			imp, guide := lifecycleInputs(t, f)
			if cut := c.break_(f, imp); cut != "" {
				guide = strings.ReplaceAll(guide, cut, "")
			}
			problems := checkTablesLifecycle(f, imp, guide)
			if !strings.Contains(strings.Join(problems, "\n"), c.want) {
				t.Errorf("problems %q, want one with %q", problems, c.want)
			}
		})
	}
}

// The deploy guide's table names every parameter the template has, with
// its default.
func TestDeployGuideNamesEveryParameter(t *testing.T) {
	f := load(t)
	_, guide := lifecycleInputs(t, f)
	for _, p := range sortedKeys(mapAt(f.tmpl, "Parameters")) {
		def := "(required)"
		if d, ok := f.parameterDefault(p); ok && d == "" {
			def = "empty"
		} else if ok {
			def = "`" + d + "`"
		}
		if row := "| `" + p + "` | " + def + " |"; !strings.Contains(guide, row) {
			t.Errorf("docs/deploy.md's parameter table has no row %q", row)
		}
	}
}
