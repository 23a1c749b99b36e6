package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evalsched/evalsched/internal/devstack"
)

// TestMakeLocal runs `make local ARGS="--speed 20 --interval 2s"` as a
// terminal would (its own process group), waits until the system is up,
// and presses Ctrl-C (SIGINT to the whole group): the flags reached the
// command, it stopped cleanly, and make reports no error.
func TestMakeLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs the local mode")
	}
	makePath, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not on PATH; this test is of the Makefile's local target")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// -o node_modules: installed already (the other tests need it), never
	// reinstalled by a test.
	cmd := exec.Command(makePath, "-o", "node_modules", "local", `ARGS=--speed 20 --interval 2s --log `+filepath.Join(t.TempDir(), "pass.log"))
	cmd.Dir = root
	// A make of its own, whatever make runs the tests (its jobserver, -s).
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out lockedBuffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, pw), &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops it.") {
				close(up)
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	select {
	case <-up:
	case err := <-done:
		t.Fatalf("make local ended before it was up (%v):\n%s", err, out.String())
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("make local not up after 3 minutes:\n%s", out.String())
	}
	time.Sleep(3 * time.Second) // a pass or two
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("make local still running 30 s after Ctrl-C:\n%s", out.String())
	}
	got := out.String()
	for _, want := range []string{"world speed 20×, a pass every 2s", "evalsched local: stopping", "evalsched local: stopped; the pass log is in"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Error") {
		t.Errorf("make reports an error after Ctrl-C:\n%s", got)
	}
	// make itself dies by the SIGINT it got, as on any Ctrl-C, after its
	// recipe exited 0; a recipe that failed would have made it print the
	// error first.
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT) {
		t.Errorf("make ended with %v, want exit 0 or SIGINT", err)
	}
}

// lockedBuffer collects a process's output from two streams.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLocalDefaultJobLivesSeveralPasses: at the default speed a default
// job lives several passes, so local mode does not run in waves of one
// pass.
func TestLocalDefaultJobLivesSeveralPasses(t *testing.T) {
	m := devstack.DefaultModel("m")
	life := m.Start + time.Duration(m.Calls)*(m.Call+m.Think)
	if passes := float64(life) / defaultLocalSpeed / float64(defaultLocalInterval); passes < 3 {
		t.Errorf("a default job lives %.1f passes at the default speed, want at least 3", passes)
	}
}
