package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/evalsched/evalsched/internal/depthbridge"
	"github.com/evalsched/evalsched/internal/schedulerfn"
)

var bridgeCommand = command{
	name:    "bridge",
	summary: "publish gateways' Prometheus queue depths (vLLM, Envoy, LiteLLM) as the CloudWatch metrics the scheduler reads",
	run:     runBridge,
}

// envBridgeConfig holds the configuration's JSON when --config is not
// given (the ECS service passes it so).
const envBridgeConfig = depthbridge.EnvConfig

func runBridge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bridge", stderr, fmt.Sprintf("usage: %s bridge --config FILE\n\nScrapes the configured Prometheus endpoints every interval (1s) and publishes each\nmodel's queue depth (and calls in service, errors and calls when named): with\nEVALSCHED_DEPTH_SOURCE=dynamodb to one item of the state table\n(EVALSCHED_TABLE_PREFIX) each publish period, else as high-resolution\nCloudWatch metrics, in the namespace, names and dimension the scheduler reads.\nThe cloudwatch fields left empty take EVALSCHED_METRIC_NAMESPACE,\nEVALSCHED_METRIC_NAME, EVALSCHED_METRIC_DIMENSION, EVALSCHED_INSERVICE_METRIC_NAME,\nEVALSCHED_ERROR_METRIC_NAME and EVALSCHED_CALLS_METRIC_NAME, as the scheduler does.\nPresets: %v. See docs/bridge.md.\n\n", programName, depthbridge.Presets()))
	file := fs.String("config", "", "the bridge's JSON configuration `FILE` (default: the JSON in "+envBridgeConfig+")")
	check := fs.Bool("check", false, "validate the configuration, print it with its defaults and exit")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) > 0 {
		return exitUsage
	}
	cfg, err := depthbridge.FromEnv(*file, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s bridge: %v\n", programName, err)
		return exitUsage
	}
	if *check {
		out, _ := json.MarshalIndent(cfg, "", "  ")
		fmt.Fprintf(stdout, "%s\n", out)
		return exitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	aws, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s bridge: aws configuration: %v\n", programName, err)
		return exitFailed
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	api, readings, err := depthbridge.SinkFromEnv(aws, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s bridge: %v\n", programName, err)
		return exitUsage
	}
	b, err := depthbridge.New(api, nil, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "%s bridge: %v\n", programName, err)
		return exitUsage
	}
	b.Readings = readings
	log.Info("bridge: started", "targets", len(cfg.Targets), "interval", cfg.Interval.D().String(), "namespace", cfg.CloudWatch.Namespace, "to_dynamodb", readings != nil)
	_ = b.Run(ctx, schedulerfn.RealClock{})
	return exitOK
}
