package sandboxkit

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeGateway is an OpenAI-compatible chat-completions endpoint on
// 127.0.0.1 that answers from a script, streaming SSE in small writes, each
// flushed, as a gateway relaying a provider's tokens does.
type fakeGateway struct {
	*httptest.Server
	t testing.TB

	mu       sync.Mutex
	script   []reply // consumed in order; the last one repeats
	requests []seen
	conns    int
}

type reply struct {
	status int
	header map[string]string
	body   string   // a whole body (an error or a non-streamed answer)
	events []string // SSE events, each written in two flushed pieces
	cut    bool     // close the connection after the events, without [DONE]
}

type seen struct {
	auth string
	body map[string]any
}

func newFakeGateway(t testing.TB, script ...reply) *fakeGateway {
	g := &fakeGateway{t: t, script: script}
	g.Server = httptest.NewUnstartedServer(http.HandlerFunc(g.serve))
	g.Server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			g.mu.Lock()
			g.conns++
			g.mu.Unlock()
		}
	}
	g.Start()
	t.Cleanup(g.Close)
	return g
}

func (g *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "no such route", http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.requests = append(g.requests, seen{auth: r.Header.Get("Authorization"), body: body})
	rep := g.script[0]
	if len(g.script) > 1 {
		g.script = g.script[1:]
	}
	g.mu.Unlock()

	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.events == nil {
		w.WriteHeader(rep.status)
		fmt.Fprint(w, rep.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	for _, ev := range rep.events {
		half := len(ev) / 2
		for _, piece := range []string{ev[:half], ev[half:]} {
			fmt.Fprint(w, piece)
			f.Flush()
		}
	}
	if rep.cut {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	f.Flush()
	fmt.Fprint(w, ": the proxy's goodbye, after [DONE]\n\n")
}

func (g *fakeGateway) requestCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.requests)
}

func (g *fakeGateway) connCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conns
}

// stream is a streamed answer of the given tokens, a keep-alive comment, and
// a last chunk with the usage.
func stream(tokens ...string) reply {
	evs := []string{"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n", ": keep-alive\n\n"}
	for _, tok := range tokens {
		b, _ := json.Marshal(tok)
		evs = append(evs, fmt.Sprintf("data: {\"choices\":[{\"delta\":{\"content\":%s}}]}\n\n", b))
	}
	evs = append(evs,
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
		fmt.Sprintf("data: {\"choices\":[],\"usage\":{\"completion_tokens\":%d}}\n\n", len(tokens)))
	return reply{status: 200, events: evs}
}

func status(code int, header ...string) reply {
	r := reply{status: code, body: fmt.Sprintf(`{"error":{"message":"HTTP %d"}}`, code), header: map[string]string{}}
	for i := 0; i+1 < len(header); i += 2 {
		r.header[header[i]] = header[i+1]
	}
	return r
}
