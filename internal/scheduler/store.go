package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/evalsched/evalsched/internal/admission"
	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/resulttoken"
)

// Store is the scheduler's view of its persistent state. Implementations:
// memstore (tests, simulator) and the DynamoDB store.
type Store interface {
	// Snapshot reads what one pass needs: O(models + active queues), never
	// O(waiting jobs).
	Snapshot(ctx context.Context, now time.Time) (Snapshot, error)
	// Commit persists every model's new state, acknowledges the outcomes the
	// plan consumed, and claims the granted jobs (WAITING → CLAIMED), oldest
	// first within each queue. read is the Versions of the Snapshot the plan
	// was decided on (nil for a plan made without one: tests, tools).
	//
	// It returns exactly the jobs it claimed: a job is claimed at most once,
	// even across overlapping or crashed passes. It may claim fewer than
	// granted when jobs were cancelled meanwhile. When another pass wrote a
	// model's state since read, the plan was decided on counts that no longer
	// hold: Commit claims nothing and names those models in Stale.
	Commit(ctx context.Context, plan Plan, read Versions) (Committed, error)
	// RecordLaunches moves claimed jobs to LAUNCHED, back to WAITING with
	// attempt+1, or to FAILED past their attempts.
	RecordLaunches(ctx context.Context, now time.Time, results []LaunchResult) error
}

// DepthReader reads the newest gateway queue depth of each model.
type DepthReader interface {
	// Depths returns a datapoint per model it has one for; a model without a
	// datapoint is missing from the map (the limit then holds).
	Depths(ctx context.Context, models []string, now time.Time) (map[string]Depth, error)
}

// Launcher starts one task per job.
type Launcher interface {
	// Launch returns one result per job, in any order.
	Launch(ctx context.Context, jobs []Job) []LaunchResult
}

// InFlightLister lists the jobs holding a slot (the stores; the
// reconciler reads the same listing).
type InFlightLister interface {
	InFlight(ctx context.Context) ([]InFlight, error)
}

// JobTierReader reads the tier each job was admitted under (the tier its
// claim recorded), by id, for the yield step's order; ids it does not
// find are left out.
type JobTierReader interface {
	JobTiers(ctx context.Context, ids []string) (map[string]int, error)
}

// TaskStopper stops the tasks of jobs still starting, for the yield step:
// the scheduler Lambda's calls ECS StopTask with taskevent.YieldReason, and
// each job goes back to waiting, its attempt not spent, once its STOPPED
// event arrives. It returns how many it stopped; a failed stop is joined
// into the error and the job starts as it would have.
type TaskStopper interface {
	Stop(ctx context.Context, jobs []InFlight) (int, error)
}

// Clock tells the time; the simulator's clock is simulated.
type Clock interface{ Now() time.Time }

// Depth is what the gateway's metrics say of one model: the newest queue
// depth datapoint and, when the operator configured the error metric, the
// newest error rate.
type Depth struct {
	Value float64   // the gateway queue depth: the Average over the period, the mean queue
	At    time.Time // end of the depth's period; zero: no datapoint
	// ErrorRate is the share of the model's gateway calls the provider
	// answered with an error (429/5xx) in the newest period that had calls,
	// in [0, 1]. It goes to the breaker, which closes on it once the
	// provider heals instead of waiting for whole jobs to end.
	ErrorRate float64
	Calls     float64   // the calls in that period (> 0 when ErrorAt is set)
	ErrorAt   time.Time // end of that period; zero: no metric configured, or no calls
	// InService is the gateway's calls in service to the model's provider,
	// the Maximum over the depth's period, when the operator configured
	// that metric; it goes to the limit controller, which learns the
	// provider's concurrency and the knee from it (limits.Input).
	InService   float64
	InServiceAt time.Time // end of its period (= At); zero: no metric configured, or no datapoint
}

// ModelConfig is the operator's item for one model, already validated by the
// store (a malformed item is skipped with a warning in Snapshot.Warnings).
type ModelConfig struct {
	Name        string
	Enabled     bool // false: admit nothing, keep the limit
	MinLimit    int
	MaxLimit    int
	TargetDepth float64
	LimitPin    int // > 0: the operator fixed the limit
	// InitialLimit is the limit of a model the scheduler has never steered.
	InitialLimit int
	// ProviderConcurrency is the calls the gateway sends the model's
	// provider at once before it queues, as the operator configured it
	// (0: not configured). With the gateway's in-service metric it tells
	// the limit controller the knee before any queue shows it
	// (limits.Model.Conc).
	ProviderConcurrency int
}

// ModelState is what a pass carries to the next one for a model.
type ModelState struct {
	Limit     limits.State
	Breaker   breaker.State
	Admission admission.State
	// Ended is the model's smoothed end rate, for forecasts (status); no
	// decision reads it.
	Ended EndRate
}

// Model is one model as the pass sees it.
type Model struct {
	Config ModelConfig
	State  ModelState
	// Running counts tasks running; Starting counts jobs claimed or launched
	// and not yet running. Both hold a slot and count toward the caps.
	Running  int
	Starting int
	// PendingRaise counts the Starting jobs claimed at or before
	// State.Limit.Mark() (all of them while the mark is zero).
	PendingRaise int
	// Outcomes are the jobs that ended since they were last acknowledged.
	Outcomes breaker.Outcomes
}

// Queue is the waiting jobs of one batch for one model.
type Queue struct {
	Account, Project, Batch, Model string
	SubmittedTier                  int   // < 0: none given
	Seq                            int64 // submission order, lower is older
	Waiting                        int
	// Registered counts the queue's jobs registered so far, waiting or
	// past it (operators read progress from it; Decide does not).
	Registered int
}

// Key names the queue in plans and logs.
func (q Queue) Key() QueueKey {
	return QueueKey{Account: q.Account, Project: q.Project, Batch: q.Batch, Model: q.Model}
}

// QueueKey identifies a queue.
type QueueKey struct{ Account, Project, Batch, Model string }

func (k QueueKey) String() string {
	return k.Account + "/" + k.Project + "/" + k.Batch + " @" + k.Model
}

// Versions is a Store's record of what its Snapshot read that its Commit
// checks: for DynamoDB, each model state item's version and the queue items
// whose cursors a claim is conditioned on. It is the store's own type; the
// pass does not look inside, it hands it back to Commit with the plan. A
// store whose passes cannot overlap (memstore: one process, one scheduler)
// may leave it nil and commit unconditionally.
type Versions any

// Committed is what Commit did.
type Committed struct {
	Claimed []Job // in plan order
	// Stale names the models another pass wrote since the Snapshot read
	// them; when it is not empty, nothing was claimed. The next pass reads
	// afresh.
	Stale []string
}

// ErrStale is the error of a pass whose Commit found its snapshot stale
// (Committed.Stale): another pass committed first. It wrote no claims; the
// next pass reads afresh.
var ErrStale = errors.New("stale snapshot: another pass committed since")

// Snapshot is everything one pass reads.
type Snapshot struct {
	Models   []Model // sorted by name
	Queues   []Queue // queues with waiting jobs
	Pins     []priority.Pin
	Pauses   []Pause  // scopes whose waiting jobs are not admitted, sorted by scope
	Warnings []string // malformed console edits the store skipped
	// Skipped names the models whose items the store skipped as malformed,
	// with the reason (also in Warnings): their jobs wait.
	Skipped map[string]string
	// Versions is what Commit checks this snapshot against.
	Versions Versions
}

// Job is one claimed job, ready to launch.
type Job struct {
	ID             string
	Account        string
	Project        string
	Batch          string
	Key            string
	Model          string
	Tier           int
	Attempt        int // 1 on the first launch
	MaxAttempts    int
	TaskDefinition string
	TimeoutSeconds int
	Env            map[string]string
	SubmittedAt    time.Time // when the intake accepted it: the start of its wait
	// ResultToken is the attempt's result token, drawn by the store's
	// claim and stored with it: the launcher gives it to the sandbox
	// (EVALSCHED_RESULT_TOKEN), the results function requires it. Set
	// only on the jobs a Commit claims; it never prints.
	ResultToken resulttoken.Token
}

// LaunchStatus says what became of a launch.
type LaunchStatus string

// The launch statuses.
const (
	Launched LaunchStatus = "LAUNCHED" // a task exists for this job and attempt
	Retry    LaunchStatus = "RETRY"    // no task; try again later (capacity, throttling)
	Failed   LaunchStatus = "FAILED"   // no task and no point retrying (configuration)
	// Unknown: the call's outcome is unknown (a timeout, a server fault
	// after the SDK's retries): ECS may have started the task. Nothing is
	// recorded — the job stays CLAIMED, holding its slot — and the
	// reconciler finds its task (started by the job's id) or, past its
	// grace, returns it to waiting. Retrying at once would bump the attempt,
	// hence the idempotency token, and could start a second task.
	Unknown LaunchStatus = "UNKNOWN"
)

// LaunchResult is the outcome of launching one job.
type LaunchResult struct {
	JobID   string
	Attempt int
	Status  LaunchStatus
	TaskARN string
	Reason  string
}

// InFlight is a job that holds a slot (claimed, launched or running), as the
// reconciler sees it: it compares these with ECS's view of their tasks.
type InFlight struct {
	ID             string
	Account        string
	Project        string
	Batch          string
	Model          string
	State          string // CLAIMED, LAUNCHED or RUNNING
	Attempt        int
	TaskARN        string // "" until the launch is recorded
	ClaimedAt      time.Time
	StartedAt      time.Time // zero until it runs
	TimeoutSeconds int       // 0: no timeout
}

// Key returns the queue the job came from.
func (f InFlight) Key() QueueKey {
	return QueueKey{Account: f.Account, Project: f.Project, Batch: f.Batch, Model: f.Model}
}

// Scope names an account, a project of it, or a batch of that: the unit an
// operator cancels or pauses. Empty Project means the whole account; empty
// Batch the whole project.
type Scope struct{ Account, Project, Batch string }

// Matches reports whether the queue is inside the scope.
func (s Scope) Matches(q QueueKey) bool {
	return q.Account == s.Account && (s.Project == "" || q.Project == s.Project) && (s.Batch == "" || q.Batch == s.Batch)
}
