package dynamostore

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// TestLocalClientHonoursTheEndpointVariable builds a client from
// AWS_ENDPOINT_URL_DYNAMODB alone, as the CLI's local mode does.
func TestLocalClientHonoursTheEndpointVariable(t *testing.T) {
	ctx := context.Background()
	tables := newTables(t)
	// Creating tables that exist is fine (the local mode does it at start).
	if err := New(client, tables, defaults()).CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", server.Endpoint)
	c, err := LocalClient(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &tables.State})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, gsi := range out.Table.GlobalSecondaryIndexes {
		names = append(names, *gsi.IndexName)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{ActiveIndex, InflightIndex}) {
		t.Errorf("got indexes %v, want %q and %q", names, ActiveIndex, InflightIndex)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	if _, err := LocalClient(ctx, ""); err == nil {
		t.Error("got a client without any endpoint, want an error")
	}
}
