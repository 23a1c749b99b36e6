package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Small builders over the expression package for transaction items.

func name(n string) expression.NameBuilder { return expression.Name(n) }

func value(v any) expression.ValueBuilder { return expression.Value(v) }

// pendingEntry is the path of one entry of a counters item's pending map;
// the key is an RFC 3339 time, whose dots must not split the path.
func pendingEntry(at string) expression.NameBuilder {
	return expression.Name("pending").AppendName(expression.NameNoDotSplit(at))
}

// addTo is "SET path = if_not_exists(path, 0) + delta" for a map entry
// (ADD cannot address a map entry that may not exist yet).
func addTo(u expression.UpdateBuilder, path expression.NameBuilder, delta int64) expression.UpdateBuilder {
	return u.Set(path, expression.Plus(expression.IfNotExists(path, value(0)), value(delta)))
}

// updateItem builds a transaction Update; cond may be unset.
func updateItem(table string, k map[string]types.AttributeValue, u expression.UpdateBuilder, cond expression.ConditionBuilder) (types.TransactWriteItem, error) {
	b := expression.NewBuilder().WithUpdate(u)
	if cond.IsSet() {
		b = b.WithCondition(cond)
	}
	e, err := b.Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(table), Key: k,
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}

// deleteItem builds a transaction Delete with a condition.
func deleteItem(table string, k map[string]types.AttributeValue, cond expression.ConditionBuilder) (types.TransactWriteItem, error) {
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(table), Key: k, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}

// putItem builds an unconditional transaction Put.
func putItem(table string, item map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: item}}
}

// conditionCheck builds a transaction ConditionCheck.
func conditionCheck(table string, k map[string]types.AttributeValue, cond expression.ConditionBuilder) (types.TransactWriteItem, error) {
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(table), Key: k, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}
