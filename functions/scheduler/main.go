// Command scheduler is the scheduler Lambda: invoked once a minute by
// EventBridge, it runs a scheduler pass in each ten-second slot of the minute
// under the lease (internal/runner). Clients are built once per cold start.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamolease"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/gatewaydepth"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/runner"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	r, err := build(context.Background(), log)
	if err != nil {
		log.Error("scheduler cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(r.Handle)
}

func build(ctx context.Context, log *slog.Logger) (*runner.Runner, error) {
	cfg, err := config.Load(nil)
	if err == nil {
		err = cfg.Require("EVALSCHED_CLUSTER", "EVALSCHED_SUBNETS", "EVALSCHED_DEFAULT_TASK_DEFINITION")
	}
	if err != nil {
		return nil, err
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	ddb := dynamodb.NewFromConfig(aws)
	tables := dynamostore.DefaultTables(cfg.TablePrefix)
	sc := scheduler.DefaultConfig()
	sc.Tiers, sc.TierWeight, sc.DefaultTier = cfg.Tiers, cfg.TierWeight, cfg.DefaultTier
	sc.GlobalMaxRunning = cfg.GlobalMaxRunning
	sc.MaxLaunchesPerPass = max(1, int(cfg.LaunchRate*cfg.PassInterval.Seconds()))
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	ecsClient := ecs.NewFromConfig(aws)
	store := dynamostore.New(ddb, tables, cfg.DefaultModel())
	rec := &reconcile.Reconciler{
		Store: store, ECS: ecsClient, Cluster: cfg.Cluster, Log: log,
		Events: taskevent.Config{ProviderErrorCodes: cfg.ProviderErrorCodes, Container: cfg.ContainerName},
	}
	launcher := ecslauncher.New(ecsClient, ecslauncher.Config{
		Cluster: cfg.Cluster, Subnets: cfg.Subnets, SecurityGroups: cfg.SecurityGroups, AssignPublicIP: cfg.AssignPublicIP,
		Capacity: cfg.Capacity, ContainerName: cfg.ContainerName, DefaultTaskDefinition: cfg.DefaultTaskDefinition,
		Rate: cfg.LaunchRate, Burst: cfg.LaunchBurst,
	}, log)
	depths := gatewaydepth.New(cloudwatch.NewFromConfig(aws), gatewaydepth.Config{
		Namespace: cfg.MetricNamespace, MetricName: cfg.MetricName, Dimension: cfg.MetricDimension, Period: cfg.MetricPeriod,
	})
	clock := runner.RealClock{}
	return &runner.Runner{
		Scheduler: &scheduler.Scheduler{
			Store:    store,
			Depths:   depths,
			Launcher: launcher,
			Clock:    clock,
			Config:   sc,
			Log:      log,
		},
		Lease:     func(owner string) passloop.Lease { return dynamolease.New(ddb, tables.State, owner) },
		Clock:     clock,
		Metrics:   os.Stdout,
		Namespace: cfg.EMFNamespace,
		Interval:  cfg.PassInterval,
		Passes:    cfg.Passes,
		Reconcile: func(ctx context.Context, now time.Time) (any, error) { return rec.Run(ctx, now) },
		Log:       log,
	}, nil
}
