package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Small builders over the expression package for transaction items.

func name(n string) expression.NameBuilder { return expression.Name(n) }

func value(v any) expression.ValueBuilder { return expression.Value(v) }

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

// writeOne writes one update alone, outside a transaction (1 write unit a
// KB, where a transaction bills 2): false, nil when its condition failed.
func (s *Store) writeOne(ctx context.Context, u *types.Update) (bool, error) {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
	})
	if isConditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}
