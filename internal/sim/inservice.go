package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/sim/scenario"
	"github.com/evalsched/evalsched/internal/sim/stream"
)

// The gateway's calls in service to each model's provider, published as a
// metric beside the depth: a deployment that configured
// EVALSCHED_INSERVICE_METRIC_NAME reads it in the same GetMetricData call.
// Below the provider's concurrency it measures the share of a job's life
// spent in a call; at it, it plateaus while the depth rises, so the pass
// learns the knee from it (limits.State.Conc).

// inServiceOf is the in-service datapoint of the depth period starting at
// at: the Maximum of the per-second samples over the period, as CloudWatch
// serves a Maximum; missing with the depth (the same call), and scaled by
// its own 1 + metric_noise·N(0,1), drawn after the depth's from the same
// (model, period) stream so the depth's draws do not move.
func (e *engine) inServiceOf(m int, at time.Duration) (float64, bool) {
	p := cmp.Or(e.sc.DepthPeriodS, scenario.DefaultDepthPeriodS)
	k := int(at/time.Second) / p
	if k < 0 || time.Duration(k*p)*time.Second != at {
		return 0, false
	}
	mx := 0
	for s := k * p; s < (k+1)*p; s++ {
		mx = max(mx, e.inServiceAt(m, s))
	}
	v := float64(mx)
	if missing, _ := e.metricDraw(m, k); missing {
		return 0, false
	}
	if e.sc.MetricNoise > 0 {
		r := rand.New(stream.New(e.sc.Seed, stream.Metric, uint64(m)<<32|uint64(k)))
		r.Float64()     // the depth's missing coin
		r.NormFloat64() // the depth's noise
		v = math.Round(max(0, v*(1+e.sc.MetricNoise*r.NormFloat64())))
	}
	return v, true
}

// inServiceAt is model m's in-service sample of second s: taken, or (a
// delay under a period) the count now.
func (e *engine) inServiceAt(m, s int) int {
	if s < e.nextSample {
		return int(e.models[m].inSvc[s])
	}
	return e.models[m].inService
}

// withInService adds to a depth datapoint of model m, for the period
// ending at end, the calls in service over the same period.
func (e *engine) withInService(dp *scheduler.Depth, m int, end time.Duration) {
	p := time.Duration(cmp.Or(e.sc.DepthPeriodS, scenario.DefaultDepthPeriodS)) * time.Second
	if v, ok := e.inServiceOf(m, end-p); ok {
		dp.InService, dp.InServiceAt = v, dp.At
	}
}
