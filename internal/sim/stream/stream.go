package stream

import "math/rand/v2"

// Mix is splitmix64: it scrambles a stream key into a well-spread PCG seed,
// so streams with neighbouring keys (job 41, job 42) are unrelated.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Stream tags: each kind of randomness has its own family of PCG sources, so
// adding draws of one kind never shifts the draws of another.
const (
	Calls     uint64 = iota + 1 // per batch: each job's number of calls, in job order
	Start                       // per batch: each job's container start latency, in job order
	Job                         // per job: its calls' service times, error coins and think times
	FaultPlan                   // per fault source: its episodes (internal/sim/faults)
	FaultDraw                   // per fault kind: the draws made as the run meets opportunities
	Metric                      // per (model, depth period): a datapoint's missing coin and noise
	Infra                       // per (job, attempt): whether its task fails to start
)

// Family keys each family lane's draws: its own stream per (family seed,
// lane) (internal/sim/scenario's family).
const Family uint64 = 0x46 // 'F': apart from the engine's stream tags

// New returns the source of stream (tag, key) under seed.
func New(seed int64, tag, key uint64) *rand.PCG {
	p := &rand.PCG{}
	Seed(p, seed, tag, key)
	return p
}

// Seed sets p to the start of stream (tag, key) under seed, in place.
func Seed(p *rand.PCG, seed int64, tag, key uint64) {
	p.Seed(Mix(uint64(seed)^Mix(tag)), Mix(key^(tag<<56)))
}
