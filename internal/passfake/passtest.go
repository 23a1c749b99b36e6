package passfake

import (
	"context"
	"sync"
	"time"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// Clock is a fake clock that moves only when told or slept on; several
// goroutines may read it at once.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Add moves the clock by d and returns its new time.
func (c *Clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Sleep advances the clock by d at once (passloop.Clock).
func (c *Clock) Sleep(_ context.Context, d time.Duration) error {
	c.Add(d)
	return nil
}

// Depths serves a fixed depth per model, measured 20 s before the pass.
type Depths map[string]float64

// Depths implements scheduler.DepthReader.
func (d Depths) Depths(_ context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	out := map[string]scheduler.Depth{}
	for _, m := range models {
		if v, ok := d[m]; ok {
			out[m] = scheduler.Depth{Value: v, At: now.Add(-20 * time.Second)}
		}
	}
	return out, nil
}

// IdleGateway reports every model's gateway queue empty (depth 0), 20 s
// before the pass.
type IdleGateway struct{}

// Depths implements scheduler.DepthReader.
func (IdleGateway) Depths(_ context.Context, models []string, now time.Time) (map[string]scheduler.Depth, error) {
	out := map[string]scheduler.Depth{}
	for _, m := range models {
		out[m] = scheduler.Depth{Value: 0, At: now.Add(-20 * time.Second)}
	}
	return out, nil
}

// Launcher launches every job at once, except those whose key is in Retry,
// which come back as Retry ("capacity"); it records what it launched.
type Launcher struct {
	mu       sync.Mutex
	Retry    map[string]bool
	launched []scheduler.Job
}

// Launch implements scheduler.Launcher.
func (l *Launcher) Launch(_ context.Context, jobs []scheduler.Job) []scheduler.LaunchResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []scheduler.LaunchResult
	for _, j := range jobs {
		if l.Retry[j.Key] {
			out = append(out, scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Retry, Reason: "capacity"})
			continue
		}
		l.launched = append(l.launched, j)
		out = append(out, scheduler.LaunchResult{JobID: j.ID, Attempt: j.Attempt, Status: scheduler.Launched, TaskARN: "arn:task/" + j.ID})
	}
	return out
}

// Launched returns the jobs launched so far, in order.
func (l *Launcher) Launched() []scheduler.Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]scheduler.Job(nil), l.launched...)
}

// Models counts the launched jobs by model.
func (l *Launcher) Models() map[string]int {
	out := map[string]int{}
	for _, j := range l.Launched() {
		out[j.Model]++
	}
	return out
}

// Lease is one lease item in memory with the store's conditions
// (dynamolease): a holder until a time.
type Lease struct {
	mu     sync.Mutex
	holder string
	until  time.Time
	lost   bool
}

// HeldBy returns a lease held by owner until until.
func HeldBy(owner string, until time.Time) *Lease { return &Lease{holder: owner, until: until} }

// Holder returns who holds the lease ("" for nobody).
func (l *Lease) Holder() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder
}

// Lose makes every later renewal fail, as when another owner took the
// lease over.
func (l *Lease) Lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = true
}

// Handle is owner's handle on the lease (passloop.Lease).
func (l *Lease) Handle(owner string) Handle { return Handle{l: l, me: owner} }

// Handle is one owner's view of a Lease.
type Handle struct {
	l  *Lease
	me string
}

// Acquire takes the lease if it is free, expired or already this owner's.
func (h Handle) Acquire(_ context.Context, now, until time.Time) (bool, string, time.Time, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.holder != "" && h.l.holder != h.me && now.Before(h.l.until) {
		return false, h.l.holder, h.l.until, nil
	}
	h.l.holder, h.l.until = h.me, until
	return true, h.me, until, nil
}

// Renew extends the lease while this owner holds it.
func (h Handle) Renew(_ context.Context, _, until time.Time) (bool, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.holder != h.me || h.l.lost {
		return false, nil
	}
	h.l.until = until
	return true, nil
}

// Release frees the lease if this owner holds it.
func (h Handle) Release(context.Context) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.holder == h.me {
		h.l.holder = ""
	}
	return nil
}
