package dynamolease

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/localservers"
	"github.com/evalsched/evalsched/internal/scheduler"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	ctx := context.Background()
	client, err := dynamostore.LocalClient(ctx, localservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	tables := dynamostore.DefaultTables("lease-")
	if err := dynamostore.New(client, tables, scheduler.ModelConfig{}).CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	return client, tables.State
}

func TestLeaseIsExclusiveAndExpires(t *testing.T) {
	ctx := context.Background()
	client, table := setup(t)
	a, b := New(client, table, "invocation-a"), New(client, table, "invocation-b")

	ok, _, _, err := a.Acquire(ctx, t0, t0.Add(70*time.Second))
	if err != nil || !ok {
		t.Fatalf("a: got %v, %v; want the free lease", ok, err)
	}
	ok, holder, until, err := b.Acquire(ctx, t0.Add(5*time.Second), t0.Add(75*time.Second))
	if err != nil || ok || holder != "invocation-a" || !until.Equal(t0.Add(70*time.Second)) {
		t.Fatalf("b: got %v holder %q until %v, %v; want a's lease reported", ok, holder, until, err)
	}
	// a renews; b cannot renew or release what is not its own.
	if ok, err := a.Renew(ctx, t0.Add(10*time.Second), t0.Add(80*time.Second)); !ok || err != nil {
		t.Fatalf("a renew: %v, %v", ok, err)
	}
	if ok, err := b.Renew(ctx, t0.Add(10*time.Second), t0.Add(90*time.Second)); ok || err != nil {
		t.Fatalf("b renew: got %v, %v; want refused", ok, err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, holder, _, _ := b.Acquire(ctx, t0.Add(11*time.Second), t0.Add(90*time.Second)); holder != "invocation-a" {
		t.Fatalf("b's release freed a's lease: holder %q", holder)
	}
	// Past the expiry b takes over, and a has lost it.
	if ok, _, _, err := b.Acquire(ctx, t0.Add(81*time.Second), t0.Add(150*time.Second)); !ok || err != nil {
		t.Fatalf("b after expiry: %v, %v", ok, err)
	}
	if ok, _ := a.Renew(ctx, t0.Add(82*time.Second), t0.Add(160*time.Second)); ok {
		t.Fatal("a renewed a lease b holds")
	}
	// b releases; a may take it again at once.
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, _, err := a.Acquire(ctx, t0.Add(90*time.Second), t0.Add(160*time.Second)); !ok || err != nil {
		t.Fatalf("a after release: %v, %v", ok, err)
	}
}

// Shards pass side by side: each has its own lease item, exclusive among
// the invocations of that shard only. Shard 0's is the single scheduler's.
func TestShardsHaveTheirOwnLease(t *testing.T) {
	ctx := context.Background()
	client, table := setup(t)
	until := t0.Add(70 * time.Second)
	single := New(client, table, "unsharded")
	if ok, _, _, err := single.Acquire(ctx, t0, until); !ok || err != nil {
		t.Fatalf("unsharded: %v, %v", ok, err)
	}
	// Shard 0 is the single scheduler's item: held.
	if ok, holder, _, err := ForShard(client, table, 0, "shard-0").Acquire(ctx, t0, until); ok || err != nil || holder != "unsharded" {
		t.Fatalf("shard 0: got %v holder %q, %v; want the unsharded invocation's lease reported", ok, holder, err)
	}
	// Shards 1 and 2 take their own at the same time.
	for _, k := range []int{1, 2} {
		if ok, _, _, err := ForShard(client, table, k, fmt.Sprintf("shard-%d-a", k)).Acquire(ctx, t0, until); !ok || err != nil {
			t.Fatalf("shard %d: got %v, %v; want its own lease", k, ok, err)
		}
	}
	// A second invocation of shard 1 is refused while the first holds it.
	b := ForShard(client, table, 1, "shard-1-b")
	if ok, holder, _, err := b.Acquire(ctx, t0.Add(time.Second), until); ok || err != nil || holder != "shard-1-a" {
		t.Fatalf("shard 1, second invocation: got %v holder %q, %v; want refused", ok, holder, err)
	}
	// Releasing shard 2 frees shard 2 only.
	if err := ForShard(client, table, 2, "shard-2-a").Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, holder, _, _ := b.Acquire(ctx, t0.Add(2*time.Second), until); ok || holder != "shard-1-a" {
		t.Fatalf("shard 1 after shard 2's release: got %v holder %q; want still refused", ok, holder)
	}
	if ok, _, _, err := ForShard(client, table, 2, "shard-2-b").Acquire(ctx, t0.Add(2*time.Second), until); !ok || err != nil {
		t.Fatalf("shard 2 after its release: %v, %v", ok, err)
	}
}
