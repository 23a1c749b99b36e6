package lambdaboot

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamostore"
)

// Option changes the SDK configuration: none in Lambda; the functions'
// tests add the IAM check of internal/iamcheck, so the role in
// template.yaml is enforced.
type Option = func(*awsconfig.LoadOptions) error

// Env is what a function builds its handler from.
type Env struct {
	Config config.Config
	AWS    aws.Config
	Log    *slog.Logger
}

// Load reads the functions' environment, refuses it when a variable in
// require is unset (naming it), and loads the SDK configuration.
func Load(ctx context.Context, log *slog.Logger, require []string, opts ...Option) (Env, error) {
	cfg, err := config.Load(nil)
	if err == nil && len(require) > 0 {
		err = cfg.Require(require...)
	}
	if err != nil {
		return Env{}, err
	}
	sdk, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return Env{}, err
	}
	return Env{Config: cfg, AWS: sdk, Log: log}, nil
}

// Store is the function's store on the configured tables.
func (e Env) Store() *dynamostore.Store {
	s := dynamostore.New(dynamodb.NewFromConfig(e.AWS), dynamostore.DefaultTables(e.Config.TablePrefix), e.Config.DefaultModel())
	s.Log = e.Log
	return s
}

// Start is a function's main: it builds the handler once and hands its
// entry point (handle) to the Lambda runtime, or logs why it cannot and
// exits 1.
func Start[H any](name string, build func(context.Context, *slog.Logger, ...Option) (H, error), handle func(H) any) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := build(context.Background(), log)
	if err != nil {
		log.Error(name+" cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(handle(h))
}
