//go:build linux

package sandboxkit

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// noDelay reads TCP_NODELAY off the connection's socket.
func noDelay(t *testing.T, c net.Conn) int {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		v, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

func TestDialerSetsNoDelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tc := range []struct {
		opts TransportOptions
		want int
	}{{TransportOptions{}, 1}, {TransportOptions{nagle: true}, 0}} {
		c, err := Dialer(tc.opts)(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if got := noDelay(t, c); got != tc.want {
			t.Errorf("Nagle %v: TCP_NODELAY = %d on the socket, want %d", tc.opts.nagle, got, tc.want)
		}
		c.Close()
	}
}

func TestNewTransportPools(t *testing.T) {
	tr := NewTransport(TransportOptions{})
	if tr.MaxIdleConnsPerHost < 32 || tr.IdleConnTimeout == 0 || tr.DisableKeepAlives || tr.DialContext == nil {
		t.Errorf("transport idle per host %d, idle timeout %s, keep-alives off %v: want a pool for concurrent calls to one gateway",
			tr.MaxIdleConnsPerHost, tr.IdleConnTimeout, tr.DisableKeepAlives)
	}
}
