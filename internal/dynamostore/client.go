package dynamostore

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoDBAPI is the part of the DynamoDB client the store calls; a
// *dynamodb.Client satisfies it, and tests wrap one to count or break calls.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// LocalRegion is the region of clients for a local DynamoDB: any fixed one
// will do, DynamoDB Local keeps one database per region and credentials.
const LocalRegion = "us-east-1"

// LocalClient builds a client for a DynamoDB stand-in (DynamoDB Local,
// LocalStack) at endpoint, or at AWS_ENDPOINT_URL_DYNAMODB (then
// AWS_ENDPOINT_URL) when endpoint is "". It signs with dummy static
// credentials in a fixed region, so no AWS account or profile is touched.
//
// The HTTP client stays the SDK's buildable one: with AWS_CA_BUNDLE set,
// config.WithHTTPClient of a plain *http.Client fails to load.
func LocalClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	}
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	if endpoint == "" {
		return nil, fmt.Errorf("local dynamodb client: no endpoint given and AWS_ENDPOINT_URL_DYNAMODB is not set")
	}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(LocalRegion),
		config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "evalsched local"}, nil
		})),
	)
	if err != nil {
		return nil, fmt.Errorf("local dynamodb client: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		// DynamoDB Local's error responses carry no valid CRC32: without
		// this, every error also logs a checksum warning.
		o.DisableValidateResponseChecksum = true
	}), nil
}
