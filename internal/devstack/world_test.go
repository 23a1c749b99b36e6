package devstack

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/ecslauncher"
	"github.com/evalsched/evalsched/internal/scheduler"
	"github.com/evalsched/evalsched/internal/taskevent"
)

// recorder keeps the events the world hands the task-events handler.
type recorder struct {
	mu  sync.Mutex
	evs []taskevent.Event
	ch  chan taskevent.Event
}

func (r *recorder) Handle(_ context.Context, raw json.RawMessage) error {
	ev, err := taskevent.Decode(raw, taskevent.Config{})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
	r.ch <- ev
	return nil
}

func (r *recorder) events() []taskevent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]taskevent.Event(nil), r.evs...)
}

// TestYieldStopsAStartingTaskOverHTTP is the yield step's path in local
// mode without the pass: ecslauncher.Stopper, with the SDK's ECS client,
// calls StopTask over HTTP on the world's endpoint; the task still starting
// sends one STOPPED event, stop code UserInitiated with the yield reason,
// which the task-events decoder reads as a yield, and never RUNNING. A
// running task stopped the same way is stopped as before: RUNNING, then
// STOPPED with the reason given.
func TestYieldStopsAStartingTaskOverHTTP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{ch: make(chan taskevent.Event, 16)}
	// A start of 20 s at speed 10 takes 2 s: the stop comes well before.
	w, stopper := stoppableWorld(t, ctx, 20*time.Second, rec, taskevent.YieldReason)

	res := w.Launch(ctx, []scheduler.Job{{ID: "job-a", Model: "m", Attempt: 1}})
	if len(res) != 1 || res[0].Status != scheduler.Launched || res[0].TaskARN == "" {
		t.Fatalf("launch: %+v", res)
	}
	arn := res[0].TaskARN
	n, err := stopper.Stop(ctx, []scheduler.InFlight{{ID: "job-a", Model: "m", Attempt: 1, State: "LAUNCHED", TaskARN: arn}})
	if err != nil || n != 1 {
		t.Fatalf("Stop: %d stopped, %v; want 1, nil", n, err)
	}
	select {
	case ev := <-rec.ch:
		if ev.Kind != taskevent.Yielded || ev.TaskARN != arn || ev.JobID != "job-a" || ev.Attempt != 1 {
			t.Errorf("event %+v; want the yield of job-a's task, attempt 1", ev)
		}
		if !ev.StartedAt.IsZero() {
			t.Errorf("the yielded task has startedAt %v; it never ran", ev.StartedAt)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event 5 s after StopTask")
	}
	// Past the start the task would have taken: nothing more comes.
	time.Sleep(3 * time.Second)
	if evs := rec.events(); len(evs) != 1 {
		t.Errorf("%d events for the yielded task, want its one STOPPED: %+v", len(evs), evs)
	}
	// The task is gone: ECS answers a second stop with an error.
	if n, err := stopper.Stop(ctx, []scheduler.InFlight{{ID: "job-a", Attempt: 1, TaskARN: arn}}); err == nil || n != 0 {
		t.Errorf("second Stop: %d, %v; want 0 and the task not found", n, err)
	}

	// A running task: RUNNING, then the stop's STOPPED with its reason.
	w2, stop2 := stoppableWorld(t, ctx, time.Second, rec, taskevent.CancelReason)
	res = w2.Launch(ctx, []scheduler.Job{{ID: "job-b", Model: "m", Attempt: 2}})
	select {
	case ev := <-rec.ch:
		if ev.Kind != taskevent.Started || ev.JobID != "job-b" {
			t.Fatalf("event %+v; want job-b's RUNNING", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("job-b: no RUNNING after 5 s")
	}
	if n, err := stop2.Stop(ctx, []scheduler.InFlight{{ID: "job-b", Attempt: 2, TaskARN: res[0].TaskARN}}); err != nil || n != 1 {
		t.Fatalf("Stop of a running task: %d, %v", n, err)
	}
	select {
	case ev := <-rec.ch:
		if ev.Kind != taskevent.Cancelled || ev.JobID != "job-b" || ev.StartedAt.IsZero() {
			t.Errorf("event %+v; want job-b's STOPPED as cancelled, after it ran", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("job-b: no STOPPED 5 s after StopTask")
	}
}

// stoppableWorld is a world of one model whose containers start in start
// (at speed 10), with its ECS endpoint and a Stopper over HTTP to it that
// stops with reason; both end with the test.
func stoppableWorld(t *testing.T, ctx context.Context, start time.Duration, rec *recorder, reason string) (*world, *ecslauncher.Stopper) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := newWorld(ctx, 10, []Model{{Name: "m", Concurrency: 1, Call: time.Hour, Think: time.Second, Calls: 1, Start: start}}, rec)
	t.Cleanup(func() { cancel(); w.wg.Wait() })
	api, err := serveECS(w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	return w, &ecslauncher.Stopper{API: localECS(api.url), Cluster: "local", Reason: reason, Log: slog.New(slog.DiscardHandler)}
}

// TestTheWorldPublishesItsCallsInService: the world's gateway serves, in
// vLLM's exposition, the depth and the calls in service of the same
// instant, so the limit controller learns a model's provider concurrency
// from a standing queue (make local's models have no provider_concurrency).
func TestTheWorldPublishesItsCallsInService(t *testing.T) {
	w := newWorld(context.Background(), 1, []Model{{Name: "m", Concurrency: 3}}, nil)
	_, g := w.model("m")
	for range 3 {
		g.slots <- struct{}{}
	}
	g.waiting.Store(2)
	rec := httptest.NewRecorder()
	w.serveMetrics(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{`vllm:num_requests_running{engine="0",model_name="m"} 3.0`, `vllm:num_requests_waiting{engine="0",model_name="m"} 2.0`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics serves\n%s\nwant the line %s", body, want)
		}
	}
}
