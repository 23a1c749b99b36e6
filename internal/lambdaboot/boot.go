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

// Option changes the AWS configuration a function loads: none in Lambda; the
// tests add the IAM check (iamcheck's LoadOption).
type Option = func(*awsconfig.LoadOptions) error

// Build wires a function's handler from the environment.
type Build[H any] func(ctx context.Context, log *slog.Logger, opts ...Option) (H, error)

// Main is a function's main: a JSON logger on standard output, build, then
// lambda.Start of handler(h). A build error is logged as "NAME cannot
// start" and the process exits 1.
func Main[H any](name string, build Build[H], handler func(H) any) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := build(context.Background(), log)
	if err != nil {
		log.Error(name+" cannot start", "err", err)
		os.Exit(1)
	}
	lambda.Start(handler(h))
}

// Env is what every function builds from: its configuration and the AWS
// configuration its SDK clients share.
type Env struct {
	Config config.Config
	AWS    aws.Config
}

// Load reads the configuration, requires the named variables, then loads the
// AWS configuration with opts.
func Load(ctx context.Context, require []string, opts ...Option) (Env, error) {
	cfg, err := config.Load(nil)
	if err == nil && len(require) > 0 {
		err = cfg.Require(require...)
	}
	if err != nil {
		return Env{}, err
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return Env{}, err
	}
	return Env{Config: cfg, AWS: aws}, nil
}

// Store is the jobs' store on DynamoDB with the deployment's tables and
// default model, logging to log.
func (e Env) Store(log *slog.Logger) *dynamostore.Store {
	store := dynamostore.New(dynamodb.NewFromConfig(e.AWS), dynamostore.DefaultTables(e.Config.TablePrefix), e.Config.DefaultModel())
	store.Log = log
	return store
}
