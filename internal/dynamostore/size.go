package dynamostore

import (
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemBytes is an item's size as DynamoDB bills it: each attribute's name
// and value; a number about one byte per two significant digits plus one;
// a map or list 3 bytes plus one per element (nil item: 0).
func ItemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for _, name := range slices.Sorted(maps.Keys(item)) {
		n += len(name) + valueBytes(item[name])
	}
	return n
}

func valueBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		return 3 + ItemBytes(v.Value) + len(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, e := range v.Value {
			n += (len(e)+1)/2 + 1
		}
		return n
	default:
		return 0
	}
}
