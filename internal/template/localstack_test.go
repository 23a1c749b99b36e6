package template

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/evalsched/evalsched/internal/dynamostore"
)

var update = flag.Bool("update", false, "rewrite infra/localstack/tables/*.json from dynamostore's Definitions")

// The LocalStack init script creates the tables from
// infra/localstack/tables/<name>.json (aws dynamodb create-table
// --cli-input-json): they must be dynamostore's Definitions too. Run
// `go test ./internal/template/ -run LocalStack -update` after changing them.
func TestLocalStackTables(t *testing.T) {
	dir := filepath.Join("..", "..", "infra", "localstack", "tables")
	const prefix = "evalsched-"
	for _, def := range dynamostore.DefaultTables(prefix).Definitions() {
		name := strings.TrimPrefix(aws.ToString(def.TableName), prefix)
		t.Run(name, func(t *testing.T) {
			want, err := cliJSON(def)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, name+".json")
			if *update {
				data, _ := json.MarshalIndent(want, "", "  ")
				if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			var got any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if !reflect.DeepEqual(got, want) {
				wantText, _ := json.MarshalIndent(want, "", "  ")
				t.Errorf("%s: got\n%s\nwant (dynamostore's Definitions; run with -update)\n%s", file, data, wantText)
			}
		})
	}
}

// cliJSON is a CreateTableInput as the AWS CLI's --cli-input-json takes it:
// the SDK's field names, without the unset fields.
func cliJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return prune(m), nil
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if p := prune(val); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, 0, len(x))
		for _, val := range x {
			out = append(out, prune(val))
		}
		return out
	case string:
		if x == "" {
			return nil
		}
	}
	return v
}
