// Command intake is the intake Lambda: SQS delivers batch messages from the
// intake queue (ReportBatchItemFailures on); the handler validates them,
// stores their jobs and dead-letters the invalid ones (internal/intake).
// Clients are built once per cold start.
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
	"github.com/evalsched/evalsched/internal/intake"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := build(context.Background(), log)
	if err != nil {
		log.Error("intake cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// build wires the handler from the environment; opts go to the AWS
// configuration (none in Lambda; the tests add the IAM check of
// internal/iamcheck, so the role in template.yaml is enforced).
func build(ctx context.Context, log *slog.Logger, opts ...func(*awsconfig.LoadOptions) error) (*intake.Handler, error) {
	cfg, err := config.Load(nil)
	if err != nil {
		return nil, err
	}
	ic, err := intake.ConfigFrom(cfg)
	if err != nil {
		return nil, err
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	store := dynamostore.New(dynamodb.NewFromConfig(aws), dynamostore.DefaultTables(cfg.TablePrefix), cfg.DefaultModel())
	store.Log = log
	return &intake.Handler{
		Store:   store,
		DLQ:     sqs.NewFromConfig(aws),
		Config:  ic,
		Log:     log,
		Metrics: os.Stdout,
	}, nil
}
