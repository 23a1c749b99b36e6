package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
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

// sqsClient is an SQS client from the usual AWS configuration, which must
// name a region.
func sqsClient(ctx context.Context) (*sqs.Client, error) {
	cfg, err := loadAWS(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION, or a region in your AWS profile")
	}
	return sqs.NewFromConfig(cfg), nil
}
