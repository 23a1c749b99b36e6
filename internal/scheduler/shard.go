package scheduler

// Sharding splits the models over N scheduler invocations ("shards") when one
// pass can no longer do all of them in its slot (README, "Scale"). Each shard
// runs the same Pass over the models it owns, under its own lease, with its
// share of the account-wide caps. The two functions here are the whole of the
// decision; the store filters by ShardOf, the Lambda wires Caps.Share.

// ShardOf returns the shard of a model among shards: the 32-bit FNV-1a hash
// of its name, mod shards; shards ≤ 1 gives 0. The hash is part of the
// deployment's state — a model's jobs and counters are read by the shard this
// names — so it must never change: TestShardOfIsStable pins its values.
// It allocates nothing: the store calls it for every active queue of a pass.
func ShardOf(model string, shards int) int {
	if shards <= 1 {
		return 0
	}
	const (
		offset32 = 2166136261
		prime32  = 16777619
	)
	h := uint32(offset32)
	for i := 0; i < len(model); i++ {
		h ^= uint32(model[i])
		h *= prime32
	}
	return int(h % uint32(shards))
}

// Caps are the account-wide limits the shards divide among themselves: each
// is a property of the AWS account (the Fargate quota, ECS's RunTask bucket),
// not of a scheduler, so N schedulers must not each take all of it.
type Caps struct {
	GlobalMaxRunning   int     // tasks holding a slot (Config.GlobalMaxRunning)
	MaxLaunchesPerPass int     // launches a pass may issue (Config.MaxLaunchesPerPass)
	LaunchRate         float64 // RunTask calls a second (the launcher's token bucket)
	LaunchBurst        int     // RunTask burst
}

// Share returns shard's part of the caps over shards (shards ≤ 1: all of
// them). The split is static and even:
//
//	GlobalMaxRunning, MaxLaunchesPerPass   ⌊c/N⌋, plus 1 for shards 0 … (c mod N)−1
//	LaunchRate                             c/N
//	LaunchBurst                            max(1, ⌊c/N⌋)
//
// so the integer shares sum to the account's cap exactly and the rates to its
// rate. MaxLaunchesPerPass is at least 1 (a pass that may launch nothing
// could never drain its queue; Config.Validate insists on 1), so with fewer
// launches a pass than shards the shares sum to N, not to the cap — the
// launcher's bucket, split by rate, still holds the account to its rate.
//
// What a static split cannot do: a busy shard cannot borrow an idle one's
// share. With 4 shards and one busy model, that model gets at most a quarter
// of the account's cap and launch rate.
func (c Caps) Share(shard, shards int) Caps {
	if shards <= 1 {
		return c
	}
	return Caps{
		GlobalMaxRunning:   evenShare(c.GlobalMaxRunning, shard, shards),
		MaxLaunchesPerPass: max(1, evenShare(c.MaxLaunchesPerPass, shard, shards)),
		LaunchRate:         c.LaunchRate / float64(shards),
		LaunchBurst:        max(1, c.LaunchBurst/shards),
	}
}

// evenShare is shard's part of total over shards: ⌊total/shards⌋, plus one
// for each of the lowest total mod shards shards. A negative total gives 0.
func evenShare(total, shard, shards int) int {
	if total <= 0 {
		return 0
	}
	n := total / shards
	if shard < total%shards {
		n++
	}
	return n
}
