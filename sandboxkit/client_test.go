package sandboxkit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func newTestClient(t *testing.T, g *fakeGateway, cfg Config) (*Client, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	cfg.GatewayURL = g.URL
	cfg.Clock = clock
	cfg.Seed = 7
	if cfg.Breaker == nil {
		b, err := NewBreaker(BreakerConfig{Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Breaker = b
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, clock
}

var hello = ChatRequest{Model: "gpt-5.5", Messages: []Message{{Role: "user", Content: "Say hello."}}}

func TestChatStreams(t *testing.T) {
	g := newFakeGateway(t, stream("Hel", "lo", ",", " world"))
	c, _ := newTestClient(t, g, Config{APIKey: "sk-test"})

	r, err := c.Chat(context.Background(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "Hello, world" || r.FinishReason != "stop" || r.CompletionTokens != 4 || r.Attempts != 1 {
		t.Errorf("got %q finish %q tokens %d attempts %d; want \"Hello, world\", stop, 4, 1", r.Content, r.FinishReason, r.CompletionTokens, r.Attempts)
	}
	// The times are the fake clock's, which did not move (TestChatTimesReasoningAndAnswer times them).
	if s := c.Latency(); s.TTFT.Count != 1 || s.TimeToAnswer.Count != 1 {
		t.Errorf("histogram counts TTFT %d time to answer %d, want 1 each", s.TTFT.Count, s.TimeToAnswer.Count)
	}
	req := g.requests[0]
	if req.auth != "Bearer sk-test" || req.body["stream"] != true || req.body["model"] != "gpt-5.5" {
		t.Errorf("the gateway saw auth %q body %v; want the key, stream:true, the model", req.auth, req.body)
	}
}

// The transport keeps the connection: ten calls, one TCP connection (the
// client reads each body to its end, after [DONE], so it may be reused).
func TestChatKeepsTheConnection(t *testing.T) {
	g := newFakeGateway(t, stream("ok"))
	c, _ := newTestClient(t, g, Config{})
	for range 10 {
		if _, err := c.Chat(context.Background(), hello); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.connCount(); n != 1 {
		t.Errorf("10 sequential calls opened %d connections, want 1", n)
	}
}

func TestChatRetriesOverloadHonouringRetryAfter(t *testing.T) {
	g := newFakeGateway(t, status(429, "Retry-After", "3"), status(503), stream("fine"))
	c, clock := newTestClient(t, g, Config{})

	r, err := c.Chat(context.Background(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "fine" || r.Attempts != 3 {
		t.Errorf("got %q after %d attempts, want \"fine\" after 3", r.Content, r.Attempts)
	}
	sleeps := clock.slept()
	if len(sleeps) != 2 {
		t.Fatalf("slept %v, want two waits", sleeps)
	}
	if sleeps[0] < 3*time.Second {
		t.Errorf("first wait %s, under the 3 s Retry-After", sleeps[0])
	}
	if sleeps[1] > time.Second {
		t.Errorf("second wait %s, over the second backoff's 1 s ceiling (500 ms × 2)", sleeps[1])
	}
	if s := c.Stats(); s.Requests != 3 || s.Overloaded != 2 || s.Succeeded != 1 {
		t.Errorf("stats %+v, want 3 requests, 2 overloaded, 1 succeeded", s)
	}
}

func TestChatGivesUpWithProviderError(t *testing.T) {
	cases := []struct {
		name         string
		script       []reply
		wantRequests int
	}{
		{"5xx on every attempt", []reply{status(502)}, 5},
		{"a Retry-After longer than the policy's bound", []reply{status(429, "Retry-After", "3600")}, 1},
		{"an error event in every stream", []reply{{status: 200, events: []string{"data: {\"error\":{\"message\":\"upstream overloaded\"}}\n\n"}}}, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGateway(t, tc.script...)
			c, _ := newTestClient(t, g, Config{})
			_, err := c.Chat(context.Background(), hello)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ProviderError", err)
			}
			if got := ExitCode(err); got != ExitProviderFailed {
				t.Errorf("exit code %d, want %d", got, ExitProviderFailed)
			}
			if n := g.requestCount(); n != tc.wantRequests {
				t.Errorf("%d requests, want %d", n, tc.wantRequests)
			}
		})
	}
}

func TestChatRequestErrorIsTheJobsOwn(t *testing.T) {
	g := newFakeGateway(t, status(400))
	c, _ := newTestClient(t, g, Config{})
	_, err := c.Chat(context.Background(), hello)
	var re *RequestError
	if !errors.As(err, &re) || re.Status != 400 {
		t.Fatalf("error %v, want a *RequestError with 400", err)
	}
	if ExitCode(err) != ExitJobFailed || g.requestCount() != 1 {
		t.Errorf("exit code %d after %d requests; want %d after 1 (no retry)", ExitCode(err), g.requestCount(), ExitJobFailed)
	}
}

// A stream cut short is retried, and the answer is the retry's alone.
func TestChatStreamCutIsRetried(t *testing.T) {
	cut := stream("partial", " answer")
	cut.events, cut.cut = cut.events[:3], true // the role chunk, the comment, one token
	g := newFakeGateway(t, cut, stream("whole"))
	c, _ := newTestClient(t, g, Config{})
	r, err := c.Chat(context.Background(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "whole" || r.Attempts != 2 {
		t.Errorf("got %q after %d attempts, want \"whole\" after 2", r.Content, r.Attempts)
	}
}

// Retries respect the breaker: once it is open, the next call waits out the
// cooldown before it sends anything, then goes as the half-open probe.
func TestChatRetriesRespectTheBreaker(t *testing.T) {
	g := newFakeGateway(t, status(429), status(429), status(429), status(429), stream("back"))
	b, _ := NewBreaker(BreakerConfig{Consecutive: 4, Seed: 3})
	c, clock := newTestClient(t, g, Config{Breaker: b, Retry: RetryPolicy{MaxAttempts: 4}})

	if _, err := c.Chat(context.Background(), hello); ExitCode(err) != ExitProviderFailed {
		t.Fatalf("error %v, want a provider failure after four 429s", err)
	}
	if st := b.State(clock.Now()); st != Open {
		t.Fatalf("breaker %s after four 429s of four, want OPEN", st)
	}
	before := len(clock.slept())
	r, err := c.Chat(context.Background(), hello)
	if err != nil {
		t.Fatal(err)
	}
	sleeps := clock.slept()[before:]
	if len(sleeps) != 1 || sleeps[0] < 5*time.Second || sleeps[0] > 10*time.Second {
		t.Errorf("waits before the second call's request %v, want one cooldown in [5s, 10s]", sleeps)
	}
	if n := g.requestCount(); n != 5 || r.Content != "back" {
		t.Errorf("%d requests, answer %q; want 5 (no request while open) and \"back\"", n, r.Content)
	}
	if s := c.Stats(); s.BreakerRefusals != 1 {
		t.Errorf("breaker refusals %d, want 1", s.BreakerRefusals)
	}
}

// A 502 answer to the half-open probe reopens the breaker: the retry waits
// out a second cooldown instead of going as the next probe.
func TestChatProbeAnswered502Reopens(t *testing.T) {
	g := newFakeGateway(t, status(429), status(429), status(502), stream("back"))
	b, _ := NewBreaker(BreakerConfig{Consecutive: 2, Seed: 3})
	c, clock := newTestClient(t, g, Config{Breaker: b, Retry: RetryPolicy{MaxAttempts: 2}})
	if _, err := c.Chat(context.Background(), hello); ExitCode(err) != ExitProviderFailed {
		t.Fatalf("error %v, want a provider failure after two 429s", err)
	}
	before := len(clock.slept())
	if _, err := c.Chat(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	var cooldowns int
	for _, d := range clock.slept()[before:] {
		if d >= 5*time.Second {
			cooldowns++
		}
	}
	if cooldowns != 2 || g.requestCount() != 4 {
		t.Errorf("%d cooldowns and %d requests, want 2 and 4: the 502 probe must reopen the breaker", cooldowns, g.requestCount())
	}
	if st := b.State(clock.Now()); st != HalfOpen {
		t.Errorf("breaker %s after one answered probe of 3, want HALF_OPEN", st)
	}
}

// An open breaker whose cooldown does not fit the call's wait budget ends
// the call at once, as a provider failure, without a request.
func TestChatBreakerOpenBeyondBudget(t *testing.T) {
	g := newFakeGateway(t, status(503))
	b, _ := NewBreaker(BreakerConfig{Consecutive: 1, Seed: 3})
	c, _ := newTestClient(t, g, Config{Breaker: b, Retry: RetryPolicy{MaxAttempts: 1, MaxWait: 2 * time.Second}})
	c.Chat(context.Background(), hello) // one 503 trips it
	_, err := c.Chat(context.Background(), hello)
	if !errors.Is(err, ErrBreakerOpen) || ExitCode(err) != ExitProviderFailed {
		t.Fatalf("error %v, want ErrBreakerOpen as a provider failure", err)
	}
	if n := g.requestCount(); n != 1 {
		t.Errorf("%d requests, want 1: the refused call must not reach the gateway", n)
	}
}

func TestChatLimiter(t *testing.T) {
	g := newFakeGateway(t, stream("ok"))
	clock := newFakeClock()
	l, _ := NewLimiter(2, time.Minute, clock)
	c, err := NewClient(Config{GatewayURL: g.URL, Clock: clock, Limiter: l})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Chat(context.Background(), hello); err != nil {
			t.Fatal(err)
		}
	}
	if s := clock.slept(); len(s) != 1 || s[0] != time.Minute {
		t.Errorf("three calls under 2/min waited %v, want one wait of 1m", s)
	}
}

// Above the Memory high mark no call starts until answers are released down
// to the low mark.
func TestChatMemoryWatermark(t *testing.T) {
	g := newFakeGateway(t, stream("Hello", " world")) // 11 bytes an answer
	w, _ := NewWatermark(5, 20)
	c, _ := newTestClient(t, g, Config{Memory: w})
	ctx := context.Background()
	a, err := c.Chat(ctx, hello)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Chat(ctx, hello) // 22 held: paused
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Chat(short, hello); err == nil {
		t.Fatal("a call started while 22 bytes were held over the high mark 20")
	}
	if n := g.requestCount(); n != 2 {
		t.Errorf("%d requests, want 2: the paused call must not reach the gateway", n)
	}
	a.Release()
	a.Release() // twice is harmless
	if w.Level() != 11 || !w.Paused() {
		t.Fatalf("level %d paused %v after one release; want 11, still paused (low mark 5)", w.Level(), w.Paused())
	}
	b.Release()
	if _, err := c.Chat(ctx, hello); err != nil {
		t.Errorf("a call after releasing to the low mark: %v", err)
	}
}

func TestChatRejectsAnIncompleteRequest(t *testing.T) {
	g := newFakeGateway(t, stream("ok"))
	c, _ := newTestClient(t, g, Config{})
	for want, req := range map[string]ChatRequest{"model: required": {Messages: hello.Messages}, "messages: at least one": {Model: "m"}} {
		if _, err := c.Chat(context.Background(), req); err == nil || !strings.Contains(err.Error(), want) || ExitCode(err) != ExitJobFailed {
			t.Errorf("error %v, want the job's own failure saying %q", err, want)
		}
	}
	if n := g.requestCount(); n != 0 {
		t.Errorf("%d requests reached the gateway, want 0", n)
	}
}

func TestChatUnstreamedAnswer(t *testing.T) {
	g := newFakeGateway(t, reply{status: 200, header: map[string]string{"Content-Type": "application/json"},
		body: `{"choices":[{"message":{"content":"whole"},"finish_reason":"stop"}],"usage":{"completion_tokens":1}}`})
	c, _ := newTestClient(t, g, Config{})
	r, err := c.Chat(context.Background(), hello)
	if err != nil || r.Content != "whole" || r.CompletionTokens != 1 {
		t.Fatalf("got %+v, %v; want \"whole\", 1 token", r, err)
	}
}

func TestNewClientRejects(t *testing.T) {
	cases := map[string]Config{
		"GatewayURL is required":  {},
		"must start with http://": {GatewayURL: "gateway:4000"},
		"MaxAttempts -1":          {GatewayURL: "http://gw", Retry: RetryPolicy{MaxAttempts: -1}},
		"none may be negative":    {GatewayURL: "http://gw", Retry: RetryPolicy{MaxWait: -time.Second}},
		"MaxResponseBytes -5":     {GatewayURL: "http://gw", MaxResponseBytes: -5},
	}
	for want, cfg := range cases {
		if _, err := NewClient(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewClient(%+v) error %v, want one saying %q", cfg, err, want)
		}
	}
}
