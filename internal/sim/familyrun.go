package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evalsched/evalsched/internal/sim/scenario"
)

// The family's targets (scenarios/README.md, "Scenario family").
const (
	laneMaxBlocked     = 0.10 // a lane meets with blocked ≤ this …
	laneMinThroughput  = 0.95 // … and throughput ≥ this × oracle's
	burstMinThroughput = 0.80 // an error-burst lane: throughput ≥ this × oracle's …
	burstMaxRecoveryS  = 180  // … and back to the pre-burst limit within this of the provider healing
	FamilyMinMeeting   = 0.90 // share of lanes that meet
	FamilyMaxMedian    = 0.05 // median blocked share
	FamilyMaxBlocked   = 0.25 // no lane above (a drop lane: dropMaxBlocked)

	// A lane whose provider's capacity drops (twin.go) is judged against
	// its twin bound: blocked ≤ max(laneMaxBlocked, twin + dropLaneSlack),
	// the family's max ≤ max(FamilyMaxBlocked, twin + dropFamilySlack).
	dropLaneSlack   = 0.03
	dropFamilySlack = 0.05
	// dropPasses is how many passes from the first that can see a drop the
	// limit has to reach the dropped knee (dropKneeMet).
	dropPasses = 2
)

// LaneResult is one lane: dynamic against its oracle.
//
// Throughput is work (Result.Work: succeeded jobs and the share of calls
// made of the jobs still running), dynamic's over the oracle's; the
// oracle is the best fixed cap whose blocked share is at most dynamic's on
// the lane, or oracleFloor (laneOracleAt). The old judge (the oracle held
// to laneMaxBlocked, succeeded jobs only, drop lanes as any other) is
// reported beside it, Old*.
type LaneResult struct {
	Lane        int     `json:"lane"`
	Scenario    string  `json:"scenario"`
	Models      int     `json:"models"`
	Concurrency []int   `json:"provider_concurrency"`
	DurationS   int     `json:"duration_s"`
	Succeeded   int     `json:"succeeded"`
	Work        float64 `json:"work"`
	OracleWork  float64 `json:"oracle_work"`
	Throughput  float64 `json:"throughput_vs_oracle"` // dynamic / oracle work
	Blocked     float64 `json:"blocked_share"`
	OracleBar   float64 `json:"oracle_bar"` // the blocked share the oracle was held to
	OracleBlock float64 `json:"oracle_blocked_share"`
	OracleCaps  []int   `json:"oracle_caps"`
	// AnyCapWork is the most work of any swept cap, whatever it blocked
	// (the oracle keeps to the lane's blocked bar); ThroughputAny is
	// dynamic's against it, for the record, not judged.
	AnyCapWork    float64 `json:"any_cap_work"`
	AnyCapBlock   float64 `json:"any_cap_blocked_share"`
	ThroughputAny float64 `json:"throughput_vs_any_cap"`
	DepthRatio    float64 `json:"p90_depth_over_target"` // the worst model's p90 depth / target depth
	SmallBatches  int     `json:"small_batches"`
	// SmallAdmitS is the latest first admit of the lane's small batches,
	// seconds after their arrival; null without small batches or when one
	// was never admitted (SmallNever).
	SmallAdmitS *float64 `json:"small_first_admit_s"`
	SmallNever  bool     `json:"small_never_admitted"`
	Burst       bool     `json:"error_burst"`
	// RecoveryS is, for an error-burst lane, the longest time from the
	// provider healing to the first pass with the breaker closed and the
	// limit back at its pre-burst value; null when some burst never got
	// there within the run.
	RecoveryS *float64 `json:"recovery_s"`
	// A drop lane (its provider's capacity drops): the twin bound's best
	// blocked share (-1: none kept its throughput), the lane's blocked
	// bar and the family's max for it, and whether the limit met the
	// dropped knee (dropKneeMet; DropNote says how it missed).
	Drop       bool    `json:"capacity_drop"`
	TwinBest   float64 `json:"twin_best_blocked,omitempty"`
	MaxBlocked float64 `json:"max_blocked"` // the lane's blocked bar
	FamilyMax  float64 `json:"family_max_blocked"`
	DropKnee   bool    `json:"drop_knee_met,omitempty"`
	DropNote   string  `json:"drop_knee_note,omitempty"`
	Meets      bool    `json:"meets"`
	Missed     string  `json:"missed,omitempty"` // which rules it broke
	// The old judge: the oracle the most succeeded jobs within
	// laneMaxBlocked; blocked ≤ laneMaxBlocked on every lane.
	OldOracleJobs int     `json:"old_oracle_succeeded"`
	OldThroughput float64 `json:"old_throughput_vs_oracle"`
	OldMeets      bool    `json:"old_meets"`
	OldMissed     string  `json:"old_missed,omitempty"`
	Runs          int     `json:"runs"` // simulations: dynamic and the oracle's sweep (run, or kept by an OracleCache)
	WallS         float64 `json:"wall_s"`
}

// FamilySummary is the family's verdict.
type FamilySummary struct {
	Seed        int64   `json:"seed"`
	Lanes       int     `json:"lanes"`
	Meeting     int     `json:"meeting"`
	MeetShare   float64 `json:"meeting_share"`
	MedianBlock float64 `json:"median_blocked"`
	MaxBlock    float64 `json:"max_blocked"`
	MaxLane     int     `json:"max_blocked_lane"`
	// OverMax counts the lanes above their family max (FamilyMaxBlocked,
	// a drop lane's from its twin bound); the target is none.
	OverMax     int     `json:"lanes_over_max_blocked"`
	MedianThr   float64 `json:"median_throughput_vs_oracle"`
	MedianAny   float64 `json:"median_throughput_vs_any_cap"`
	MedianDepth float64 `json:"median_p90_depth_over_target"`
	SmallLanes  int     `json:"small_batch_lanes"`
	SmallNever  int     `json:"small_never_admitted"`    // lanes with a small batch never admitted
	SmallAdmit  float64 `json:"small_first_admit_p90_s"` // over the lanes whose small batches were all admitted
	BurstLanes  int     `json:"burst_lanes"`
	BurstMeet   int     `json:"burst_lanes_meeting"`
	DropLanes   int     `json:"drop_lanes"`
	DropMeet    int     `json:"drop_lanes_meeting"`
	Pass        bool    `json:"pass"`
	// The old judge's count and verdict (LaneResult.OldMeets; max blocked
	// ≤ FamilyMaxBlocked on every lane).
	OldMeeting   int     `json:"old_meeting"`
	OldMeetShare float64 `json:"old_meeting_share"`
	OldPass      bool    `json:"old_pass"`
	LaneS        float64 `json:"lane_s"` // the lanes' own times, summed
	WallS        float64 `json:"wall_s"` // the whole family, set by the caller
}

// laneOracleAt is the lane's oracle at dynamic's blocked share: the
// point of the sweep with the most work among those blocking at most
// max(blocked, oracleFloor). No fixed cap may then beat dynamic by more
// than the lane's margin without blocking more than dynamic did.
func laneOracleAt(o laneOracle, blocked float64) (sweep, float64) {
	bar := max(blocked, oracleFloor)
	return o.Points[pickAt(o.Points, bar, workOf)], bar
}

// judgeLane measures dynamic's run of a lane against the oracle's.
func judgeLane(sc *scenario.Scenario, dyn *Result, o laneOracle) LaneResult {
	lr := LaneResult{
		Scenario: sc.Name, Models: len(sc.Models), DurationS: sc.DurationS,
		Succeeded: dyn.Totals.Succeeded, Work: round(dyn.Work, 2),
		Blocked: round(laneBlocked(dyn), 4), Runs: 1 + len(o.Points),
		MaxBlocked: laneMaxBlocked, FamilyMax: FamilyMaxBlocked,
	}
	best, bar := laneOracleAt(o, lr.Blocked)
	lr.OracleWork, lr.OracleBlock, lr.OracleCaps, lr.OracleBar = best.Work, best.BlockedShare, best.Caps, bar
	lr.Throughput = workRatio(lr.Work, lr.OracleWork)
	anyCap := o.Points[mostBy(o.Points, func(sweep) bool { return true }, workOf)]
	lr.AnyCapWork, lr.AnyCapBlock = anyCap.Work, anyCap.BlockedShare
	lr.ThroughputAny = workRatio(lr.Work, lr.AnyCapWork)
	lr.OldOracleJobs = o.Points[pick(o.Points)].Succeeded
	lr.OldThroughput = ratio(lr.Succeeded, lr.OldOracleJobs)
	for _, m := range sc.Models {
		lr.Concurrency = append(lr.Concurrency, m.ProviderConcurrency)
		if m.TargetDepth > 0 {
			lr.DepthRatio = math.Max(lr.DepthRatio, round(dyn.Models[m.Name].P90Depth/m.TargetDepth, 2))
		}
	}
	small := scenario.SmallBatches(sc)
	lr.SmallBatches = len(small)
	for _, bi := range small {
		b := dyn.Batches[sc.Batches[bi].Key()]
		if b.FirstAdmitS == nil {
			lr.SmallNever, lr.SmallAdmitS = true, nil
			break
		}
		if lr.SmallAdmitS == nil || *b.FirstAdmitS > *lr.SmallAdmitS {
			lr.SmallAdmitS = b.FirstAdmitS
		}
	}
	bursts := scenario.ErrorBursts(sc)
	lr.Burst = len(bursts) > 0
	if lr.Burst {
		worst := 0.0
		for _, b := range bursts {
			rec, ok := recovery(dyn.Series, b)
			if !ok {
				worst = math.Inf(1)
				break
			}
			worst = math.Max(worst, rec)
		}
		if !math.IsInf(worst, 1) {
			lr.RecoveryS = &worst
		}
	}
	if len(o.Drops) > 0 {
		lr.Drop, lr.TwinBest = true, o.TwinBest
		lr.MaxBlocked, lr.FamilyMax = dropBars(o.TwinBest)
		lr.DropKnee, lr.DropNote = dropKneeMet(sc, dyn.Series, o.Drops)
	}
	lr.Meets, lr.Missed = lr.judge()
	lr.OldMeets, lr.OldMissed = lr.oldJudge()
	return lr
}

// dropBars are a drop lane's blocked bar and the family's max for it,
// from its twin bound's best blocked share (twin < 0: no policy that
// cannot foresee the drop kept its throughput, and the plain bars stand).
func dropBars(twin float64) (lane, family float64) {
	if twin < 0 {
		return laneMaxBlocked, FamilyMaxBlocked
	}
	return round(max(laneMaxBlocked, twin+dropLaneSlack), 4), round(max(FamilyMaxBlocked, twin+dropFamilySlack), 4)
}

// dropKneeMet is the drop lane's extra bar: for each drop, from the first
// pass at or after the first depth datapoint that can show it (SeenAtS),
// within dropPasses passes the limit is at or below the dropped knee, and
// before the pass after those no task still starting beyond the knee is
// left to start (starting ≤ knee − running, none once the running jobs
// fill it). The dropped knee is the slots that keep the dropped provider
// busy (scenario.BusyCap at the concurrency the provider serves then)
// and, as dynamic steers to, a queue of oracleFloor of them. A run that
// ends before the passes is not judged on them.
func dropKneeMet(sc *scenario.Scenario, s *Series, drops []Drop) (bool, string) {
	for _, d := range drops {
		k0 := slices.IndexFunc(s.T, func(t int) bool { return float64(t) >= d.SeenAtS })
		if k0 < 0 {
			continue
		}
		knee := int(math.Ceil(float64(scenario.BusyCap(sc, d.Model, s.Capacity[d.Model][k0])) * (1 + oracleFloor)))
		met := false
		for k := k0; k < min(k0+dropPasses, len(s.T)); k++ {
			met = met || s.Limit[d.Model][k] <= knee
		}
		if !met {
			return false, fmt.Sprintf("limit %d > dropped knee %d %d passes after %.0f s", s.Limit[d.Model][min(k0+dropPasses, len(s.T))-1], knee, dropPasses, d.SeenAtS)
		}
		if k := k0 + dropPasses; k < len(s.T) {
			run, starting := s.Running[d.Model][k], s.Holding[d.Model][k]-s.Running[d.Model][k]
			if starting > max(0, knee-run) {
				return false, fmt.Sprintf("%d tasks starting beyond dropped knee %d (%d running) at %d s", starting-max(0, knee-run), knee, run, s.T[k])
			}
		}
	}
	return true, ""
}

// ratio is jobs over a bar's jobs; 1 when the bar finished none.
func ratio(jobs, bar int) float64 {
	return workRatio(float64(jobs), float64(bar))
}

// workRatio is work over a bar's work; 1 when the bar did none.
func workRatio(work, bar float64) float64 {
	if bar == 0 {
		return 1
	}
	return round(work/bar, 4)
}

// judge applies the lane's rules: blocked ≤ its bar (laneMaxBlocked, a
// drop lane's from its twin bound) and throughput ≥ 0.95 of the oracle's;
// an error-burst lane needs throughput ≥ 0.8 and recovery within 3
// minutes instead of the 0.95; a drop lane meets its dropped knee in time
// (dropKneeMet).
func (lr *LaneResult) judge() (bool, string) {
	missed := lr.rules(lr.MaxBlocked, lr.Throughput)
	if lr.Drop && !lr.DropKnee {
		missed = append(missed, lr.DropNote)
	}
	return len(missed) == 0, strings.Join(missed, "; ")
}

// oldJudge is the judge before issue 40: blocked ≤ laneMaxBlocked on every
// lane, jobs against the oracle held to laneMaxBlocked.
func (lr *LaneResult) oldJudge() (bool, string) {
	missed := lr.rules(laneMaxBlocked, lr.OldThroughput)
	return len(missed) == 0, strings.Join(missed, "; ")
}

// rules are the blocked bar, the burst's recovery, and throughput.
func (lr *LaneResult) rules(maxBlocked, thr float64) []string {
	var missed []string
	if lr.Blocked > maxBlocked {
		missed = append(missed, fmt.Sprintf("blocked %.3f > %.3g", lr.Blocked, maxBlocked))
	}
	minThr := laneMinThroughput
	if lr.Burst {
		minThr = burstMinThroughput
		switch {
		case lr.RecoveryS == nil:
			missed = append(missed, "never recovered the pre-burst limit")
		case *lr.RecoveryS > burstMaxRecoveryS:
			missed = append(missed, fmt.Sprintf("recovery %.0f s > %d s", *lr.RecoveryS, burstMaxRecoveryS))
		}
	}
	if thr < minThr {
		missed = append(missed, fmt.Sprintf("throughput %.3f < %.2f × oracle", thr, minThr))
	}
	return missed
}

// recovery is the time from a burst's end (the provider heals) to the first
// pass at which the breaker admits freely and the limit is back at the
// limit of the last pass before the burst began.
func recovery(s *Series, b scenario.ErrorBurst) (float64, bool) {
	pre := -1
	for k, t := range s.T {
		if float64(t) >= b.FromS {
			break
		}
		pre = s.Limit[b.Model][k]
	}
	for k, t := range s.T {
		if float64(t) < b.ToS {
			continue
		}
		if !s.Held[b.Model][k] && s.Limit[b.Model][k] >= pre {
			return float64(t) - b.ToS, true
		}
	}
	return 0, false
}

// LaneMode is how a lane's dynamic run starts: OracleStart at each
// model's oracle cap (startAt, the ramp bound); Warm with what a first
// run of the lane learned (the learned concurrency, Result.Learned), as a
// second run of the same lanes that keeps the model state would.
type LaneMode struct {
	OracleStart bool
	Warm        bool
}

// runLane runs one lane: the oracle's sweep (or its cached result), then
// dynamic as mode says.
func runLane(sc *scenario.Scenario, k int, cache OracleCache, mode LaneMode) (LaneResult, error) {
	start := time.Now()
	o, err := cache.oracle(sc)
	if err != nil {
		return LaneResult{}, fmt.Errorf("lane %d: %w", k, err)
	}
	run := sc
	if mode.OracleStart {
		run = startAt(sc, o.Points[pickAt(o.Points, laneMaxBlocked, workOf)].Caps)
	}
	var opt Options
	runs := 1
	if mode.Warm {
		first, err := runPolicy(run, Dynamic, Options{})
		if err != nil {
			return LaneResult{}, fmt.Errorf("lane %d: %w", k, err)
		}
		opt.Learned, runs = first.Learned, 2
	}
	dyn, err := runPolicy(run, Dynamic, opt)
	if err != nil {
		return LaneResult{}, fmt.Errorf("lane %d: %w", k, err)
	}
	lr := judgeLane(sc, dyn, o)
	lr.Lane = k
	lr.Runs += runs - 1
	lr.WallS = round(time.Since(start).Seconds(), 2)
	return lr, nil
}

// startAt is sc with each model's initial limit at caps (one a model): a
// run of policy dynamic that begins where the oracle's fixed caps are,
// which no controller knows in advance. Judged against the oracle, the
// family's count measures what a perfect ramp is worth: the lane's steady
// state and its changes are left to the controller (scenarios/README.md,
// "The ramp bound"). sc is not changed.
func startAt(sc *scenario.Scenario, caps []int) *scenario.Scenario {
	c := *sc
	c.Models = slices.Clone(sc.Models)
	for i := range c.Models {
		if i < len(caps) {
			c.Models[i].InitialLimit = caps[i]
		}
	}
	return &c
}

// RunFamily runs the lanes (lane numbers ks, scenarios lanes) on at most
// workers goroutines, their oracles kept in cache (OracleCache; "": none),
// dynamic started as mode says (LaneMode). progress, when set, is called
// after each lane with the lanes done. Results come in lane order whatever
// the workers did.
func RunFamily(lanes []*scenario.Scenario, ks []int, workers int, cache OracleCache, mode LaneMode, progress func(done int, lr LaneResult)) ([]LaneResult, error) {
	return eachLane(lanes, ks, workers, func(sc *scenario.Scenario, k int) (LaneResult, error) { return runLane(sc, k, cache, mode) }, progress)
}

// eachLane runs measure on every lane on at most workers goroutines (a
// lane is one goroutine's work: its runs are sequential) and calls
// progress, when set, after each lane with the lanes done. Results come in
// lane order; the first lane's error, in lane order, fails the whole.
func eachLane[T any](lanes []*scenario.Scenario, ks []int, workers int, measure func(*scenario.Scenario, int) (T, error), progress func(done int, r T)) ([]T, error) {
	out := make([]T, len(lanes))
	errs := make([]error, len(lanes))
	next := make(chan int)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range max(1, min(workers, len(lanes))) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = measure(lanes[i], ks[i])
				mu.Lock()
				done++
				if progress != nil {
					progress(done, out[i])
				}
				mu.Unlock()
			}
		})
	}
	for i := range lanes {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Summarize gives the family's verdict against its targets.
func Summarize(seed int64, lanes []LaneResult) FamilySummary {
	s := FamilySummary{Seed: seed, Lanes: len(lanes), MaxLane: -1}
	if len(lanes) == 0 {
		return s
	}
	blocked := make([]float64, len(lanes))
	thr := make([]float64, len(lanes))
	thrAny := make([]float64, len(lanes))
	depth := make([]float64, len(lanes))
	var admits []float64
	for i, lr := range lanes {
		blocked[i], thr[i], thrAny[i], depth[i] = lr.Blocked, lr.Throughput, lr.ThroughputAny, lr.DepthRatio
		if lr.SmallBatches > 0 {
			s.SmallLanes++
			if lr.SmallNever {
				s.SmallNever++
			} else if lr.SmallAdmitS != nil {
				admits = append(admits, *lr.SmallAdmitS)
			}
		}
		if lr.Meets {
			s.Meeting++
		}
		if lr.OldMeets {
			s.OldMeeting++
		}
		if lr.Blocked > lr.FamilyMax {
			s.OverMax++
		}
		if lr.Drop {
			s.DropLanes++
			if lr.Meets {
				s.DropMeet++
			}
		}
		if lr.Burst {
			s.BurstLanes++
			if lr.Meets {
				s.BurstMeet++
			}
		}
		if s.MaxLane < 0 || lr.Blocked > s.MaxBlock {
			s.MaxBlock, s.MaxLane = lr.Blocked, lr.Lane
		}
		s.LaneS += lr.WallS
	}
	slices.Sort(blocked)
	slices.Sort(thr)
	slices.Sort(thrAny)
	slices.Sort(depth)
	s.MedianDepth = median(depth)
	if len(admits) > 0 {
		slices.Sort(admits)
		s.SmallAdmit = percentile(admits, 0.9)
	}
	s.MeetShare = round(float64(s.Meeting)/float64(len(lanes)), 4)
	s.MedianBlock = median(blocked)
	s.MedianThr = median(thr)
	s.MedianAny = median(thrAny)
	s.OldMeetShare = round(float64(s.OldMeeting)/float64(len(lanes)), 4)
	s.Pass = s.MeetShare >= FamilyMinMeeting && s.MedianBlock <= FamilyMaxMedian && s.OverMax == 0
	s.OldPass = s.OldMeetShare >= FamilyMinMeeting && s.MedianBlock <= FamilyMaxMedian && s.MaxBlock <= FamilyMaxBlocked
	s.LaneS = round(s.LaneS, 1)
	return s
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return round((sorted[n/2-1]+sorted[n/2])/2, 4)
}
