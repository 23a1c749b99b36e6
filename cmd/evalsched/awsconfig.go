package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// awsOptions go to every AWS configuration a command loads: none in the
// shipped CLI; the tests add the IAM check of the operator's policy in
// docs/deploy.md (internal/iamcheck), so the policy is enforced.
var awsOptions []func(*awsconfig.LoadOptions) error

// loadAWS loads the usual AWS configuration: credentials and region from
// the environment or profile, AWS_ENDPOINT_URL_<SERVICE> for stand-ins.
func loadAWS(ctx context.Context) (aws.Config, error) {
	return awsconfig.LoadDefaultConfig(ctx, awsOptions...)
}
