package localservers

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDynamoDBListensOnLoopbackOnly: DynamoDB Local, which has no host flag,
// is not reachable through the machine's other addresses.
func TestDynamoDBListensOnLoopbackOnly(t *testing.T) {
	assertLoopbackOnly(t, DynamoDB(t))
}

// TestSQSListensOnLoopbackOnly: fauxqs, whose own start binds every
// interface, is not reachable through the machine's other addresses.
func TestSQSListensOnLoopbackOnly(t *testing.T) {
	assertLoopbackOnly(t, SQS(t))
}

// assertLoopbackOnly checks the server at endpoint two ways: a connection to
// its port on each non-loopback address of the machine is refused, and (on
// Linux) every socket listening on the port is bound to a loopback address.
// A machine with neither a non-loopback address nor /proc cannot tell.
func assertLoopbackOnly(t *testing.T, endpoint string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("endpoint %s: no port", endpoint)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", u.Port()), time.Second); err != nil {
		t.Fatalf("the server does not answer on 127.0.0.1:%d: %v", port, err)
	} else {
		c.Close()
	}

	checked := 0
	for _, ip := range machineAddresses(t) {
		checked++
		addr := net.JoinHostPort(ip.String(), u.Port())
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("connected to %s: the server listens beyond loopback", addr)
			continue
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("connect to %s: %v, want connection refused", addr, err)
		}
	}

	listeners, err := listeningAddresses(port)
	switch {
	case errors.Is(err, os.ErrNotExist): // not Linux
	case err != nil:
		t.Fatal(err)
	case len(listeners) == 0:
		t.Errorf("no socket listens on port %d in /proc/net/tcp{,6}", port)
	default:
		checked++
		for _, ip := range listeners {
			if !ip.IsLoopback() {
				t.Errorf("a socket listens on %s port %d, want 127.0.0.1 only", ip, port)
			}
		}
	}
	if checked == 0 {
		t.Skip("no non-loopback address and no /proc/net/tcp: nothing to check the binding with")
	}
}

// machineAddresses lists the machine's addresses a neighbour could reach:
// not loopback, not IPv6 link-local (which needs a zone to dial).
func machineAddresses(t *testing.T) []net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() || n.IP.IsMulticast() {
			continue
		}
		out = append(out, n.IP)
	}
	return out
}

// listeningAddresses reads the local addresses of the TCP sockets in state
// LISTEN on port from /proc/net/tcp and /proc/net/tcp6 (hex, in the
// kernel's byte order per 32-bit word); os.ErrNotExist when there is no
// /proc/net/tcp.
func listeningAddresses(port int) ([]net.IP, error) {
	var out []net.IP
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if err != nil {
			if name == "/proc/net/tcp6" && errors.Is(err, os.ErrNotExist) {
				continue // IPv6 disabled
			}
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			hexIP, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
				continue
			}
			ip, err := procIP(hexIP)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, ip)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// procIP decodes an address of /proc/net/tcp*: 8 or 32 hex digits, each
// 32-bit word in little-endian order (x86, arm64).
func procIP(s string) (net.IP, error) {
	if len(s) != 8 && len(s) != 32 {
		return nil, fmt.Errorf("address %q: want 8 or 32 hex digits", s)
	}
	ip := make(net.IP, len(s)/2)
	for w := 0; w < len(ip); w += 4 {
		word, err := strconv.ParseUint(s[2*w:2*w+8], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("address %q: %w", s, err)
		}
		ip[w], ip[w+1], ip[w+2], ip[w+3] = byte(word), byte(word>>8), byte(word>>16), byte(word>>24)
	}
	return ip, nil
}

func TestProcIP(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F":                         "127.0.0.1",
		"00000000":                         "0.0.0.0",
		"0000000000000000FFFF00000100007F": "127.0.0.1", // ::ffff:127.0.0.1, IPv4-mapped
		"00000000000000000000000001000000": "::1",
		"00000000000000000000000000000000": "::",
	} {
		got, err := procIP(in)
		if err != nil || !got.Equal(net.ParseIP(want)) {
			t.Errorf("procIP(%s) = %v, %v; want %s", in, got, err, want)
		}
	}
}
