package dynamolease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client the lease calls.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Lease is one invocation's handle on the lease item.
type Lease struct {
	api   API
	table string
	sk    string // which scheduler's lease: one item per shard
	owner string
}

// New returns a handle for owner (e.g. the Lambda request id) on table: the
// lease of a single scheduler, which is shard 0's.
func New(api API, table, owner string) *Lease {
	return ForShard(api, table, 0, owner)
}

// ForShard returns a handle for owner on the lease of shard k. Shards run
// side by side, so each has its own item: sk "SCHEDULER" for shard 0 (the
// item of a single scheduler, so an unsharded invocation still running when
// sharding is turned on excludes shard 0, not every shard) and
// "SCHEDULER#<k>" for the others.
func ForShard(api API, table string, shard int, owner string) *Lease {
	sk := "SCHEDULER"
	if shard > 0 {
		sk = fmt.Sprintf("SCHEDULER#%d", shard)
	}
	return &Lease{api: api, table: table, sk: sk, owner: owner}
}

func (l *Lease) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "LEASE"},
		"sk": &types.AttributeValueMemberS{Value: l.sk},
	}
}

func ms(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// Acquire takes the lease until `until` when it is free, expired or ours; it
// otherwise reports the holder and the holder's until.
func (l *Lease) Acquire(ctx context.Context, now, until time.Time) (bool, string, time.Time, error) {
	item := l.key()
	item["owner"] = &types.AttributeValueMemberS{Value: l.owner}
	item["until"] = ms(until)
	item["until_text"] = &types.AttributeValueMemberS{Value: until.UTC().Format(time.RFC3339)}
	item["acquired_at"] = &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339)}
	_, err := l.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(l.table),
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR #until < :now OR #owner = :me"),
		ExpressionAttributeNames:  map[string]string{"#until": "until", "#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": ms(now), ":me": &types.AttributeValueMemberS{Value: l.owner}},
	})
	if err == nil {
		return true, l.owner, until, nil
	}
	if !conditionFailed(err) {
		return false, "", time.Time{}, fmt.Errorf("acquire lease: %w", err)
	}
	holder, holderUntil, err := l.read(ctx)
	if err != nil {
		return false, "", time.Time{}, err
	}
	return false, holder, holderUntil, nil
}

// Renew extends the lease while it is ours.
func (l *Lease) Renew(ctx context.Context, now, until time.Time) (bool, error) {
	_, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.table),
		Key:                       l.key(),
		UpdateExpression:          aws.String("SET #until = :until, until_text = :text"),
		ConditionExpression:       aws.String("#owner = :me"),
		ExpressionAttributeNames:  map[string]string{"#until": "until", "#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":until": ms(until), ":text": &types.AttributeValueMemberS{Value: until.UTC().Format(time.RFC3339)}, ":me": &types.AttributeValueMemberS{Value: l.owner}},
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("renew lease: %w", err)
	}
	return true, nil
}

// Release gives the lease up if it is still ours.
func (l *Lease) Release(ctx context.Context) error {
	_, err := l.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(l.table),
		Key:                       l.key(),
		ConditionExpression:       aws.String("#owner = :me"),
		ExpressionAttributeNames:  map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": &types.AttributeValueMemberS{Value: l.owner}},
	})
	if err != nil && !conditionFailed(err) {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

func (l *Lease) read(ctx context.Context) (string, time.Time, error) {
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.table), Key: l.key(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read lease: %w", err)
	}
	owner, _ := out.Item["owner"].(*types.AttributeValueMemberS)
	until, _ := out.Item["until"].(*types.AttributeValueMemberN)
	if owner == nil || until == nil {
		return "", time.Time{}, nil // released between our two calls
	}
	n, err := strconv.ParseInt(until.Value, 10, 64)
	if err != nil {
		return owner.Value, time.Time{}, fmt.Errorf("read lease: until %q is not a number", until.Value)
	}
	return owner.Value, time.UnixMilli(n).UTC(), nil
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
