package sandboxkit

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// TransportOptions tunes the gateway transport. The zero value is the
// recommended setting.
type TransportOptions struct {
	// nagle turns Nagle's algorithm back on (TCP_NODELAY off): unexported,
	// so only the package's own benchmark, which shows the stall it causes,
	// can set it.
	nagle bool

	DialTimeout           time.Duration // default 5 s
	KeepAlive             time.Duration // TCP keep-alive probe interval; default 30 s
	IdleConnTimeout       time.Duration // an idle pooled connection is closed after; default 90 s
	TLSHandshakeTimeout   time.Duration // default 10 s
	ResponseHeaderTimeout time.Duration // default 0: a gateway may hold a request in its queue for long
	MaxIdleConnsPerHost   int           // default 64: the stdlib's 2 would redial for every concurrent call
	MaxConnsPerHost       int           // default 0, unlimited: the limiter bounds the calls
}

// NewTransport returns the HTTP transport for the LLM gateway: keep-alive
// with a connection pool sized for many concurrent calls to one host, and
// TCP_NODELAY set explicitly on every connection it dials.
func NewTransport(o TransportOptions) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           Dialer(o),
		ForceAttemptHTTP2:     true, // a custom DialContext turns HTTP/2 off unless asked
		MaxIdleConns:          cmp.Or(o.MaxIdleConnsPerHost, 64),
		MaxIdleConnsPerHost:   cmp.Or(o.MaxIdleConnsPerHost, 64),
		MaxConnsPerHost:       o.MaxConnsPerHost,
		IdleConnTimeout:       cmp.Or(o.IdleConnTimeout, 90*time.Second),
		TLSHandshakeTimeout:   cmp.Or(o.TLSHandshakeTimeout, 10*time.Second),
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// Dialer returns the DialContext the transport uses. Go's net package already
// turns Nagle off on every TCP connection it creates (newTCPConn in
// net/tcpsock.go calls setNoDelay(fd, true), after any Dialer.Control hook has
// run, so a Control hook could not change it either way). The kit still sets
// the option itself, after the dial, on the *net.TCPConn: the behaviour the
// SSE stream depends on is then written down here rather than inherited, and
// the benchmark can turn it off through the same path.
func Dialer(o TransportOptions) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   cmp.Or(o.DialTimeout, 5*time.Second),
		KeepAlive: cmp.Or(o.KeepAlive, 30*time.Second),
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			if err := tc.SetNoDelay(!o.nagle); err != nil {
				c.Close()
				return nil, fmt.Errorf("set TCP_NODELAY on %s: %w", addr, err)
			}
		}
		return c, nil
	}
}
