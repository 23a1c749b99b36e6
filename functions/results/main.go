// Command results is the results Lambda: SQS delivers the verdicts
// sandboxes send to the results queue (ReportBatchItemFailures on); the
// handler records each on its job per attempt and dead-letters the invalid
// ones (internal/results). Clients are built once per cold start.
package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/evalsched/evalsched/internal/lambdaboot"
	"github.com/evalsched/evalsched/internal/results"
)

func main() {
	lambdaboot.Start("results", build, func(h *results.Handler) any { return h.Handle })
}

// build wires the handler from the environment (lambdaboot.Option says
// what opts are for).
func build(ctx context.Context, log *slog.Logger, opts ...lambdaboot.Option) (*results.Handler, error) {
	env, err := lambdaboot.Load(ctx, log, []string{"EVALSCHED_DLQ_URL"}, opts...)
	if err != nil {
		return nil, err
	}
	return &results.Handler{Store: env.Store(), DLQ: sqs.NewFromConfig(env.AWS), DLQURL: env.Config.DLQURL, Log: log}, nil
}
