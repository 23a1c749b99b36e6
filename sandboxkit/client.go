package sandboxkit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Config wires a Client; only GatewayURL is required.
type Config struct {
	GatewayURL string // e.g. http://gateway:4000; the client posts to /v1/chat/completions under it
	APIKey     string // sent as "Authorization: Bearer"; from the task definition's secrets

	HTTPClient       *http.Client // default: NewTransport's, no overall timeout (the call's ctx bounds it)
	Limiter          *Limiter     // nil: no limit
	Breaker          *Breaker     // nil: a breaker with the defaults
	Retry            RetryPolicy
	Memory           *Watermark // nil: unbounded; else a call starts only while the level is not paused
	MaxResponseBytes int        // one answer's bound; default 1 MiB
	Clock            Clock      // the limiter's, breaker's and backoff's time; default the wall clock
	Seed             uint64     // the backoff jitter's seed; 0 draws one
}

// Client calls an OpenAI-compatible chat-completions endpoint of the LLM
// gateway with streaming, under the limiter, the breaker and the retry
// policy, and records each successful call's TTFT and TPOT.
type Client struct {
	url, apiKey string
	http        *http.Client
	limiter     *Limiter
	breaker     *Breaker
	retry       RetryPolicy
	memory      *Watermark
	maxBytes    int
	clock       Clock
	latency     *Latency

	mu    sync.Mutex
	rng   *rand.Rand
	stats Stats
}

// Stats counts what a client did.
type Stats struct {
	Calls           int `json:"calls"`            // Chat calls
	Succeeded       int `json:"succeeded"`        // calls that returned an answer
	Requests        int `json:"requests"`         // HTTP requests, retries included
	Overloaded      int `json:"overloaded"`       // 429/503 answers
	BreakerRefusals int `json:"breaker_refusals"` // times the breaker made a call wait
}

// NewClient checks cfg and fills the defaults.
func NewClient(cfg Config) (*Client, error) {
	if cfg.GatewayURL == "" {
		return nil, errors.New("sandboxkit: GatewayURL is required")
	}
	if !strings.HasPrefix(cfg.GatewayURL, "http://") && !strings.HasPrefix(cfg.GatewayURL, "https://") {
		return nil, fmt.Errorf("sandboxkit: GatewayURL %q: must start with http:// or https://", cfg.GatewayURL)
	}
	if err := cfg.Retry.check(); err != nil {
		return nil, fmt.Errorf("sandboxkit: %w", err)
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("sandboxkit: MaxResponseBytes %d: must be ≥ 0 (0 takes 1 MiB)", cfg.MaxResponseBytes)
	}
	c := &Client{
		url:      strings.TrimSuffix(cfg.GatewayURL, "/") + "/v1/chat/completions",
		apiKey:   cfg.APIKey,
		http:     cfg.HTTPClient,
		limiter:  cfg.Limiter,
		breaker:  cfg.Breaker,
		retry:    cfg.Retry.withDefaults(),
		memory:   cfg.Memory,
		maxBytes: cmp.Or(cfg.MaxResponseBytes, 1<<20),
		clock:    cmp.Or[Clock](cfg.Clock, WallClock{}),
		latency:  NewLatency(),
	}
	if c.http == nil {
		c.http = &http.Client{Transport: NewTransport(TransportOptions{})}
	}
	if c.breaker == nil {
		b, err := NewBreaker(BreakerConfig{Seed: cfg.Seed})
		if err != nil {
			return nil, err
		}
		c.breaker = b
	}
	seed := cmp.Or(cfg.Seed, rand.Uint64())
	c.rng = rand.New(rand.NewPCG(seed, ^seed))
	return c, nil
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is the body of a chat-completions call; the client sets Stream.
type ChatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
}

// Response is a call's answer.
//
// Reasoning models stream their reasoning before the answer, in
// choices[0].delta.reasoning_content (DeepSeek, vLLM) or delta.reasoning
// (OpenRouter, Ollama), and count it in usage.completion_tokens, with
// usage.completion_tokens_details.reasoning_tokens saying how much of it was
// reasoning. The times are measured on the client's Clock:
//
//   - TTFT is request sent → the first token of any kind, reasoning
//     included: what the provider took to start producing.
//   - TimeToAnswer is request sent → the first answer token (content); the
//     TTFT when no reasoning was streamed.
//   - TPOT is (last token − first token) / (tokens in that span − 1): the
//     span's tokens are all completion tokens when the reasoning was
//     streamed, and the answer's alone when the provider kept its
//     reasoning hidden (reasoning_tokens counted but none streamed).
//   - AnswerTPOT is the same over the answer tokens alone.
//
// Token counts come from the stream's usage; without one, each chunk
// counts one token (gateways stream one token per chunk).
type Response struct {
	Content          string
	Reasoning        string // the streamed reasoning, if any
	FinishReason     string
	CompletionTokens int // from the stream's usage, else the chunks counted; reasoning included
	ReasoningTokens  int // usage's reasoning_tokens, else the reasoning chunks counted
	TTFT             time.Duration
	TimeToAnswer     time.Duration
	TPOT             time.Duration // 0 for a span of one token
	AnswerTPOT       time.Duration // 0 for an answer of one token
	Attempts         int

	release func()
}

// Release returns the answer's bytes to the client's Memory watermark; call
// it once the answer is graded. Safe to call twice.
func (r *Response) Release() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// RequestError is the gateway refusing the request itself (a 4xx other than
// 429): the job's own failure, not retried.
type RequestError struct {
	Status int
	Body   string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("the gateway rejected the request: HTTP %d: %s", e.Status, e.Body)
}

// Latency is the TTFT/TPOT summary of the successful calls so far.
func (c *Client) Latency() LatencySummary { return c.latency.Summary() }

// Stats is what the client did so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Client) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// Chat makes one call, retrying provider failures: a 429/503 (honouring
// Retry-After), a 500/502/504, a network error, a stream cut short or an
// error event inside it. It returns a *ProviderError when the retries or
// their wait budget run out, or the breaker stays open; a *RequestError for
// a 4xx; ctx's error if ctx ends.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*Response, error) {
	switch {
	case req.Model == "":
		return nil, errors.New("chat request: model: required")
	case len(req.Messages) == 0:
		return nil, errors.New("chat request: messages: at least one required")
	}
	type streamOptions struct {
		IncludeUsage bool `json:"include_usage"` // the last chunk carries the token count
	}
	body, err := json.Marshal(struct {
		ChatRequest
		Stream        bool          `json:"stream"`
		StreamOptions streamOptions `json:"stream_options"`
	}{req, true, streamOptions{true}})
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	c.count(func(s *Stats) { s.Calls++ })
	if c.memory != nil {
		if err := c.memory.Wait(ctx); err != nil {
			return nil, err
		}
	}
	var waited time.Duration
	wait := func(d time.Duration, cause error, attempts, status int) error {
		if waited+d > c.retry.MaxWait {
			return &ProviderError{Status: status, Attempts: attempts, Err: fmt.Errorf("retry budget %s spent: %w", c.retry.MaxWait, cause)}
		}
		waited += d
		return c.clock.Sleep(ctx, d)
	}
	for attempt := 1; ; {
		// 1. The breaker: an open one makes the call wait, not fail, while the budget lasts.
		permit, ok, hold := c.breaker.Allow(c.clock.Now())
		if !ok {
			c.count(func(s *Stats) { s.BreakerRefusals++ })
			if err := wait(hold, ErrBreakerOpen, attempt-1, 0); err != nil {
				return nil, err
			}
			continue
		}
		// 2. The limiter.
		if c.limiter != nil {
			if err := c.limiter.Wait(ctx); err != nil {
				c.breaker.Record(c.clock.Now(), permit, Abandoned)
				return nil, err
			}
		}
		// 3. The request.
		c.count(func(s *Stats) { s.Requests++ })
		resp, status, retryAfter, err := c.do(ctx, body)
		verdict := Answered
		switch {
		case err == nil:
			c.breaker.Record(c.clock.Now(), permit, Answered)
			resp.Attempts = attempt
			c.latency.Record(resp.TTFT, resp.TimeToAnswer, resp.TPOT)
			c.count(func(s *Stats) { s.Succeeded++ })
			return resp, nil
		case ctx.Err() != nil:
			c.breaker.Record(c.clock.Now(), permit, Abandoned)
			return nil, ctx.Err()
		case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
			verdict = Overloaded
			c.count(func(s *Stats) { s.Overloaded++ })
		case status >= 500:
			verdict = Failed
		case status == 0:
			verdict = Abandoned // the gateway did not answer: no word on its load
		}
		c.breaker.Record(c.clock.Now(), permit, verdict)
		var reqErr *RequestError
		if errors.As(err, &reqErr) {
			return nil, err
		}
		// 4. The backoff: the longest of the jittered backoff and Retry-After.
		if attempt == c.retry.MaxAttempts {
			return nil, &ProviderError{Status: status, Attempts: attempt, Err: err}
		}
		if retryAfter > c.retry.MaxRetryAfter {
			return nil, &ProviderError{Status: status, Attempts: attempt, Err: fmt.Errorf("Retry-After %s is over %s: %w", retryAfter, c.retry.MaxRetryAfter, err)}
		}
		c.mu.Lock()
		d := max(c.retry.Backoff(attempt, c.rng), retryAfter)
		c.mu.Unlock()
		if err := wait(d, err, attempt, status); err != nil {
			return nil, err
		}
		attempt++
	}
}

// do sends one request and reads its answer. It returns the HTTP status (0
// if none came) and Retry-After with any error.
func (c *Client) do(ctx context.Context, body []byte) (*Response, int, time.Duration, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, 0, &RequestError{Body: err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if c.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	sent := c.clock.Now()
	hresp, err := c.http.Do(hreq)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("send: %w", err)
	}
	defer func() {
		// Read what follows [DONE] (a last newline, a usage event): a body
		// not read to its end cannot go back to the keep-alive pool.
		io.Copy(io.Discard, io.LimitReader(hresp.Body, 64<<10))
		hresp.Body.Close()
	}()
	status := hresp.StatusCode
	if status < 200 || status > 299 {
		msg, _ := io.ReadAll(io.LimitReader(hresp.Body, 512))
		text := strings.TrimSpace(string(msg))
		retryAfter := RetryAfter(hresp.Header, c.clock.Now())
		if status >= 400 && status < 500 && status != http.StatusTooManyRequests {
			return nil, status, 0, &RequestError{Status: status, Body: text}
		}
		return nil, status, retryAfter, fmt.Errorf("HTTP %d: %s", status, text)
	}
	if mt, _, _ := mime.ParseMediaType(hresp.Header.Get("Content-Type")); mt != "text/event-stream" {
		r, err := c.readWhole(hresp.Body, sent)
		return r, status, 0, err
	}
	r, err := c.readStream(hresp.Body, sent)
	return r, status, 0, err
}

// chunk is the part of a chat-completions stream chunk the client reads.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens        int `json:"completion_tokens"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// span is when one kind of token (reasoning, answer, either) came, and how
// many chunks of it.
type span struct {
	first, last time.Time
	chunks      int
}

func (s *span) add(at time.Time) {
	if s.chunks == 0 {
		s.first = at
	}
	s.last = at
	s.chunks++
}

// perToken is the span's time over the tokens after its first; 0 for one.
func (s span) perToken(tokens int) time.Duration {
	if s.chunks == 0 || tokens < 2 {
		return 0
	}
	return s.last.Sub(s.first) / time.Duration(tokens-1)
}

// readStream assembles the answer from the SSE stream, timing its chunks
// (Response says what each time covers).
func (c *Client) readStream(body io.Reader, sent time.Time) (*Response, error) {
	sse := NewSSEReader(body, c.maxBytes)
	var (
		content, reasoning    strings.Builder
		tokens, think, answer span
		usage, usageReasons   int
		usageDetails          bool
		finish                string
	)
	for {
		ev, err := sse.Next()
		if errors.Is(err, ErrDone) || err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, ErrEventTooLarge) {
				return nil, &RequestError{Status: http.StatusOK, Body: err.Error()}
			}
			return nil, fmt.Errorf("stream cut after %d chunks: %w", tokens.chunks, err)
		}
		at := c.clock.Now()
		var ch chunk
		if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
			return nil, fmt.Errorf("stream chunk %d is not JSON: %w", tokens.chunks+1, err)
		}
		if ch.Error != nil {
			return nil, fmt.Errorf("error event in the stream: %s", ch.Error.Message)
		}
		if ch.Usage != nil {
			usage = ch.Usage.CompletionTokens
			if d := ch.Usage.CompletionTokensDetails; d != nil {
				usageReasons, usageDetails = d.ReasoningTokens, true
			}
		}
		for _, choice := range ch.Choices {
			finish = cmp.Or(choice.FinishReason, finish)
			thought := choice.Delta.ReasoningContent + choice.Delta.Reasoning
			said := choice.Delta.Content
			if thought == "" && said == "" {
				continue // a role or finish chunk: no token
			}
			if content.Len()+reasoning.Len()+len(thought)+len(said) > c.maxBytes {
				return nil, &RequestError{Status: http.StatusOK, Body: fmt.Sprintf("the answer exceeds %d bytes", c.maxBytes)}
			}
			tokens.add(at)
			if thought != "" {
				reasoning.WriteString(thought)
				think.add(at)
			}
			if said != "" {
				content.WriteString(said)
				answer.add(at)
			}
		}
	}
	r := &Response{Content: content.String(), Reasoning: reasoning.String(), FinishReason: finish}
	// The counts: usage's when the stream gave one, else the chunks.
	r.CompletionTokens, r.ReasoningTokens = think.chunks+answer.chunks, think.chunks
	answerTokens := answer.chunks
	if usage > 0 {
		r.CompletionTokens = usage
		switch {
		case usageDetails:
			r.ReasoningTokens = usageReasons
			answerTokens = max(usage-usageReasons, 0)
		case think.chunks == 0:
			answerTokens = usage // no reasoning, streamed or counted
		}
	}
	// The span's tokens: all of them when the reasoning was streamed (or
	// there was none); the answer's alone when it was kept hidden.
	spanTokens := r.CompletionTokens
	if think.chunks == 0 && r.ReasoningTokens > 0 {
		spanTokens = answerTokens
	}
	if tokens.chunks > 0 {
		r.TTFT = tokens.first.Sub(sent)
		r.TPOT = tokens.perToken(spanTokens)
	}
	if answer.chunks > 0 {
		r.TimeToAnswer = answer.first.Sub(sent)
		r.AnswerTPOT = answer.perToken(answerTokens)
	}
	c.hold(r)
	return r, nil
}

// readWhole reads a gateway that answered without streaming: the whole
// answer is the first token.
func (c *Client) readWhole(body io.Reader, sent time.Time) (*Response, error) {
	data, err := io.ReadAll(io.LimitReader(body, int64(c.maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if len(data) > c.maxBytes {
		return nil, &RequestError{Status: http.StatusOK, Body: fmt.Sprintf("the answer exceeds %d bytes", c.maxBytes)}
	}
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return nil, fmt.Errorf("answer is not JSON: %w", err)
	}
	if len(ch.Choices) == 0 {
		return nil, errors.New("answer has no choices")
	}
	took := c.clock.Now().Sub(sent)
	r := &Response{Content: ch.Choices[0].Message.Content, FinishReason: ch.Choices[0].FinishReason, TTFT: took, TimeToAnswer: took}
	if ch.Usage != nil {
		r.CompletionTokens = ch.Usage.CompletionTokens
		if d := ch.Usage.CompletionTokensDetails; d != nil {
			r.ReasoningTokens = d.ReasoningTokens
		}
	}
	c.hold(r)
	return r, nil
}

// hold charges the answer to the Memory watermark until Release.
func (c *Client) hold(r *Response) {
	if c.memory == nil {
		return
	}
	n := int64(len(r.Content) + len(r.Reasoning))
	c.memory.Add(n)
	r.release = func() { c.memory.Release(n) }
}
