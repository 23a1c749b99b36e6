package ecslauncher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
	"github.com/aws/smithy-go"
	"golang.org/x/time/rate"

	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// API is the part of the ECS client the launcher calls.
type API interface {
	RunTask(ctx context.Context, in *ecs.RunTaskInput, opts ...func(*ecs.Options)) (*ecs.RunTaskOutput, error)
}

// Capacity strategies.
const (
	Fargate      = "FARGATE"
	FargateSpot  = "FARGATE_SPOT"
	SpotFallback = "SPOT_FALLBACK" // FARGATE_SPOT, then FARGATE when Spot has no capacity
)

// Config is the sandbox's placement, from the deployment's parameters.
type Config struct {
	Cluster               string
	Subnets               []string
	SecurityGroups        []string
	AssignPublicIP        bool
	Capacity              string // FARGATE (default), FARGATE_SPOT or SPOT_FALLBACK
	ContainerName         string // the container the overrides apply to
	DefaultTaskDefinition string // for jobs whose batch named none
	Rate                  float64
	Burst                 int
	Concurrency           int // RunTask calls in flight at once
	ThrottleRetries       int // further tries of a throttled call within the pass
	Backoff               time.Duration
}

// Validate names the first field that breaks its rule.
func (c Config) Validate() error {
	switch {
	case c.Cluster == "":
		return errors.New("ecslauncher: cluster is required")
	case len(c.Subnets) == 0:
		return errors.New("ecslauncher: at least one subnet is required")
	case c.ContainerName == "":
		return errors.New("ecslauncher: container_name is required")
	case c.Capacity != "" && c.Capacity != Fargate && c.Capacity != FargateSpot && c.Capacity != SpotFallback:
		return fmt.Errorf("ecslauncher: capacity %q is not FARGATE, FARGATE_SPOT or SPOT_FALLBACK", c.Capacity)
	case c.Rate < 0 || c.Burst < 0:
		return errors.New("ecslauncher: rate and burst must not be negative")
	}
	return nil
}

// Launcher implements scheduler.Launcher on ECS.
type Launcher struct {
	api     API
	cfg     Config
	limiter *rate.Limiter
	log     *slog.Logger
}

// New returns a launcher; zero Rate, Burst, Concurrency, ThrottleRetries and
// Backoff take ECS's Fargate defaults (20/s, 100) and 16, 3, 500 ms.
func New(api API, cfg Config, log *slog.Logger) *Launcher {
	cfg.Rate = cmp.Or(cfg.Rate, 20)
	cfg.Burst = cmp.Or(cfg.Burst, 100)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, 16)
	cfg.ThrottleRetries = cmp.Or(cfg.ThrottleRetries, 3)
	cfg.Backoff = cmp.Or(cfg.Backoff, 500*time.Millisecond)
	cfg.Capacity = cmp.Or(cfg.Capacity, Fargate)
	log = cmp.Or(log, slog.Default())
	return &Launcher{api: api, cfg: cfg, limiter: rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst), log: log}
}

// SetRate resizes the token bucket (scheduler.RateSetter): a scheduler shard
// sets it to its share of the account's RunTask rate every pass.
func (l *Launcher) SetRate(perSecond float64, burst int) {
	l.limiter.SetLimit(rate.Limit(perSecond))
	l.limiter.SetBurst(max(1, burst))
}

// Launch starts one task per job, concurrently within the token bucket, and
// returns the results in the order of jobs.
func (l *Launcher) Launch(ctx context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	results := make([]scheduler.LaunchResult, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(l.cfg.Concurrency, len(jobs)) {
		wg.Go(func() {
			for i := range next {
				results[i] = l.launch(ctx, jobs[i])
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// launch runs one job, on Spot first when the strategy says so.
func (l *Launcher) launch(ctx context.Context, j scheduler.Job) scheduler.LaunchResult {
	switch l.cfg.Capacity {
	case SpotFallback:
		r := l.run(ctx, j, FargateSpot)
		if r.Status != scheduler.Retry || !strings.Contains(r.Reason, "capacity") {
			return r
		}
		l.log.Info("no Spot capacity; falling back to on-demand Fargate", "job", j.ID, "model", j.Model)
		return l.run(ctx, j, Fargate)
	default:
		return l.run(ctx, j, l.cfg.Capacity)
	}
}

// run makes the RunTask call, retrying throttling with backoff.
func (l *Launcher) run(ctx context.Context, j scheduler.Job, provider string) scheduler.LaunchResult {
	res := scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt}
	in := l.input(j, provider)
	backoff := l.cfg.Backoff
	for try := 0; ; try++ {
		if err := l.limiter.Wait(ctx); err != nil {
			res.Status, res.Reason = scheduler.Retry, "launch budget: "+err.Error()
			return res
		}
		out, err := l.api.RunTask(ctx, in)
		if err == nil {
			return l.read(j, out)
		}
		var conflict *types.ConflictException
		if errors.As(err, &conflict) && len(conflict.ResourceIds) > 0 {
			// The token was used before: the task exists.
			res.Status, res.TaskARN = scheduler.Launched, conflict.ResourceIds[0]
			return res
		}
		kind, reason := classify(err)
		if kind == scheduler.Retry && isThrottle(err) && try < l.cfg.ThrottleRetries {
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff *= 2
			continue
		}
		if kind == scheduler.Failed {
			l.log.Error("RunTask rejected the job's configuration; the job fails", "job", j.ID, "model", j.Model,
				"task_definition", aws.ToString(in.TaskDefinition), "err", err)
		}
		res.Status, res.Reason = kind, reason
		return res
	}
}

// input builds the RunTask request of one job.
func (l *Launcher) input(j scheduler.Job, provider string) *ecs.RunTaskInput {
	td := j.TaskDefinition
	if td == "" {
		td = l.cfg.DefaultTaskDefinition
	}
	assign := types.AssignPublicIpDisabled
	if l.cfg.AssignPublicIP {
		assign = types.AssignPublicIpEnabled
	}
	in := &ecs.RunTaskInput{
		Cluster:        aws.String(l.cfg.Cluster),
		TaskDefinition: aws.String(td),
		Count:          aws.Int32(1),
		StartedBy:      aws.String(j.ID),
		Group:          aws.String(Group(j.Model)),
		ClientToken:    aws.String(ClientToken(j, provider)),
		NetworkConfiguration: &types.NetworkConfiguration{AwsvpcConfiguration: &types.AwsVpcConfiguration{
			Subnets: l.cfg.Subnets, SecurityGroups: l.cfg.SecurityGroups, AssignPublicIp: assign,
		}},
		Overrides: &types.TaskOverride{ContainerOverrides: []types.ContainerOverride{{
			Name: aws.String(l.cfg.ContainerName), Environment: Environment(j),
		}}},
	}
	if provider == Fargate {
		in.LaunchType = types.LaunchTypeFargate
	} else {
		in.CapacityProviderStrategy = []types.CapacityProviderStrategyItem{{CapacityProvider: aws.String(provider), Weight: 1}}
	}
	return in
}

// read turns a RunTask response into a result: a task, or the first failure.
func (l *Launcher) read(j scheduler.Job, out *ecs.RunTaskOutput) scheduler.LaunchResult {
	res := scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt}
	if len(out.Tasks) > 0 {
		res.Status, res.TaskARN = scheduler.Launched, aws.ToString(out.Tasks[0].TaskArn)
		return res
	}
	if len(out.Failures) == 0 {
		res.Status, res.Reason = scheduler.Retry, "RunTask returned neither a task nor a failure"
		return res
	}
	for _, f := range out.Failures {
		reason, detail := aws.ToString(f.Reason), aws.ToString(f.Detail)
		text := strings.TrimSpace(reason + " " + detail)
		switch {
		case isCapacityFailure(reason):
			res.Status, res.Reason = scheduler.Retry, "capacity: "+text
		case reason == "MISSING" || strings.Contains(strings.ToLower(reason), "not found"):
			l.log.Error("RunTask failure names a missing resource; the job fails", "job", j.ID, "reason", text)
			res.Status, res.Reason = scheduler.Failed, "configuration: "+text
		default:
			res.Status, res.Reason = scheduler.Retry, "ecs failure: "+text
		}
		if res.Status == scheduler.Failed {
			break
		}
	}
	return res
}

func isCapacityFailure(reason string) bool {
	r := strings.ToLower(reason)
	return strings.HasPrefix(r, "resource:") || strings.Contains(r, "capacity") || r == "agent"
}

// classify sorts a RunTask error: failed (the request itself is wrong),
// retry (ECS refused it: throttling, limits — no task), or unknown (a server
// fault or no answer at all, after the SDK's own retries with the same
// idempotency token: ECS may have started the task, so the job is left to
// the reconciler rather than launched again under a new attempt).
func classify(err error) (scheduler.LaunchStatus, string) {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ClientException", "InvalidParameterException", "ClusterNotFoundException",
			"PlatformUnknownException", "PlatformTaskDefinitionIncompatibilityException",
			"AccessDeniedException", "UnsupportedFeatureException", "BlockedException":
			return scheduler.Failed, "configuration: " + api.ErrorCode() + ": " + api.ErrorMessage()
		}
		var resp *awshttp.ResponseError
		if api.ErrorFault() == smithy.FaultServer || (errors.As(err, &resp) && resp.HTTPStatusCode() >= 500) {
			return scheduler.Unknown, "outcome unknown: " + api.ErrorCode() + ": " + api.ErrorMessage()
		}
		return scheduler.Retry, api.ErrorCode() + ": " + api.ErrorMessage()
	}
	return scheduler.Unknown, "outcome unknown: RunTask: " + err.Error()
}

func isThrottle(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	c := api.ErrorCode()
	return c == "ThrottlingException" || c == "RequestLimitExceeded" || c == "TooManyRequestsException"
}

// ClientToken is the idempotency token of one launch: the same job attempt on
// the same capacity gives the same token (ECS allows up to 64 characters).
func ClientToken(j scheduler.Job, provider string) string {
	t := j.ID + "-" + strconv.Itoa(j.Attempt)
	if provider == Fargate {
		t += "-od" // the on-demand fallback is a different request from the Spot try
	}
	return t
}

// Group names the task group of a model.
func Group(model string) string {
	g := "model:" + model
	if len(g) > 255 {
		g = g[:255]
	}
	return g
}

// Environment is the container's environment: the job's own variables
// (validated at intake) plus the sandbox protocol's (package sandboxenv), sorted by name.
func Environment(j scheduler.Job) []types.KeyValuePair {
	env := maps.Clone(j.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[sandboxenv.JobID] = j.ID
	env[sandboxenv.Batch] = j.Account + "/" + j.Project + "/" + j.Batch
	env[sandboxenv.Model] = j.Model
	env[sandboxenv.Attempt] = strconv.Itoa(j.Attempt)
	if !j.SubmittedAt.IsZero() {
		env[sandboxenv.SubmittedAt] = j.SubmittedAt.UTC().Format(time.RFC3339)
	}
	if j.ResultToken != "" {
		// The attempt's alone: RunTask's overrides are the one place it is
		// written out (and ECS's record of the task, which operators read).
		env[sandboxenv.ResultToken] = j.ResultToken.Reveal()
	}
	out := make([]types.KeyValuePair, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, types.KeyValuePair{Name: aws.String(k), Value: aws.String(env[k])})
	}
	return out
}
