package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/evalsched/evalsched/internal/config"
)

// The shards' pass configurations split the account's caps exactly.
func TestShardsSplitTheAccountsCaps(t *testing.T) {
	cfg, err := config.Load(func(n string) string {
		return map[string]string{"EVALSCHED_SHARDS": "4", "EVALSCHED_GLOBAL_MAX_RUNNING": "6001", "EVALSCHED_LAUNCH_RATE": "20", "EVALSCHED_LAUNCH_BURST": "100"}[n]
	})
	if err != nil {
		t.Fatal(err)
	}
	var running, perPass, burst int
	var rate float64
	for k := range cfg.Shards {
		sc, err := passConfig(cfg, k)
		if err != nil {
			t.Fatal(err)
		}
		share := cfg.ShardCaps(k)
		running += sc.GlobalMaxRunning
		perPass += sc.MaxLaunchesPerPass
		rate += share.LaunchRate
		burst += share.LaunchBurst
	}
	if running != 6001 || perPass != 200 || math.Abs(rate-20) > 1e-9 || burst != 100 {
		t.Errorf("shares sum to running %d, launches a pass %d, rate %g, burst %d; want 6001, 200, 20, 100", running, perPass, rate, burst)
	}
	if sc, _ := passConfig(cfg, 0); sc.GlobalMaxRunning != 1501 {
		t.Errorf("shard 0: got a cap of %d, want 1501 (the remainder goes to the lowest shard)", sc.GlobalMaxRunning)
	}
	// The static shares are the fallback; each pass shares the whole
	// account's caps by the shards' loads.
	sh := cfg.Sharing(2)
	if sh == nil || sh.Shard != 2 || sh.Shards != 4 || sh.Account.GlobalMaxRunning != 6001 || sh.Account.MaxLaunchesPerPass != 200 ||
		sh.Account.LaunchRate != 20 || sh.Account.LaunchBurst != 100 || sh.MaxAge != 30*time.Second {
		t.Errorf("sharing of shard 2: got %+v, want the account's caps and 3 passes of age", sh)
	}
	one := cfg
	one.Shards = 1
	if one.Sharing(0) != nil {
		t.Error("one scheduler shares nothing")
	}
}

// The function as built from its environment: a schedule target whose shard
// does not match EVALSCHED_SHARDS fails the invocation with the field and
// the rule, before any AWS call.
func TestHandlerRefusesAShardOutsideTheDeployment(t *testing.T) {
	for k, v := range map[string]string{
		"EVALSCHED_SHARDS": "2", "EVALSCHED_CLUSTER": "sandbox", "EVALSCHED_SUBNETS": "subnet-1",
		"EVALSCHED_DEFAULT_TASK_DEFINITION": "evalsched-sandbox", "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
	} {
		t.Setenv(k, v)
	}
	h, err := build(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if h.Shards != 2 {
		t.Errorf("got %d shards, want EVALSCHED_SHARDS", h.Shards)
	}
	// A shard's pass shares the caps by load: it reads and reports loads in
	// the store and resizes the launcher's bucket.
	r, err := h.Runner(1)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Scheduler; s.Sharing == nil || s.Sharing.Shard != 1 || s.Loads == nil || s.Rates == nil {
		t.Errorf("shard 1's scheduler: sharing %+v, loads %v, rates %v; want shard 1 of 2 with both", s.Sharing, s.Loads, s.Rates)
	}
	for _, c := range []struct{ event, want string }{
		{`{"shard": 2}`, "scheduler event: shard: 2 is not an integer in 0..1 (EVALSCHED_SHARDS is 2)"},
		{`{"shard": "0"}`, `scheduler event: shard: "0" is not an integer in 0..1`},
		{`[0]`, "scheduler event: not a JSON object"},
	} {
		_, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(c.event))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.event, err, c.want)
		}
	}
}
