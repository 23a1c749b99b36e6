package scheduler

import (
	"time"

	"github.com/evalsched/evalsched/internal/capacity"
)

// Sharding splits the models over N scheduler invocations ("shards") when one
// pass can no longer do all of them in its slot (docs/scale.md). Each shard
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
// share. With 4 shards and one busy model, that model would get at most a
// quarter of the account's cap and launch rate — so it is only the fallback
// of a pass that cannot read the shards' loads (Sharing.ShareByLoad).
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

// ShardLoad is what one shard reports after each pass, for the others to
// share the account's caps by: the slots its models hold and would hold.
type ShardLoad struct {
	Shard int
	// Held counts its models' jobs holding a slot (running and starting)
	// after the pass's claims.
	Held int
	// Demand is the slots its models would hold were the account's cap no
	// bound: Σ demandOf(held, limit, waiting), as Decide computes a
	// model's demand (a paused or disabled model's waiting jobs included:
	// they are demand the moment they resume).
	Demand int
	At     time.Time
}

// Sharing is how a shard's pass shares the account's caps with the other
// shards by their reported loads, instead of the static Caps.Share.
type Sharing struct {
	Shard, Shards int
	Account       Caps // the account-wide caps, split among the shards
	// MaxAge is how old a report may be: an older one (a shard that stopped,
	// or lags) is not trusted to know its own load, and its shard is
	// reserved its static share, or what it last held if more.
	MaxAge time.Duration
}

// ShareByLoad returns this shard's caps for a pass, given its own load now
// and the other shards' last reports (its own report among them is
// ignored). Every shard computes the same split from the same reports:
//
//  1. the account's cap is water-filled over the shards' demands
//     (capacity.Split): a shard's allotment;
//  2. the free slots — the cap less what every shard holds — are apportioned
//     among the shards below their allotment, in proportion to how far
//     below (largest remainder, lower shard first on ties): a shard may
//     admit its portion, so together they admit at most the free slots, even
//     while a shard that used to be alone still holds more than its
//     allotment (it admits nothing until its jobs end);
//  3. the launch budget a pass is water-filled over what each shard may
//     admit, and the rate and burst of ECS's bucket go with it.
//
// A shard with nothing to admit gets 1 launch and a sliver of rate: the
// pass needs ≥ 1, and its cap bounds it anyway. A missing or stale report is
// taken as its shard holding and wanting its static share (or what it last
// held, if more), so a shard starting up or lagging keeps its floor.
func (s Sharing) ShareByLoad(own ShardLoad, peers []ShardLoad, now time.Time) Caps {
	n := max(1, s.Shards)
	if n == 1 {
		return s.Account
	}
	held := make([]int, n)
	demand := make([]int, n)
	fresh := make([]bool, n)
	for _, l := range peers {
		if l.Shard < 0 || l.Shard >= n || l.Shard == s.Shard {
			continue
		}
		held[l.Shard], demand[l.Shard] = max(0, l.Held), max(0, l.Held, l.Demand)
		fresh[l.Shard] = s.MaxAge <= 0 || now.Sub(l.At) <= s.MaxAge
	}
	held[s.Shard], demand[s.Shard], fresh[s.Shard] = max(0, own.Held), max(0, own.Held, own.Demand), true
	for k := range n {
		if !fresh[k] {
			floor := s.Account.Share(k, n).GlobalMaxRunning
			held[k] = max(held[k], floor)
			demand[k] = held[k]
		}
	}

	allot := capacity.Split(s.Account.GlobalMaxRunning, demand)
	free := s.Account.GlobalMaxRunning
	unmet := make([]int, n)
	for k := range n {
		free -= held[k]
		unmet[k] = max(0, allot[k]-held[k])
	}
	admit := apportion(max(0, free), unmet)
	budget := capacity.Split(s.Account.MaxLaunchesPerPass, admit)

	mine := budget[s.Shard]
	share := float64(mine) / float64(max(1, s.Account.MaxLaunchesPerPass))
	return Caps{
		GlobalMaxRunning:   held[s.Shard] + admit[s.Shard],
		MaxLaunchesPerPass: max(1, mine),
		LaunchRate:         max(s.Account.LaunchRate*share, s.Account.LaunchRate/float64(100*n)),
		LaunchBurst:        max(1, int(float64(s.Account.LaunchBurst)*share)),
	}
}

// apportion splits total in proportion to weights, in integers summing to
// min(total, Σ weights) and never above a weight: the largest remainders
// get the units left, the lower index first on ties.
func apportion(total int, weights []int) []int {
	out := make([]int, len(weights))
	sum := 0
	for _, w := range weights {
		sum += max(0, w)
	}
	if total <= 0 || sum == 0 {
		return out
	}
	if total >= sum {
		for i, w := range weights {
			out[i] = max(0, w)
		}
		return out
	}
	given := 0
	rem := make([]int, len(weights)) // remainders, scaled by sum
	for i, w := range weights {
		w = max(0, w)
		out[i] = total * w / sum
		rem[i] = total * w % sum
		given += out[i]
	}
	for ; given < total; given++ {
		best := -1
		for i := range weights {
			if out[i] < max(0, weights[i]) && (best < 0 || rem[i] > rem[best]) {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
	}
	return out
}

// LoadNow is a shard's load as its snapshot shows it, before its pass: the
// limits are the last pass's (a model never steered counts its initial
// limit).
func LoadNow(shard int, snap Snapshot, now time.Time) ShardLoad {
	waiting := map[string]int{}
	for _, q := range snap.Queues {
		waiting[q.Model] += q.Waiting
	}
	l := ShardLoad{Shard: shard, At: now}
	for _, m := range snap.Models {
		held := m.Running + m.Starting
		limit := m.State.Limit.Limit
		if limit == 0 {
			limit = initialLimit(m.Config)
		}
		l.Held += held
		l.Demand += demandOf(held, limit, waiting[m.Config.Name])
	}
	return l
}

// LoadAfter is a shard's load after its pass claimed jobs under plan: what
// it reports to the others.
func LoadAfter(shard int, plan Plan, claimed []Job, now time.Time) ShardLoad {
	n := map[string]int{}
	for _, j := range claimed {
		n[j.Model]++
	}
	l := ShardLoad{Shard: shard, At: now}
	for _, mp := range plan.Models {
		held := mp.Running + mp.Starting + n[mp.Model]
		l.Held += held
		l.Demand += demandOf(held, mp.State.Limit.Limit, mp.Waiting-n[mp.Model])
	}
	return l
}
