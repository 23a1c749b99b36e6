package bill

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// TestMeterBillsTransactionsFromItemSizes: the same write costs in a
// transaction what DynamoDB Local reports for it outside one, plus the
// table's units once more (a transaction bills 2 a KB an item; its index
// upkeep is a standard write), for an item of two KB, with and without an
// index entry.
func TestMeterBillsTransactionsFromItemSizes(t *testing.T) {
	ctx := context.Background()
	raw, err := dynamostore.LocalClient(ctx, endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	tables := dynamostore.DefaultTables("metertest-")
	if err := dynamostore.New(raw, tables, scheduler.ModelConfig{}).CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	defer dropTables(ctx, raw, tables)
	m := NewMeter(raw)
	item := func(pk string, indexed bool) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "JOB"},
			"env": &types.AttributeValueMemberS{Value: strings.Repeat("x", 1500)}, // two KB
		}
		if indexed {
			it["active"] = &types.AttributeValueMemberS{Value: "QUEUE#3"}
			it["seq"] = &types.AttributeValueMemberN{Value: "7"}
			it["waiting"] = &types.AttributeValueMemberN{Value: "4"}
		}
		return it
	}
	for _, indexed := range []bool{false, true} {
		if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.State), Item: item("A", indexed)}); err != nil {
			t.Fatal(err)
		}
		single := m.Take().WRU
		_, err := m.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(tables.State), Item: item("B", indexed)}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		tx := m.Take().WRU
		table := 2.0 // two KB, billed by DynamoDB Local's PutItem as 2
		if tx != single+table {
			t.Errorf("indexed %v: a transaction billed %.0f units, a PutItem %.0f: want %.0f (the table's %0.f once more)", indexed, tx, single, single+table, table)
		}
		t.Logf("indexed %v: PutItem %.0f units (DynamoDB Local), in a transaction %.0f (computed)", indexed, single, tx)
	}
}

// TestMeasuredResultsHandlerRefusesWithoutPanic: the results handler the
// measure builds sends a refused result to its dead-letter queue (kept,
// with the reason) instead of panicking on a nil one.
func TestMeasuredResultsHandlerRefusesWithoutPanic(t *testing.T) {
	dlq := &deadLetters{}
	h := resultsHandler(nil, dlq, slog.New(slog.DiscardHandler), time.Now)
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: "not json"}}})
	if err != nil || len(resp.BatchItemFailures) != 0 || len(dlq.reasons) != 1 || dlq.reasons[0] == "" {
		t.Errorf("a malformed result: %+v, %v, dead letters %q; want one, with its reason", resp, err, dlq.reasons)
	}
}
