package depthbridge

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/dynamostore/dynamotest"
	"github.com/evalsched/evalsched/internal/httpfake"
	"github.com/evalsched/evalsched/internal/iamcheck"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestBridgeUnderTheTemplatesRole runs the bridge's writes with
// BridgeTaskRole as template.yaml deploys it, each depth source: with the
// readings item (the default with a bridge) the role may put that item
// and no other item of the state table; with CloudWatch, the metrics in
// the gateway's namespace. Every grant is used (least privilege).
func TestBridgeUnderTheTemplatesRole(t *testing.T) {
	for _, source := range []string{"auto", "cloudwatch"} {
		t.Run(source, func(t *testing.T) {
			ctx := context.Background()
			stack, err := iamcheck.LoadTemplate(map[string]string{"BridgeImage": "bridge:1", "BridgeConfig": "{}", "GatewayDepthSource": source})
			if err != nil {
				t.Fatal(err)
			}
			policy, err := stack.RolePolicy("BridgeTaskRole")
			if err != nil {
				t.Fatal(err)
			}
			check := stack.Checker(policy)
			e := serve(t, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3\n")
			cfg := Config{Targets: []Target{{URL: e.url(), Preset: "vllm"}}}
			var br *Bridge
			var ddb *dynamodb.Client
			table, err := stack.PhysicalName("StateTable")
			if err != nil {
				t.Fatal(err)
			}
			if source == "auto" {
				endpoint := localservers.DynamoDB(t)
				dynamotest.Tables(t, endpoint, strings.TrimSuffix(table, "state"), scheduler.ModelConfig{})
				raw, err := dynamostore.LocalClient(ctx, endpoint)
				if err != nil {
					t.Fatal(err)
				}
				ddb = dynamodb.New(raw.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, check.APIOptions()...) })
				if br, err = New(nil, nil, cfg, nil); err != nil {
					t.Fatal(err)
				}
				br.Readings = &depthitem.Writer{API: ddb, Table: table}
			} else {
				fake := httpfake.NewCloudWatch()
				t.Cleanup(fake.Close)
				cw := cloudwatch.New(cloudwatch.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("t", "t", ""),
					BaseEndpoint: aws.String(fake.URL()), RetryMaxAttempts: 1, APIOptions: check.APIOptions()})
				cfg.CloudWatch.Namespace = "LLMGateway" // the template's default GatewayMetricNamespace
				if br, err = New(cw, nil, cfg, nil); err != nil {
					t.Fatal(err)
				}
			}
			steps(t, br, t0, 2, func(int) { e.set(e.body, http.StatusOK) })
			if d := check.Denied(); len(d) > 0 {
				t.Errorf("BridgeTaskRole refused the bridge's writes:\n%s", check.Report())
			}
			check.RequireExercised(t, "BridgeTaskRole")
			if ddb != nil {
				// Any other item of the state table is refused.
				_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: "MODELS#0"}, "sk": &types.AttributeValueMemberS{Value: "m"}}})
				if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
					t.Errorf("put a model-state item under BridgeTaskRole: %v; want access denied", err)
				}
			}
		})
	}
}
