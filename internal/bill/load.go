package bill

import (
	"fmt"
	"math"
	"time"
)

// Load is the work the bill is for.
type Load struct {
	JobsPerWeek    float64
	Models         int           // model items (configured)
	ActiveModels   int           // models with jobs waiting or running, all month
	PassInterval   time.Duration // between scheduler passes
	JobLength      time.Duration // a job's running time (sets the jobs in flight)
	ActiveBatches  int           // batches with jobs waiting
	Waiting        int           // jobs waiting (stored, never read by a pass)
	JobsPerMessage int           // jobs in one intake message
}

// SeedLoad is the seed system's: 2.5 M jobs a week on 241 models, every one
// of them busy (10,000 active batches are ~41 a model), a pass every 10 s,
// up to 1 M jobs waiting; a job runs 20 minutes (assumed) and batches come
// in messages of 1,000 jobs.
func SeedLoad() Load {
	return Load{
		JobsPerWeek: 2_500_000, Models: 241, ActiveModels: 241, PassInterval: 10 * time.Second,
		JobLength: 20 * time.Minute, ActiveBatches: 10_000, Waiting: 1_000_000, JobsPerMessage: 1000,
	}
}

// Validate names the first field that breaks its rule.
func (l Load) Validate() error {
	switch {
	case l.JobsPerWeek <= 0:
		return fmt.Errorf("jobs-per-week %g must be positive", l.JobsPerWeek)
	case l.Models < 1:
		return fmt.Errorf("models %d must be at least 1", l.Models)
	case l.ActiveModels < 1 || l.ActiveModels > l.Models:
		return fmt.Errorf("active-models %d must be in 1..models (%d)", l.ActiveModels, l.Models)
	case l.PassInterval < time.Second:
		return fmt.Errorf("pass-interval %v must be at least 1s", l.PassInterval)
	case l.JobLength <= 0:
		return fmt.Errorf("job-length %v must be positive", l.JobLength)
	case l.ActiveBatches < l.ActiveModels:
		return fmt.Errorf("active-batches %d must be at least active-models (%d)", l.ActiveBatches, l.ActiveModels)
	case l.Waiting < 0:
		return fmt.Errorf("waiting %d must not be negative", l.Waiting)
	case l.JobsPerMessage < 1 || l.JobsPerMessage > 10_000:
		return fmt.Errorf("jobs-per-message %d must be in 1..10000", l.JobsPerMessage)
	}
	return nil
}

// month is 30 days.
const month = 30 * 24 * time.Hour

// PassesPerMonth is the passes of a month.
func (l Load) PassesPerMonth() float64 { return float64(month / l.PassInterval) }

// JobsPerMonth is the jobs of a month.
func (l Load) JobsPerMonth() float64 { return l.JobsPerWeek * 30 / 7 }

// JobsPerPass is the jobs a pass launches on average.
func (l Load) JobsPerPass() float64 { return l.JobsPerMonth() / l.PassesPerMonth() }

// InFlight is the jobs holding a slot on average (Little's law: the arrival
// rate times the job's length).
func (l Load) InFlight() float64 {
	return math.Round(l.JobsPerMonth() / month.Seconds() * l.JobLength.Seconds())
}
