// Command results is the results Lambda: SQS delivers the verdicts
// sandboxes send to the results queue (ReportBatchItemFailures on); the
// handler records each on its job per attempt and dead-letters the invalid
// ones (internal/results). Clients are built once per cold start.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/results"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := build(context.Background(), log)
	if err != nil {
		log.Error("results cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// build wires the handler from the environment; opts go to the AWS
// configuration (none in Lambda; the tests add the IAM check of
// internal/iamcheck, so the role in template.yaml is enforced).
func build(ctx context.Context, log *slog.Logger, opts ...func(*awsconfig.LoadOptions) error) (*results.Handler, error) {
	cfg, err := config.Load(nil)
	if err != nil {
		return nil, err
	}
	if err := cfg.Require("EVALSCHED_DLQ_URL"); err != nil {
		return nil, err
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	store := dynamostore.New(dynamodb.NewFromConfig(aws), dynamostore.DefaultTables(cfg.TablePrefix), cfg.DefaultModel())
	store.Log = log
	return &results.Handler{Store: store, DLQ: sqs.NewFromConfig(aws), DLQURL: cfg.DLQURL, Log: log}, nil
}
