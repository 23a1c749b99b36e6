package sandboxkit

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// stepClock is a fake clock the test's SSE server sets before each event it
// writes, and then waits until the client has read the time (the client
// reads the clock once per event it receives): the client sees each chunk
// arrive at exactly the time the server's script says, over a real HTTP
// connection, and no assertion rests on the wall clock.
type stepClock struct {
	mu    sync.Mutex
	now   time.Time
	reads int
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.now
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *stepClock) peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// set moves the clock to t and returns how often it has been read.
func (c *stepClock) set(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	return c.reads
}

// readSince waits until the clock is read after the n-th read; false after
// 10 s of the wall clock (a broken client, not a slow one).
func (c *stepClock) readSince(n int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		c.mu.Lock()
		done := c.reads > n
		c.mu.Unlock()
		if done {
			return true
		}
	}
	return false
}

// timedEvent is one SSE data payload and when, after the request, it arrives.
type timedEvent struct {
	at   time.Duration
	data string
}

// timedStream is tokens of a kind ("reasoning_content", "reasoning",
// "content") arriving every step from first on.
func timedStream(field string, n int, first, step time.Duration) []timedEvent {
	evs := make([]timedEvent, n)
	for i := range evs {
		evs[i] = timedEvent{first + time.Duration(i)*step, fmt.Sprintf(`{"choices":[{"delta":{%q:"t%d "}}]}`, field, i)}
	}
	return evs
}

// newTimedGateway streams events at their times on the clock, then
// [DONE].
func newTimedGateway(t *testing.T, clock *stepClock, events []timedEvent) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := clock.peek() // the request's time: the clock moves only when set
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		f.Flush()
		for i, ev := range events {
			n := clock.set(base.Add(ev.at))
			fmt.Fprintf(w, "data: %s\n\n", ev.data)
			f.Flush()
			if !clock.readSince(n) {
				t.Errorf("the client did not read event %d", i+1)
				return
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The timings of a reasoning model's stream, from a real SSE server with
// known token times: 100 reasoning tokens then 20 answer tokens, 20 ms
// apart, the first at 300 ms. The kit once reported TTFT 2,302 ms and TPOT
// 3.19 ms here: its span covered the 20 answer tokens, divided by all 120.
func TestChatTimesReasoningAndAnswer(t *testing.T) {
	const ms = time.Millisecond
	role := timedEvent{100 * ms, `{"choices":[{"delta":{"role":"assistant"}}]}`}
	finish := timedEvent{2700 * ms, `{"choices":[{"delta":{},"finish_reason":"stop"}]}`}
	usage := func(completion, reasoning int) timedEvent {
		u := map[string]any{"completion_tokens": completion}
		if reasoning >= 0 {
			u["completion_tokens_details"] = map[string]int{"reasoning_tokens": reasoning}
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{}, "usage": u})
		return timedEvent{2710 * ms, string(b)}
	}
	join := func(parts ...[]timedEvent) []timedEvent {
		var out []timedEvent
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	reasoning := func(field string) []timedEvent { return timedStream(field, 100, 300*ms, 20*ms) }
	answer := timedStream("content", 20, 2300*ms, 20*ms)
	cases := []struct {
		name                   string
		events                 []timedEvent
		ttft, toAnswer         time.Duration
		tpot, answerTPOT       time.Duration
		tokens, reasoningCount int
	}{
		{"reasoning_content with usage details", join([]timedEvent{role}, reasoning("reasoning_content"), answer, []timedEvent{finish, usage(120, 100)}),
			300 * ms, 2300 * ms, 20 * ms, 20 * ms, 120, 100},
		{"reasoning, no usage: chunks counted", join([]timedEvent{role}, reasoning("reasoning"), answer, []timedEvent{finish}),
			300 * ms, 2300 * ms, 20 * ms, 20 * ms, 120, 100},
		{"reasoning_content, usage without details", join(reasoning("reasoning_content"), answer, []timedEvent{usage(120, -1)}),
			300 * ms, 2300 * ms, 20 * ms, 20 * ms, 120, 100},
		// The provider kept its reasoning hidden: the span holds the 20
		// answer tokens, whatever usage counts besides.
		{"hidden reasoning", join([]timedEvent{role}, answer, []timedEvent{finish, usage(120, 100)}),
			2300 * ms, 2300 * ms, 20 * ms, 20 * ms, 120, 100},
		{"no reasoning", join([]timedEvent{role}, timedStream("content", 20, 300*ms, 20*ms), []timedEvent{finish, usage(20, 0)}),
			300 * ms, 300 * ms, 20 * ms, 20 * ms, 20, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			srv := newTimedGateway(t, clock, tc.events)
			b, err := NewBreaker(BreakerConfig{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(Config{GatewayURL: srv.URL, Clock: clock, Breaker: b, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Chat(context.Background(), hello)
			if err != nil {
				t.Fatal(err)
			}
			if r.TTFT != tc.ttft || r.TimeToAnswer != tc.toAnswer || r.TPOT != tc.tpot || r.AnswerTPOT != tc.answerTPOT {
				t.Errorf("TTFT %s, to answer %s, TPOT %s, answer TPOT %s; want %s, %s, %s, %s",
					r.TTFT, r.TimeToAnswer, r.TPOT, r.AnswerTPOT, tc.ttft, tc.toAnswer, tc.tpot, tc.answerTPOT)
			}
			if r.CompletionTokens != tc.tokens || r.ReasoningTokens != tc.reasoningCount {
				t.Errorf("tokens %d (reasoning %d), want %d (%d)", r.CompletionTokens, r.ReasoningTokens, tc.tokens, tc.reasoningCount)
			}
			if got := strings.Count(r.Content, " "); got != 20 {
				t.Errorf("the answer holds %d tokens, want 20: %q", got, r.Content)
			}
			s := c.Latency()
			near := func(got float64, want time.Duration) bool { // HDR: within 0.1 %
				return math.Abs(got-float64(want/ms)) <= float64(want/ms)*0.001
			}
			if !near(s.TTFT.Max, tc.ttft) || !near(s.TimeToAnswer.Max, tc.toAnswer) || !near(s.TPOT.Max, tc.tpot) {
				t.Errorf("histograms' max TTFT %g, to answer %g, TPOT %g ms; want %d, %d, %d",
					s.TTFT.Max, s.TimeToAnswer.Max, s.TPOT.Max, tc.ttft/ms, tc.toAnswer/ms, tc.tpot/ms)
			}
		})
	}
}
