package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Tables names the store's three tables.
type Tables struct {
	// State holds what the scheduler writes: jobs, queues, batches,
	// counters and each model's state (key pk, sk; index "active").
	State string
	// Models holds one operator item per model (key "model").
	Models string
	// Pins holds one operator item per pin (key "scope").
	Pins string
}

// DefaultTables names the tables with a prefix, e.g. "evalsched-".
func DefaultTables(prefix string) Tables {
	return Tables{State: prefix + "state", Models: prefix + "models", Pins: prefix + "pins"}
}

// ActiveIndex is the sparse global secondary index of the queues with
// waiting jobs: key "active" ("QUEUE#<bucket>" of the queue's model) and
// "seq", projecting ActiveProjection.
const ActiveIndex = "active"

// InflightIndex is the sparse global secondary index of the jobs holding a
// slot, for the reconciler: key "inflight" (one of a few shards) and
// "claimed_at", with what the reconciler reads projected.
const InflightIndex = "inflight"

// ActiveProjection is what the active index carries of a queue item besides
// its keys (pk, sk, active, seq).
var ActiveProjection = []string{"account", "project", "batch", "model", "tier", "waiting", "next", "size", "backs"}

// Definitions returns the three tables as CreateTable inputs, on-demand.
// They are the one definition of the schema: CreateTables uses them, and the
// SAM template must declare the same (its test should compare with these).
func (t Tables) Definitions() []*dynamodb.CreateTableInput {
	s := types.ScalarAttributeTypeS
	return []*dynamodb.CreateTableInput{
		{
			TableName:   aws.String(t.State),
			BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String(attrPK), AttributeType: s},
				{AttributeName: aws.String(attrSK), AttributeType: s},
				{AttributeName: aws.String(attrActive), AttributeType: s},
				{AttributeName: aws.String(attrSeq), AttributeType: types.ScalarAttributeTypeN},
				{AttributeName: aws.String(attrInflight), AttributeType: s},
				{AttributeName: aws.String(attrClaimed), AttributeType: s},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
			},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName: aws.String(ActiveIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(attrActive), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(attrSeq), KeyType: types.KeyTypeRange},
				},
				// The queue attributes a pass uses, so a Snapshot reads
				// the index alone (~300 read units for 10,000 active
				// queues, where reading the items took 10,000); claims
				// and registrations pay an index write to keep them.
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: ActiveProjection},
			}, {
				IndexName: aws.String(InflightIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(attrInflight), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(attrClaimed), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{
					ProjectionType:   types.ProjectionTypeInclude,
					NonKeyAttributes: []string{"id", "account", "project", "batch", "model", "state", "attempt", "task_arn", "started_at", "timeout_seconds"},
				},
			}},
		},
		{
			TableName:            aws.String(t.Models),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrModel), AttributeType: s}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrModel), KeyType: types.KeyTypeHash}},
		},
		{
			TableName:            aws.String(t.Pins),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrScope), AttributeType: s}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrScope), KeyType: types.KeyTypeHash}},
		},
	}
}

// CreateTables creates the tables that do not exist yet and waits until all
// are active: for tests and the local mode (in AWS the SAM template does it).
func (s *Store) CreateTables(ctx context.Context) error {
	for _, def := range s.tables.Definitions() {
		_, err := s.db.CreateTable(ctx, def)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", aws.ToString(def.TableName), err)
		}
	}
	for _, def := range s.tables.Definitions() {
		if err := s.waitActive(ctx, aws.ToString(def.TableName)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) waitActive(ctx context.Context, table string) error {
	for i := 0; ; i++ {
		out, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", table, err)
		}
		active := out.Table.TableStatus == types.TableStatusActive
		for _, g := range out.Table.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == types.IndexStatusActive
		}
		if active {
			return nil
		}
		if i > 600 {
			return fmt.Errorf("table %s is not active after 5 minutes", table)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
