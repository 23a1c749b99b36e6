package scheduler

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"testing"
	"time"
)

// The hash decides which scheduler reads a model's jobs: a silent change
// would move every model to another shard between two deployments. These
// values are FNV-1a 32 as published (hash/fnv agrees, below).
func TestShardOfIsStable(t *testing.T) {
	cases := []struct {
		model  string
		shards int
		want   int
	}{
		{"gpt-5.5", 1, 0},
		{"gpt-5.5", 0, 0},  // 0 shards: one scheduler
		{"gpt-5.5", -3, 0}, // nonsense: one scheduler, not a panic
		{"gpt-5.5", 2, 1},
		{"gpt-5.5", 3, 2},
		{"gpt-5.5", 4, 1},
		{"gpt-5.5", 64, 21},
		{"claude-opus-4.8", 2, 0},
		{"claude-opus-4.8", 3, 1},
		{"claude-opus-4.8", 4, 2},
		{"claude-opus-4.8", 64, 34},
		{"gemini-3-pro", 4, 0},
		{"llama-4-405b", 4, 1},
		{"model-000", 4, 3},
		{"model-001", 4, 0},
		{"model-1999", 4, 1},
		{"", 4, 1}, // the offset basis 2166136261 mod 4
	}
	for _, c := range cases {
		if got := ShardOf(c.model, c.shards); got != c.want {
			t.Errorf("ShardOf(%q, %d): got %d, want %d", c.model, c.shards, got, c.want)
		}
	}
}

func TestShardOfIsFNV1a(t *testing.T) {
	for i := range 500 {
		name := fmt.Sprintf("m-%d/%x", i, i*7919)
		h := fnv.New32a()
		h.Write([]byte(name))
		for _, n := range []int{2, 3, 4, 7, 64} {
			if got, want := ShardOf(name, n), int(h.Sum32()%uint32(n)); got != want {
				t.Fatalf("ShardOf(%q, %d): got %d, hash/fnv says %d", name, n, got, want)
			}
		}
	}
}

// 2,000 models over 4 shards: each shard gets 500 ± 10 % (the binomial
// standard deviation is ~19, so ±50 is 2.6 of them; the names are the scale
// benchmark's, so this is the split it measures).
func TestShardOfSpreadsEvenly(t *testing.T) {
	const models, shards = 2000, 4
	count := make([]int, shards)
	for i := range models {
		count[ShardOf(fmt.Sprintf("model-%03d", i), shards)]++
	}
	for k, n := range count {
		if n < 450 || n > 550 {
			t.Errorf("shard %d: got %d models, want 450..550 (all: %v)", k, n, count)
		}
	}
	t.Logf("models per shard: %v", count)
}

func TestCapsShare(t *testing.T) {
	seed := Caps{GlobalMaxRunning: 6000, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}
	cases := []struct {
		name          string
		caps          Caps
		shard, shards int
		want          Caps
	}{
		{"one shard takes everything", seed, 0, 1, seed},
		{"zero shards are one", seed, 0, 0, seed},
		{"four even shares", seed, 3, 4, Caps{GlobalMaxRunning: 1500, MaxLaunchesPerPass: 50, LaunchRate: 5, LaunchBurst: 25}},
		{"the remainder goes to the lowest shards: 0", Caps{GlobalMaxRunning: 10, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}, 0, 3,
			Caps{GlobalMaxRunning: 4, MaxLaunchesPerPass: 67, LaunchRate: 20.0 / 3, LaunchBurst: 33}},
		{"the remainder goes to the lowest shards: 2", Caps{GlobalMaxRunning: 10, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}, 2, 3,
			Caps{GlobalMaxRunning: 3, MaxLaunchesPerPass: 66, LaunchRate: 20.0 / 3, LaunchBurst: 33}},
		{"a cap of 0 admits nothing anywhere", Caps{GlobalMaxRunning: 0, MaxLaunchesPerPass: 4, LaunchRate: 4, LaunchBurst: 4}, 1, 4,
			Caps{GlobalMaxRunning: 0, MaxLaunchesPerPass: 1, LaunchRate: 1, LaunchBurst: 1}},
		{"a pass may always launch one, the burst is at least one", Caps{GlobalMaxRunning: 2, MaxLaunchesPerPass: 2, LaunchRate: 0.1, LaunchBurst: 3}, 3, 4,
			Caps{GlobalMaxRunning: 0, MaxLaunchesPerPass: 1, LaunchRate: 0.025, LaunchBurst: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.caps.Share(c.shard, c.shards); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// The invariants of the split, for every shard count the configuration
// allows: the shares of the running cap sum to it exactly and differ by at
// most one, lower shards never getting less; the rates sum to the rate.
func TestCapsShareSumsToTheCaps(t *testing.T) {
	for shards := 1; shards <= 64; shards++ {
		for _, total := range []int{0, 1, 2, 3, 63, 64, 65, 199, 200, 6000, 6001, 1_000_000} {
			checkShares(t, Caps{GlobalMaxRunning: total, MaxLaunchesPerPass: max(total, 1), LaunchRate: float64(total) + 0.5, LaunchBurst: max(total, 1)}, shards)
		}
	}
}

func FuzzCapsShare(f *testing.F) {
	f.Add(6000, 200, 20.0, 100, 4)
	f.Add(7, 3, 0.1, 1, 64)
	f.Fuzz(func(t *testing.T, running, perPass int, rate float64, burst, shards int) {
		if running < 0 || running > 1_000_000 || perPass < 1 || perPass > 1_000_000 || burst < 1 || burst > 10_000 ||
			shards < 1 || shards > 64 || !(rate >= 0.1 && rate <= 1000) {
			t.Skip()
		}
		checkShares(t, Caps{GlobalMaxRunning: running, MaxLaunchesPerPass: perPass, LaunchRate: rate, LaunchBurst: burst}, shards)
	})
}

func checkShares(t *testing.T, c Caps, shards int) {
	t.Helper()
	var running, perPass int
	var rate float64
	for k := range shards {
		s := c.Share(k, shards)
		running += s.GlobalMaxRunning
		perPass += s.MaxLaunchesPerPass
		rate += s.LaunchRate
		if s.MaxLaunchesPerPass < 1 || s.LaunchBurst < 1 {
			t.Fatalf("%+v over %d, shard %d: got %+v, want at least one launch a pass and a burst of one", c, shards, k, s)
		}
		if s.LaunchBurst > max(1, c.LaunchBurst) {
			t.Fatalf("%+v over %d, shard %d: burst %d above the account's", c, shards, k, s.LaunchBurst)
		}
		if k > 0 {
			prev := c.Share(k-1, shards)
			if d := prev.GlobalMaxRunning - s.GlobalMaxRunning; d < 0 || d > 1 {
				t.Fatalf("%+v over %d: shard %d gets %d, shard %d gets %d; want equal shares, the lower shard at most one more",
					c, shards, k-1, prev.GlobalMaxRunning, k, s.GlobalMaxRunning)
			}
		}
	}
	if running != c.GlobalMaxRunning {
		t.Fatalf("%+v over %d: running shares sum to %d, want %d", c, shards, running, c.GlobalMaxRunning)
	}
	// Launches a pass: the cap exactly, or one a shard when it is smaller.
	if want := max(c.MaxLaunchesPerPass, shards); perPass != want {
		t.Fatalf("%+v over %d: launches a pass sum to %d, want %d", c, shards, perPass, want)
	}
	if math.Abs(rate-c.LaunchRate) > 1e-9*c.LaunchRate {
		t.Fatalf("%+v over %d: rates sum to %g, want %g", c, shards, rate, c.LaunchRate)
	}
}

func TestShareByLoad(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	account := Caps{GlobalMaxRunning: 1000, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}
	s := Sharing{Shard: 0, Shards: 4, Account: account, MaxAge: 30 * time.Second}
	load := func(k, held, demand int) ShardLoad {
		return ShardLoad{Shard: k, Held: held, Demand: demand, At: now.Add(-10 * time.Second)}
	}
	cases := []struct {
		name  string
		own   ShardLoad
		peers []ShardLoad
		want  Caps
	}{
		{"alone busy: all of it", load(0, 0, 5000), []ShardLoad{load(1, 0, 0), load(2, 0, 0), load(3, 0, 0)},
			Caps{GlobalMaxRunning: 1000, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}},
		{"two busy: half each", load(0, 0, 5000), []ShardLoad{load(1, 0, 5000), load(2, 0, 0), load(3, 0, 0)},
			Caps{GlobalMaxRunning: 500, MaxLaunchesPerPass: 100, LaunchRate: 10, LaunchBurst: 50}},
		{"another holds it all: wait for its jobs to end", load(0, 0, 5000), []ShardLoad{load(1, 1000, 5000), load(2, 0, 0), load(3, 0, 0)},
			Caps{GlobalMaxRunning: 0, MaxLaunchesPerPass: 1, LaunchRate: 20.0 / 400, LaunchBurst: 1}},
		{"over my allotment: admit nothing, keep what I hold", load(0, 800, 5000), []ShardLoad{load(1, 100, 5000), load(2, 0, 0), load(3, 0, 0)},
			Caps{GlobalMaxRunning: 800, MaxLaunchesPerPass: 1, LaunchRate: 20.0 / 400, LaunchBurst: 1}},
		{"small demand met in full", load(0, 0, 30), []ShardLoad{load(1, 0, 5000), load(2, 0, 0), load(3, 0, 0)},
			Caps{GlobalMaxRunning: 30, MaxLaunchesPerPass: 30, LaunchRate: 3, LaunchBurst: 15}},
		{"silent peers keep their static share", load(0, 0, 5000), nil,
			Caps{GlobalMaxRunning: 250, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}},
		{"a stale report counts what it held, if more than its share", load(0, 0, 5000),
			[]ShardLoad{{Shard: 1, Held: 600, Demand: 600, At: now.Add(-time.Hour)}, load(2, 0, 0), load(3, 0, 0)},
			Caps{GlobalMaxRunning: 400, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}},
		{"my own old report and strangers are ignored", load(0, 0, 5000),
			[]ShardLoad{load(0, 900, 900), load(7, 900, 900), load(1, 0, 0), load(2, 0, 0), load(3, 0, 0)},
			Caps{GlobalMaxRunning: 1000, MaxLaunchesPerPass: 200, LaunchRate: 20, LaunchBurst: 100}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.ShareByLoad(c.own, c.peers, now); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestApportion(t *testing.T) {
	for _, c := range []struct {
		total   int
		weights []int
		want    []int
	}{
		{10, []int{1, 1}, []int{1, 1}},
		{10, []int{30, 10}, []int{8, 2}}, // 7.5, 2.5: the tie goes to the lower index
		{7, []int{5, 5, 5}, []int{3, 2, 2}},
		{0, []int{5}, []int{0}},
		{5, []int{0, -3}, []int{0, 0}},
	} {
		if got := apportion(c.total, c.weights); !slices.Equal(got, c.want) {
			t.Errorf("apportion(%d, %v) = %v, want %v", c.total, c.weights, got, c.want)
		}
	}
}

// FuzzShareByLoad: shards computing their shares from the same reports
// admit at most the free slots together, and launch at most the account's
// budget a pass (beyond the 1 each keeps), whatever the loads.
func FuzzShareByLoad(f *testing.F) {
	f.Add(uint16(1000), uint8(200), uint8(4), []byte{10, 200, 0, 0, 50, 90, 3, 250})
	f.Add(uint16(7), uint8(3), uint8(3), []byte{9, 9, 0, 1, 4, 4})
	f.Fuzz(func(t *testing.T, cap uint16, budget uint8, shards uint8, raw []byte) {
		n := int(shards%8) + 2
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		account := Caps{GlobalMaxRunning: int(cap), MaxLaunchesPerPass: int(budget) + 1, LaunchRate: 20, LaunchBurst: 100}
		loads := make([]ShardLoad, n)
		heldAll := 0
		for k := range n {
			var h, d int
			if 2*k+1 < len(raw) {
				h, d = int(raw[2*k])*4, int(raw[2*k+1])*8
			}
			loads[k] = ShardLoad{Shard: k, Held: h, Demand: d, At: now}
			heldAll += h
		}
		admitted, launches := 0, 0
		for k := range n {
			s := Sharing{Shard: k, Shards: n, Account: account, MaxAge: time.Minute}
			c := s.ShareByLoad(loads[k], loads, now)
			if c.GlobalMaxRunning < loads[k].Held {
				t.Fatalf("shard %d: cap %d below held %d", k, c.GlobalMaxRunning, loads[k].Held)
			}
			admitted += max(0, c.GlobalMaxRunning-loads[k].Held)
			if c.MaxLaunchesPerPass > 1 {
				launches += c.MaxLaunchesPerPass
			}
		}
		if free := max(0, account.GlobalMaxRunning-heldAll); admitted > free {
			t.Fatalf("shards may admit %d together, only %d free (loads %+v)", admitted, free, loads)
		}
		if launches > account.MaxLaunchesPerPass {
			t.Fatalf("shards may launch %d together, budget %d", launches, account.MaxLaunchesPerPass)
		}
	})
}
