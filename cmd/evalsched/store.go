package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"

	"github.com/evalsched/evalsched/internal/config"
	"github.com/evalsched/evalsched/internal/dynamostore"
)

// storeFlags are the flags of the commands that read or edit the tables.
type storeFlags struct {
	prefix *string
	debug  *bool
	fs     *flag.FlagSet // its Output is the command's stderr
}

// addStoreFlags adds the store's flags to fs, whose output must already be
// the command's stderr (the SDK's log goes there under --debug).
func addStoreFlags(fs *flag.FlagSet) storeFlags {
	def := os.Getenv("EVALSCHED_TABLE_PREFIX")
	if def == "" {
		def = "evalsched-"
	}
	return storeFlags{
		prefix: fs.String("table-prefix", def, "the tables' name `PREFIX` (EVALSCHED_TABLE_PREFIX)"),
		debug:  fs.Bool("debug", false, "print the AWS SDK's own log lines (retries, warnings) on stderr"),
		fs:     fs,
	}
}

// sdkLogger is the AWS SDK's logger for the command: nothing unless
// --debug. The SDK's warnings are not the operator's business (a retried
// call, a checksum it could not check) and would break the progress bar.
func (f storeFlags) sdkLogger() logging.Logger {
	if f.debug != nil && *f.debug {
		return logging.NewStandardLogger(f.fs.Output())
	}
	return logging.Nop{}
}

// localEndpoint reports whether the AWS endpoint override points at this
// machine (DynamoDB Local, LocalStack, evalsched local).
func localEndpoint(envs ...string) bool {
	for _, e := range envs {
		if v := os.Getenv(e); v != "" {
			u, err := url.Parse(v)
			if err != nil {
				return false
			}
			h := u.Hostname()
			ip := net.ParseIP(h)
			return h == "localhost" || strings.HasSuffix(h, ".localhost") || (ip != nil && ip.IsLoopback())
		}
	}
	return false
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
	local := localEndpoint("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
	client := dynamodb.NewFromConfig(aws, func(o *dynamodb.Options) {
		o.Logger = f.sdkLogger()
		// DynamoDB Local's error responses carry no valid CRC32
		// (docs/local-aws.md): the SDK would fail their checksum.
		o.DisableValidateResponseChecksum = o.DisableValidateResponseChecksum || local
	})
	st := dynamostore.New(client, dynamostore.DefaultTables(*f.prefix), cfg.DefaultModel())
	st.Retention = cfg.JobRetention // cancel ends jobs
	return st, cfg, nil
}
