//go:build probe

package dynamostore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestProbeSubmitRate(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	start := time.Now()
	for i := range 20 {
		submit(t, s, batch("lab", fmt.Sprintf("p%d", i), "b", fmt.Sprintf("m%d", i%5), -1, 1000))
	}
	d := time.Since(start)
	t.Logf("sequential: 20,000 jobs in %v: %.0f jobs/s %v", d, 20000/d.Seconds(), c.stats().ByOp)
	start = time.Now()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				submit(t, s, batch("lab", fmt.Sprintf("q%d-%d", w, i), "b", fmt.Sprintf("m%d", i%5), -1, 1000))
			}
		})
	}
	wg.Wait()
	d = time.Since(start)
	t.Logf("4 parallel: 20,000 jobs in %v: %.0f jobs/s", d, 20000/d.Seconds())
	// small batches
	c.reset()
	start = time.Now()
	for i := range 500 {
		submit(t, s, batch("lab", fmt.Sprintf("r%d", i), "b", fmt.Sprintf("m%d", i%5), -1, 1))
	}
	d = time.Since(start)
	t.Logf("500 one-job batches in %v: %.0f/s %v", d, 500/d.Seconds(), c.stats().ByOp)
	// raw batchwrite of 25 small items
	start = time.Now()
	for i := range 400 {
		var reqs []types.WriteRequest
		for k := range 25 {
			it := key(fmt.Sprintf("R#%d#%d", i, k), "X")
			it["ids"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("%0400d", k)}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		if _, err := dynamoDB(t).BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{s.tables.State: reqs}}); err != nil {
			t.Fatal(err)
		}
	}
	d = time.Since(start)
	t.Logf("raw: 10,000 items in %v: %.0f/s", d, 10000/d.Seconds())
	_ = aws.String
}
