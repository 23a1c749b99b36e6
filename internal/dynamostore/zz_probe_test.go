//go:build probe

package dynamostore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestProbeConsumed(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	submit(t, s, batch("lab", "p", "b1", "gpt", -1, 600))
	c := dynamoDB(t)
	q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(s.tables.State), IndexName: aws.String(ActiveIndex),
		KeyConditionExpression: aws.String("#a = :a"), ExpressionAttributeNames: map[string]string{"#a": "active"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: "QUEUE"}},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	t.Logf("query index: %v %+v", err, q.ConsumedCapacity)
	if q.ConsumedCapacity != nil {
		t.Logf("cu %v rcu %v", aws.ToFloat64(q.ConsumedCapacity.CapacityUnits), aws.ToFloat64(q.ConsumedCapacity.ReadCapacityUnits))
	}
	g, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.State), Key: key(queuePK(grant(t0, batch("lab", "p", "b1", "gpt", -1, 1), 1).Models[0].Grants[0].Queue), skQueue), ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	t.Logf("get: %v %+v", err, g.ConsumedCapacity)
	if g.ConsumedCapacity != nil {
		t.Logf("cu %v", aws.ToFloat64(g.ConsumedCapacity.CapacityUnits))
	}
	ch, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(s.tables.State), KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: queuePK(grant(t0, batch("lab", "p", "b1", "gpt", -1, 1), 1).Models[0].Grants[0].Queue)}},
		ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	t.Logf("query chunks (%d items): %v", len(ch.Items), err)
	if ch.ConsumedCapacity != nil {
		t.Logf("cu %v", aws.ToFloat64(ch.ConsumedCapacity.CapacityUnits))
	}
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{s.tables.State: {Keys: []map[string]types.AttributeValue{key(jobPK("x"), skJob), key(countersPK("gpt"), skCounters)}, ConsistentRead: aws.Bool(true)}},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	t.Logf("batchget: %v %+v", err, bg.ConsumedCapacity)
	for _, cc := range bg.ConsumedCapacity {
		t.Logf("cu %v", aws.ToFloat64(cc.CapacityUnits))
	}
	tw, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{putItem(s.tables.State, key("X", "Y"))}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	t.Logf("transact: %v %+v", err, tw.ConsumedCapacity)
	for _, cc := range tw.ConsumedCapacity {
		t.Logf("cu %v wcu %v", aws.ToFloat64(cc.CapacityUnits), aws.ToFloat64(cc.WriteCapacityUnits))
	}
	bw, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{s.tables.State: {{PutRequest: &types.PutRequest{Item: key("X", "Z")}}}}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	t.Logf("bw: %v %+v", err, bw.ConsumedCapacity)
	for _, cc := range bw.ConsumedCapacity {
		t.Logf("cu %v", aws.ToFloat64(cc.CapacityUnits))
	}
	_ = fmt.Sprint
	_ = time.Now
}
