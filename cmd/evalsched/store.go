package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamostore"
)

// storeFlags are the flags of the commands that read or edit the tables.
type storeFlags struct {
	prefix *string
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	def := os.Getenv("EVALSCHED_TABLE_PREFIX")
	if def == "" {
		def = "evalsched-"
	}
	return storeFlags{prefix: fs.String("table-prefix", def, "the tables' name `PREFIX` (EVALSCHED_TABLE_PREFIX)")}
}

// open builds the store from the usual AWS configuration: credentials and
// region from the environment or profile, AWS_ENDPOINT_URL_DYNAMODB (or
// AWS_ENDPOINT_URL) for DynamoDB Local or LocalStack.
func (f storeFlags) open(ctx context.Context) (*dynamostore.Store, config.Config, error) {
	cfg, err := config.Load(nil)
	if err != nil {
		return nil, cfg, err
	}
	aws, err := loadAWS(ctx)
	if err != nil {
		return nil, cfg, fmt.Errorf("aws configuration: %w", err)
	}
	if aws.Region == "" {
		return nil, cfg, fmt.Errorf("aws configuration: no region: set AWS_REGION")
	}
	st := dynamostore.New(dynamodb.NewFromConfig(aws), dynamostore.DefaultTables(*f.prefix), cfg.DefaultModel())
	st.Retention = cfg.JobRetention // cancel ends jobs
	return st, cfg, nil
}
