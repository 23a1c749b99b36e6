// Command taskevents is the task-events Lambda: EventBridge delivers each ECS
// Task State Change of the sandbox cluster; the handler moves the job
// (internal/taskevent). Clients are built once per cold start.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/taskevent"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := build(context.Background(), log)
	if err != nil {
		log.Error("task-events cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// build wires the handler from the environment; opts go to the AWS
// configuration (none in Lambda; the tests add the IAM check of
// internal/iamcheck, so the role in template.yaml is enforced).
func build(ctx context.Context, log *slog.Logger, opts ...func(*awsconfig.LoadOptions) error) (*taskevent.Handler, error) {
	cfg, err := config.Load(nil)
	if err != nil {
		return nil, err
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	store := dynamostore.New(dynamodb.NewFromConfig(aws), dynamostore.DefaultTables(cfg.TablePrefix), cfg.DefaultModel())
	store.Retention = cfg.JobRetention
	return &taskevent.Handler{
		Store:     store,
		Config:    taskevent.Config{ProviderErrorCodes: cfg.ProviderErrorCodes, Container: cfg.ContainerName},
		Log:       log,
		Metrics:   os.Stdout,
		Namespace: cfg.EMFNamespace,
		Detail:    emf.Detail(cfg.ModelMetrics),
	}, nil
}
