package sandboxkit

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkWriteWriteRead is the exchange Nagle's algorithm and delayed ACK
// stall together: the client writes a small header and a small body in two
// writes, and the server answers only once it has both. With Nagle on, the
// body waits in the client's kernel until the header is ACKed; the server's
// kernel delays that ACK, hoping to ride on the answer that cannot come
// before the body: both wait out the delayed-ACK timer (40 ms minimum on
// Linux). TCP_NODELAY sends the body at once. Numbers in BENCHMARKS.md.
func BenchmarkWriteWriteRead(b *testing.B) {
	const header, body = 64, 64
	for _, bc := range []struct {
		name  string
		nagle bool
	}{{"TCP_NODELAY", false}, {"Nagle", true}} {
		b.Run(bc.name, func(b *testing.B) {
			addr := echoAfter(b, header+body)
			conn, err := Dialer(TransportOptions{nagle: bc.nagle})(context.Background(), "tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			h, p, reply := make([]byte, header), make([]byte, body), make([]byte, 1)
			b.ResetTimer()
			for range b.N {
				if _, err := conn.Write(h); err != nil {
					b.Fatal(err)
				}
				if _, err := conn.Write(p); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(conn, reply); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/exchange")
		})
	}
}

// echoAfter serves one connection on 127.0.0.1: it reads n bytes, answers one
// byte, and again.
func echoAfter(b *testing.B, n int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, n)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf[:1]); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// BenchmarkChatStream is one streamed call of eight tokens through the kit's
// client against a gateway on 127.0.0.1 that flushes every token as a small
// write, with Nagle on or off at either end. It shows where the option
// matters for SSE: at the end that writes the small pieces.
func BenchmarkChatStream(b *testing.B) {
	for _, bc := range []struct {
		name                 string
		clientNagle, gwNagle bool
	}{
		{"client=NODELAY/gateway=NODELAY", false, false},
		{"client=Nagle/gateway=NODELAY", true, false},
		{"client=NODELAY/gateway=Nagle", false, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := newFakeGateway(b, stream("a", "b", "c", "d", "e", "f", "g", "h"))
			if bc.gwNagle {
				prev := g.Config.ConnState
				g.Config.ConnState = func(c net.Conn, s http.ConnState) {
					if s == http.StateNew {
						c.(*net.TCPConn).SetNoDelay(false)
					}
					prev(c, s)
				}
			}
			c, err := NewClient(Config{GatewayURL: g.URL,
				HTTPClient: &http.Client{Transport: NewTransport(TransportOptions{nagle: bc.clientNagle})}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := c.Chat(context.Background(), hello); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			s := c.Latency()
			b.ReportMetric(s.TTFT.P50, "ttft-p50-ms")
			b.ReportMetric(s.TPOT.P50, "tpot-p50-ms")
		})
	}
}
