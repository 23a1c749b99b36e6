package depthbridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/evalsched/evalsched/internal/httpfake"
)

// fakeClock's Sleep moves its time on at once; after `steps` sleeps it
// ends the run's context.
type fakeClock struct {
	now    time.Time
	steps  int
	cancel context.CancelFunc
	slept  []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	if c.steps--; c.steps <= 0 {
		c.cancel()
	}
	return ctx.Err()
}

// TestRunStepsOnTheIntervalsBoundaries: Run scrapes at its start, then on
// each interval's boundary (the first sleep makes up the part second), and
// when its context ends sends what is left and stops without error; its
// clock is the one given.
func TestRunStepsOnTheIntervalsBoundaries(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	e := serve(t, fixture(t, "vllm.txt"))
	br := newBridge(t, fake, Config{PublishEvery: Duration(2 * time.Second), Targets: []Target{{URL: e.url(), Preset: "vllm"}}})
	ctx, cancel := context.WithCancel(context.Background())
	clock := &fakeClock{now: t0.Add(400 * time.Millisecond), steps: 5, cancel: cancel}
	if err := br.Run(ctx, clock); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{600 * time.Millisecond, time.Second, time.Second, time.Second, time.Second}; len(clock.slept) != len(want) || clock.slept[0] != want[0] || clock.slept[4] != want[4] {
		t.Errorf("slept %v; want %v", clock.slept, want)
	}
	// Steps at 0.4 s, 1, 2, 3, 4 s: sends at 2 s (0.4 and 1 s), 4 s (2, 3 s)
	// and, as it stops, 4 s's.
	got := published(fake, "QueueDepth", "meta-llama/Llama-3.1-8B-Instruct")
	if len(got) != 5 || got[t0] != 7 || got[t0.Add(4*time.Second)] != 7 || len(fake.Puts()) != 3 {
		t.Errorf("published %v in %d calls; want 7 at 0, 1, 2, 3 and 4 s in 3", got, len(fake.Puts()))
	}
}

// failingAPI refuses the first `fail` calls, then hands them to the fake.
type failingAPI struct {
	API
	fail int
}

func (f *failingAPI) PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	if f.fail > 0 {
		f.fail--
		return nil, errors.New("throttled")
	}
	return f.API.PutMetricData(ctx, in, opts...)
}

// TestFailedPublishIsRetried: datapoints a failed PutMetricData did not
// send go with the next send, up to 3 minutes old; older ones are dropped
// (the scheduler looks back 3 minutes).
func TestFailedPublishIsRetried(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	e := serve(t, "# TYPE q gauge\nq{model=\"m\"} 2\n")
	api := &failingAPI{API: cwClient(fake.URL()), fail: 1}
	br, err := New(api, nil, Config{Targets: []Target{{URL: e.url(), Depth: []string{"q{model}"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for s := range 21 { // sends at 10 s (fails) and 20 s
		err := br.Step(ctx, t0.Add(time.Duration(s)*time.Second))
		if (err != nil) != (s == 10) || err != nil && !strings.Contains(err.Error(), "throttled") {
			t.Fatalf("step %d: %v", s, err)
		}
	}
	if got := published(fake, "QueueDepth", "m"); len(got) != 20 {
		t.Errorf("published %d seconds; want the 20 before the send at 20 s, the failed ones included", len(got))
	}
	// The send at 30 s fails too: the datapoints of 20 s (2) and 30 s (0,
	// the model listed no more) wait; at 201 s the first is over 3 minutes
	// old and dropped, the second sent.
	api.fail = 1
	e.set("", http.StatusOK)
	if err := br.Step(ctx, t0.Add(30*time.Second)); err == nil {
		t.Fatal("the send at 30 s did not fail")
	}
	if err := br.Flush(ctx, t0.Add(20*time.Second+keepFor+time.Second)); err != nil {
		t.Fatal(err)
	}
	got := published(fake, "QueueDepth", "m")
	if v, ok := got[t0.Add(30*time.Second)]; !ok || v != 0 || len(got) != 21 {
		t.Errorf("published %v; want 0..19 s and 30 s (0), not 20 s (older than 3 minutes at the retry)", got)
	}
}

// TestBearerToken: a target's bearer_token_env is read at New and sent with
// every scrape (LiteLLM's /metrics may require its key); an unset variable
// is an error naming the field.
func TestBearerToken(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-1234" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, fixture(t, "litellm.txt"))
	}))
	defer srv.Close()
	cfg := Config{CloudWatch: allNames, Targets: []Target{{URL: srv.URL + "/metrics", Preset: "litellm", BearerTokenEnv: "TEST_LITELLM_KEY"}}}
	if _, err := New(cwClient(fake.URL()), nil, cfg, nil); err == nil || !strings.Contains(err.Error(), "targets[0].bearer_token_env") {
		t.Errorf("unset token: %v; want an error naming targets[0].bearer_token_env", err)
	}
	t.Setenv("TEST_LITELLM_KEY", "sk-1234")
	steps(t, newBridge(t, fake, cfg), t0, 1, nil)
	if got := published(fake, "GatewayCalls", "gpt-4o"); len(got) != 1 {
		t.Errorf("published %v; want the scrape with the token to count", got)
	}
}

// TestSlowTargetCountsAsGone: a target that does not answer within the
// timeout is gone for that second, as a refused one is.
func TestSlowTargetCountsAsGone(t *testing.T) {
	fake := httpfake.NewCloudWatch()
	defer fake.Close()
	var hang atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			<-r.Context().Done() // answers after the bridge gave up
			return
		}
		fmt.Fprint(w, "# TYPE q gauge\nq{model=\"m\"} 1\n")
	}))
	defer srv.Close()
	br := newBridge(t, fake, Config{Interval: Duration(time.Second), Timeout: Duration(50 * time.Millisecond),
		Targets: []Target{{URL: srv.URL, Depth: []string{"q{model}"}}}})
	steps(t, br, t0, 3, func(i int) { hang.Store(i == 1) })
	got := published(fake, "QueueDepth", "m")
	if _, ok := got[t0.Add(time.Second)]; ok || len(got) != 2 {
		t.Errorf("published %v; want 0 and 2 s, nothing at 1 s (the scrape timed out)", got)
	}
}
