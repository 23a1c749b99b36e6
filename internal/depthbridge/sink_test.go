package depthbridge

import (
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/evalsched/evalsched/internal/depthitem"
)

func TestSinkFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	aws := awssdk.Config{Region: "us-east-1"}
	if api, r, err := SinkFromEnv(aws, env()); err != nil || api == nil || r != nil {
		t.Errorf("default: api %v readings %v err %v; want CloudWatch only", api, r, err)
	}
	api, r, err := SinkFromEnv(aws, env("EVALSCHED_DEPTH_SOURCE", "dynamodb", "EVALSCHED_TABLE_PREFIX", "team-"))
	w, ok := r.(*depthitem.Writer)
	if err != nil || api != nil || !ok || !strings.HasPrefix(w.Table, "team-") {
		t.Errorf("dynamodb: api %v readings %#v err %v; want the readings item in team-'s state table", api, r, err)
	}
	if _, _, err := SinkFromEnv(aws, env("EVALSCHED_DEPTH_SOURCE", "s3")); err == nil || !strings.Contains(err.Error(), `"s3" is not`) {
		t.Errorf("s3: %v, want an error naming the value", err)
	}
}
