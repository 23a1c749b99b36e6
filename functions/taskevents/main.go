// Command taskevents is the task-events Lambda: EventBridge delivers each ECS
// Task State Change of the sandbox cluster; the handler moves the job
// (internal/taskevent). Clients are built once per cold start.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/lambdaboot"
	"github.com/evalsched/evalsched/internal/taskevent"
)

func main() {
	lambdaboot.Start("task-events", build, func(h *taskevent.Handler) any { return h.Handle })
}

// build wires the handler from the environment (lambdaboot.Option says
// what opts are for).
func build(ctx context.Context, log *slog.Logger, opts ...lambdaboot.Option) (*taskevent.Handler, error) {
	env, err := lambdaboot.Load(ctx, log, nil, opts...)
	if err != nil {
		return nil, err
	}
	cfg := env.Config
	store := env.Store()
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
