package dynamolease

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/evalsched/evalsched/internal/dynamostore"
	"github.com/evalsched/evalsched/internal/localaws"
	"github.com/evalsched/evalsched/internal/scheduler"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	ctx := context.Background()
	client, err := dynamostore.LocalClient(ctx, localaws.DynamoDB(t))
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
