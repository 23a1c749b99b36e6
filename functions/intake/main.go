// Command intake is the intake Lambda: SQS delivers batch messages from the
// intake queue (ReportBatchItemFailures on); the handler validates them,
// stores their jobs and dead-letters the invalid ones (internal/intake).
// Clients are built once per cold start.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/intake"
	"github.com/evalsched/evalsched/internal/lambdaboot"
)

func main() {
	lambdaboot.Start("intake", build, func(h *intake.Handler) any { return h.Handle })
}

// build wires the handler from the environment (lambdaboot.Option says
// what opts are for).
func build(ctx context.Context, log *slog.Logger, opts ...lambdaboot.Option) (*intake.Handler, error) {
	env, err := lambdaboot.Load(ctx, log, nil, opts...)
	if err != nil {
		return nil, err
	}
	ic, err := intake.ConfigFrom(env.Config)
	if err != nil {
		return nil, err
	}
	return &intake.Handler{
		Store:   env.Store(),
		DLQ:     sqs.NewFromConfig(env.AWS),
		Config:  ic,
		Log:     log,
		Metrics: os.Stdout,
	}, nil
}
