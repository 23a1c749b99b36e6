package lambdaboot

import (
	"context"
	"errors"
	"strings"
	"testing"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

func TestLoadNamesAMissingRequiredVariable(t *testing.T) {
	t.Setenv("EVALSCHED_DLQ_URL", "")
	_, err := Load(context.Background(), []string{"EVALSCHED_DLQ_URL"})
	if err == nil || !strings.Contains(err.Error(), "EVALSCHED_DLQ_URL") {
		t.Fatalf("Load without EVALSCHED_DLQ_URL: err %v, want one naming it", err)
	}
}

func TestLoadPassesItsOptionsToTheAWSConfiguration(t *testing.T) {
	t.Setenv("EVALSCHED_TABLE_PREFIX", "t-")
	t.Setenv("AWS_REGION", "eu-west-1")
	refuse := errors.New("refused by the test's option")
	_, err := Load(context.Background(), nil, func(*awsconfig.LoadOptions) error { return refuse })
	if !errors.Is(err, refuse) {
		t.Fatalf("Load with a failing option: err %v, want %v", err, refuse)
	}
	env, err := Load(context.Background(), nil, awsconfig.WithRegion("us-east-2"))
	if err != nil {
		t.Fatal(err)
	}
	if env.AWS.Region != "us-east-2" || env.Config.TablePrefix != "t-" {
		t.Errorf("got region %q, prefix %q; want us-east-2 (the option's), t- (the environment's)", env.AWS.Region, env.Config.TablePrefix)
	}
}
