package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/passfake"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// shardedWorld is one store's jobs scheduled by N shards, each a Scheduler
// over its view of the store with its share of the caps, as the Lambda
// wires them; the launched tasks start, and a third of the running ones end
// each round, so the shards keep admitting against the cap.
type shardedWorld struct {
	store   *memstore.Store
	caps    scheduler.Caps
	shards  []*scheduler.Scheduler
	clock   *passfake.Clock
	sharing bool // the caps shared by load, not split statically
}

func newShardedWorld(t *testing.T, caps scheduler.Caps, shards int, models []string) *shardedWorld {
	return newWorld(t, caps, shards, models, false)
}

// newSharingWorld is newShardedWorld with the caps shared by the shards'
// loads (scheduler.Sharing), as the Lambda wires more than one shard.
func newSharingWorld(t *testing.T, caps scheduler.Caps, shards int, models []string) *shardedWorld {
	return newWorld(t, caps, shards, models, true)
}

func newWorld(t *testing.T, caps scheduler.Caps, shards int, models []string, sharing bool) *shardedWorld {
	t.Helper()
	// Pinned: the limits hold at 1,000 whatever the depth, the cap binds.
	pinned := model("", 1000)
	pinned.LimitPin = 1000
	w := &shardedWorld{store: memstore.New(pinned), caps: caps, clock: passfake.NewClock(t0), sharing: sharing}
	d := passfake.Depths{}
	for i, m := range models {
		d[m] = 40
		if _, err := w.store.Submit(context.Background(), batch("lab", "p", fmt.Sprint("b", i), m, -1, 400), t0); err != nil {
			t.Fatal(err)
		}
	}
	for k := range shards {
		share := caps.Share(k, shards)
		cfg := scheduler.DefaultConfig()
		cfg.GlobalMaxRunning, cfg.MaxLaunchesPerPass = share.GlobalMaxRunning, share.MaxLaunchesPerPass
		owns := func(m string) bool { return scheduler.ShardOf(m, shards) == k }
		s := &scheduler.Scheduler{Store: w.store.Shard(owns), Depths: d, Launcher: &passfake.Launcher{}, Clock: w.clock, Config: cfg}
		if sharing {
			s.Sharing = &scheduler.Sharing{Shard: k, Shards: shards, Account: caps, MaxAge: 30 * time.Second}
			s.Loads = w.store
		}
		w.shards = append(w.shards, s)
	}
	return w
}

// round runs every shard's pass at once, then checks the caps: every job
// holding a slot counts, whichever shard admitted it. It returns the jobs
// holding a slot, in all and by shard.
func (w *shardedWorld) round(t *testing.T) (int, []int) {
	t.Helper()
	ctx := context.Background()
	w.clock.Add(10 * time.Second)
	var wg sync.WaitGroup
	errs := make([]error, len(w.shards))
	for k, s := range w.shards {
		wg.Go(func() { _, errs[k] = s.Pass(ctx) })
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", k, err)
		}
	}
	jobs, err := w.store.InFlight(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byShard := make([]int, len(w.shards))
	for _, j := range jobs {
		byShard[scheduler.ShardOf(j.Model, len(w.shards))]++
	}
	if len(jobs) > w.caps.GlobalMaxRunning {
		t.Fatalf("at %v: %d jobs hold a slot (by shard %v), past the global cap %d", w.clock.Now(), len(jobs), byShard, w.caps.GlobalMaxRunning)
	}
	for k, n := range byShard {
		if share := w.caps.Share(k, len(w.shards)).GlobalMaxRunning; n > share && !w.sharing {
			t.Fatalf("at %v: shard %d holds %d slots, past its share %d", w.clock.Now(), k, n, share)
		}
	}
	// The tasks: launched ones start; every third running one ends.
	for i, j := range jobs {
		switch {
		case j.State == "LAUNCHED":
			err = w.store.TaskStarted(ctx, j.ID, j.Attempt, w.clock.Now().Add(time.Second))
		case j.State == "RUNNING" && i%3 == 0:
			err = w.store.TaskStopped(ctx, j.ID, j.Attempt, job.Exit{}, w.clock.Now().Add(2*time.Second))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.Check(); err != nil {
		t.Fatal(err)
	}
	return len(jobs), byShard
}

// peak runs rounds and returns the most slots held after any.
func (w *shardedWorld) peak(t *testing.T, rounds int) int {
	t.Helper()
	peak := 0
	for range rounds {
		n, _ := w.round(t)
		peak = max(peak, n)
	}
	return peak
}

// modelsOf returns n model names, those of the given shards only (nil: any).
func modelsOf(n, shards int, only map[int]bool) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		m := fmt.Sprintf("model-%02d", i)
		if only == nil || only[scheduler.ShardOf(m, shards)] {
			out = append(out, m)
		}
	}
	return out
}

// Two shards over the same jobs, passing at the same time, never hold more
// slots together than the global cap — and do reach it, or the test would
// prove nothing.
func TestShardsNeverAdmitPastTheGlobalCap(t *testing.T) {
	caps := scheduler.Caps{GlobalMaxRunning: 101, MaxLaunchesPerPass: 40, LaunchRate: 4, LaunchBurst: 100}
	models := modelsOf(12, 2, nil)
	w := newShardedWorld(t, caps, 2, models)
	peak, peakBy := 0, []int(nil)
	for range 40 {
		if n, by := w.round(t); n > peak {
			peak, peakBy = n, by
		}
	}
	if peak != caps.GlobalMaxRunning {
		t.Errorf("got a peak of %d slots held, want the cap %d reached", peak, caps.GlobalMaxRunning)
	}
	t.Logf("peak %d slots held, by shard %v (shares 51, 50)", peak, peakBy)
}

// The limitation of the static split, measured: when every busy model is
// shard 0's, shard 0 holds at most its share and shard 1's share idles.
func TestABusyShardCannotBorrowAnIdleOnesShare(t *testing.T) {
	caps := scheduler.Caps{GlobalMaxRunning: 101, MaxLaunchesPerPass: 40, LaunchRate: 4, LaunchBurst: 100}
	w := newShardedWorld(t, caps, 2, modelsOf(6, 2, map[int]bool{0: true}))
	peak := 0
	for range 40 {
		n, _ := w.round(t)
		peak = max(peak, n)
	}
	if want := caps.Share(0, 2).GlobalMaxRunning; peak != want {
		t.Errorf("got a peak of %d slots held, want shard 0's share %d (and no more)", peak, want)
	}
}

// Shared by load, the same two shards over the same jobs, passing at the
// same time, still never hold more than the cap together, and reach it.
func TestSharingShardsNeverAdmitPastTheGlobalCap(t *testing.T) {
	caps := scheduler.Caps{GlobalMaxRunning: 101, MaxLaunchesPerPass: 40, LaunchRate: 4, LaunchBurst: 100}
	w := newSharingWorld(t, caps, 2, modelsOf(12, 2, nil))
	if peak := w.peak(t, 40); peak != caps.GlobalMaxRunning {
		t.Errorf("got a peak of %d slots held, want the cap %d reached", peak, caps.GlobalMaxRunning)
	}
}

// Shared by load, a busy shard uses an idle one's share: with every busy
// model shard 0's, shard 0 reaches the whole cap, where the static split
// held it to its half.
func TestABusyShardBorrowsAnIdleOnesShareByLoad(t *testing.T) {
	caps := scheduler.Caps{GlobalMaxRunning: 101, MaxLaunchesPerPass: 40, LaunchRate: 4, LaunchBurst: 100}
	w := newSharingWorld(t, caps, 2, modelsOf(6, 2, map[int]bool{0: true}))
	if peak := w.peak(t, 40); peak != caps.GlobalMaxRunning {
		t.Errorf("got a peak of %d slots held, want the whole cap %d (shard 1 is idle)", peak, caps.GlobalMaxRunning)
	}
}

// Shared by load, a shard that becomes busy while another holds the whole
// cap gets its fair half as the other's jobs end — and the two never hold
// more than the cap meanwhile.
func TestALateShardGetsItsFairShareByLoad(t *testing.T) {
	caps := scheduler.Caps{GlobalMaxRunning: 100, MaxLaunchesPerPass: 40, LaunchRate: 4, LaunchBurst: 100}
	early := modelsOf(4, 2, map[int]bool{0: true})
	w := newSharingWorld(t, caps, 2, early)
	for range 15 {
		w.round(t)
	}
	if _, by := w.round(t); by[0] != caps.GlobalMaxRunning {
		t.Fatalf("shard 0 alone holds %d, want the whole cap %d", by[0], caps.GlobalMaxRunning)
	}
	for i, m := range modelsOf(4, 2, map[int]bool{1: true}) {
		if _, err := w.store.Submit(context.Background(), batch("lab", "late", fmt.Sprint("l", i), m, -1, 400), w.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var by []int
	for range 30 {
		_, by = w.round(t)
	}
	if by[0] != 50 || by[1] != 50 {
		t.Errorf("after 30 passes the shards hold %v, want 50 and 50", by)
	}
}

// rateLauncher records the bucket sizes a shard's passes set.
type rateLauncher struct {
	passfake.Launcher
	rates []float64
}

func (l *rateLauncher) SetRate(perSecond float64, _ int) { l.rates = append(l.rates, perSecond) }

// noLoads is a load store whose reports cannot be read.
type noLoads struct{ scheduler.LoadStore }

func (noLoads) ShardLoads(context.Context) ([]scheduler.ShardLoad, error) {
	return nil, fmt.Errorf("throttled")
}

// A shard alone with work takes the account's launch rate; when the loads
// cannot be read, its pass goes back to the static share — the bucket too,
// which the pass before had sized by load.
func TestShardPassSizesItsLaunchBucket(t *testing.T) {
	caps := scheduler.Caps{GlobalMaxRunning: 100, MaxLaunchesPerPass: 40, LaunchRate: 20, LaunchBurst: 100}
	store := memstore.New(model("", 1000))
	m := modelsOf(1, 2, map[int]bool{0: true})[0]
	if _, err := store.Submit(context.Background(), batch("lab", "p", "b", m, -1, 50), t0); err != nil {
		t.Fatal(err)
	}
	owns := func(name string) bool { return scheduler.ShardOf(name, 2) == 0 }
	l := &rateLauncher{}
	cfg := scheduler.DefaultConfig()
	static := caps.Share(0, 2)
	cfg.GlobalMaxRunning, cfg.MaxLaunchesPerPass = static.GlobalMaxRunning, static.MaxLaunchesPerPass
	clk := passfake.NewClock(t0)
	s := &scheduler.Scheduler{Store: store.Shard(owns), Depths: passfake.Depths{m: 40}, Launcher: l, Clock: clk, Config: cfg,
		Sharing: &scheduler.Sharing{Shard: 0, Shards: 2, Account: caps, MaxAge: 30 * time.Second},
		Loads:   store, Rates: l}
	// Shard 1 reports nothing to do.
	if err := store.PutShardLoad(context.Background(), scheduler.ShardLoad{Shard: 1, At: t0}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.rates) != 1 || l.rates[0] != 20 || rep.Share.MaxLaunchesPerPass != 40 {
		t.Errorf("alone with work: rates %v, share %+v; want the account's 20/s and its 40 launches", l.rates, rep.Share)
	}
	s.Loads = noLoads{store}
	clk.Add(10 * time.Second)
	if rep, err = s.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(l.rates) != 2 || l.rates[1] != 10 || rep.Share != (scheduler.Caps{}) {
		t.Errorf("loads unreadable: rates %v, share %+v; want the static 10/s and no share by load", l.rates, rep.Share)
	}
}
