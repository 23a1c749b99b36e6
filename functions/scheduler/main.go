// Command scheduler is the scheduler Lambda: invoked once a minute by
// EventBridge for each shard ({"shard": k}; EVALSCHED_SHARDS of them), it
// runs a scheduler pass over that shard's models in each ten-second slot of
// the minute under the shard's lease (internal/schedulerfn). Clients are built
// once per cold start; each shard's store, launcher and scheduler on its
// first invocation in this environment.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/depthitem"
	"github.com/evalsched/evalsched/internal/dynamolease"
	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/emf"
	"github.com/evalsched/evalsched/internal/gatewaydepth"
	"github.com/evalsched/evalsched/internal/lambdaboot"
	"github.com/evalsched/evalsched/internal/passloop"
	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/reconcile/ecstasks"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/schedulerfn"
	"github.com/evalsched/evalsched/internal/taskevent"
)

func main() {
	lambdaboot.Start("scheduler", build, func(h *schedulerfn.Handler) any { return h.Handle })
}

// build wires the handler from the environment (lambdaboot.Option says
// what opts are for).
func build(ctx context.Context, log *slog.Logger, opts ...lambdaboot.Option) (*schedulerfn.Handler, error) {
	env, err := lambdaboot.Load(ctx, log, []string{"EVALSCHED_CLUSTER", "EVALSCHED_SUBNETS", "EVALSCHED_DEFAULT_TASK_DEFINITION"}, opts...)
	if err != nil {
		return nil, err
	}
	cfg := env.Config
	// Every shard's configuration is checked at cold start, not at its
	// first invocation: a bad one stops the function with the reason.
	for k := range cfg.Shards {
		if _, err := passConfig(cfg, k); err != nil {
			return nil, err
		}
	}
	aws := env.AWS
	c := clients{ddb: dynamodb.NewFromConfig(aws), ecs: ecs.NewFromConfig(aws), cw: cloudwatch.NewFromConfig(aws)}
	return &schedulerfn.Handler{
		Shards: cfg.Shards,
		Runner: func(shard int) (*schedulerfn.Runner, error) { return shardRunner(cfg, c, shard, log) },
	}, nil
}

// clients are the SDK clients every shard shares.
type clients struct {
	ddb *dynamodb.Client
	ecs *ecs.Client
	cw  *cloudwatch.Client
}

// passConfig is the pass configuration of shard k (config.Config.Pass),
// validated.
func passConfig(cfg config.Config, shard int) (scheduler.Config, error) {
	sc := cfg.Pass(shard)
	if err := sc.Validate(); err != nil {
		return sc, fmt.Errorf("shard %d of %d: %w", shard, cfg.Shards, err)
	}
	return sc, nil
}

// shardRunner wires shard k: a store that sees only its models, a launcher
// with its share of ECS's rate, its lease, its reconciler.
func shardRunner(cfg config.Config, c clients, shard int, log *slog.Logger) (*schedulerfn.Runner, error) {
	sc, err := passConfig(cfg, shard)
	if err != nil {
		return nil, err
	}
	share := cfg.ShardCaps(shard)
	base := log // the runner adds the shard to its own lines
	log = log.With("shard", shard)
	tables := dynamostore.DefaultTables(cfg.TablePrefix)
	store := dynamostore.New(c.ddb, tables, cfg.DefaultModel())
	store.Retention = cfg.JobRetention // launches that fail, the reconciler's ends
	store.Log = log
	store.ScopeToShard(shard, cfg.Shards)
	rec := &reconcile.Reconciler{
		Store: store, Tasks: ecstasks.Tasks{ECS: c.ecs, Cluster: cfg.Cluster}, Log: log,
		Events: taskevent.Config{ProviderErrorCodes: cfg.ProviderErrorCodes, Container: cfg.ContainerName},
	}
	launcher := ecslauncher.New(c.ecs, ecslauncher.Config{
		Cluster: cfg.Cluster, Subnets: cfg.Subnets, SecurityGroups: cfg.SecurityGroups, AssignPublicIP: cfg.AssignPublicIP,
		Capacity: cfg.Capacity, ContainerName: cfg.ContainerName, DefaultTaskDefinition: cfg.DefaultTaskDefinition,
		Rate: share.LaunchRate, Burst: share.LaunchBurst,
	}, log)
	// The bridge's readings item: one read a pass, not a metric query per
	// busy model (docs/cost.md).
	var depths scheduler.DepthReader = &depthitem.Reader{API: c.ddb, Table: tables.State}
	if cfg.DepthSource != config.DepthFromDynamoDB {
		depths = gatewaydepth.New(c.cw, gatewaydepth.Config{
			Namespace: cfg.MetricNamespace, MetricName: cfg.MetricName, Dimension: cfg.MetricDimension, Period: cfg.MetricPeriod,
			ErrorMetricName: cfg.ErrorMetricName, CallsMetricName: cfg.CallsMetricName,
			InServiceMetricName: cfg.InServiceMetricName,
		})
	}
	clock := schedulerfn.RealClock{}
	return &schedulerfn.Runner{
		Shard: shard,
		Scheduler: &scheduler.Scheduler{
			Store:    store,
			Depths:   depths,
			Launcher: launcher,
			Clock:    clock,
			Config:   sc,
			Log:      log,
			Sharing:  cfg.Sharing(shard),
			Loads:    store,    // the shards' loads: SHARDS items in the state table
			Rates:    launcher, // its token bucket follows the shard's share
			// The yield step stops tasks still starting when a model's
			// queue says it has too many jobs (a provider's drop).
			Yield: &scheduler.Yield{InFlight: store, Tiers: store, Stopper: &ecslauncher.Stopper{API: c.ecs, Cluster: cfg.Cluster, Reason: taskevent.YieldReason, Log: log}},
		},
		Lease:     func(owner string) passloop.Lease { return dynamolease.ForShard(c.ddb, tables.State, shard, owner) },
		Clock:     clock,
		Metrics:   os.Stdout,
		Namespace: cfg.EMFNamespace,
		Detail:    emf.Detail(cfg.ModelMetrics),
		Interval:  cfg.PassInterval,
		Passes:    cfg.Passes,
		Reconcile: func(ctx context.Context, now time.Time) (any, error) { return rec.Run(ctx, now) },
		Log:       base,
	}, nil
}
