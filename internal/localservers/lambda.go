package localservers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// rieModule is the Lambda runtime interface emulator (docs/local-aws.md).
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// rieOnce builds the emulator once per test binary.
var rie struct {
	once sync.Once
	path string
	err  error
}

// Function is one Lambda function running under the emulator.
type Function struct {
	t      T
	url    string
	output *syncBuffer
	mu     sync.Mutex // the emulator takes one invoke at a time
}

// Lambda builds ./functions/<name> as it ships (static linux binary named
// bootstrap, -tags lambda.norpc) and runs it under the runtime interface
// emulator on 127.0.0.1 with env (plus the test's environment minus any AWS_
// and EVALSCHED_ settings, so nothing points at a real account). Both stop
// when the test ends.
func Lambda(t T, name string, env ...string) *Function {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rie.once.Do(func() {
		dir, err := os.MkdirTemp("", "evalsched-rie-")
		if err != nil {
			rie.err = err
			return
		}
		if rie.err = goTool(dir, []string{"GOBIN=" + dir}, "install", rieModule); rie.err == nil {
			rie.path = filepath.Join(dir, "aws-lambda-rie")
		}
	})
	if rie.err != nil {
		t.Fatalf("build the runtime interface emulator: %v", rie.err)
	}
	dir := t.TempDir()
	if err := goTool(root, []string{"CGO_ENABLED=0", "GOOS=linux"},
		"build", "-tags", "lambda.norpc", "-trimpath", "-o", filepath.Join(dir, "bootstrap"), "./functions/"+name); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(rie.path, "--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort), filepath.Join(dir, "bootstrap"))
	cmd.Env = append(cleanEnv(), "AWS_EC2_METADATA_DISABLED=true")
	cmd.Env = append(cmd.Env, env...)
	f := &Function{t: t, url: "http://" + addr + "/2015-03-31/functions/function/invocations", output: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = f.output, f.output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the emulator and the function it started
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("the emulator of %s exited:\n%s", name, f.output)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("the emulator of %s does not answer on %s:\n%s", name, addr, f.output)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Invoke posts one event and returns the function's answer; a returned
// error of the function fails the test with the function's output.
func (f *Function) Invoke(event any) []byte {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	body, ok := event.([]byte)
	if !ok {
		var err error
		if body, err = json.Marshal(event); err != nil {
			f.t.Fatal(err)
		}
	}
	resp, err := http.Post(f.url, "application/json", bytes.NewReader(body))
	if err != nil {
		f.t.Fatalf("invoke: %v\n%s", err, f.output)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || strings.Contains(out.String(), `"errorMessage"`) {
		f.t.Fatalf("invoke: HTTP %d %s\nfunction output:\n%s", resp.StatusCode, out.String(), f.output)
	}
	return out.Bytes()
}

// Output is what the emulator and the function printed so far.
func (f *Function) Output() string { return f.output.String() }

// cleanEnv is the test's environment without settings that could point a
// function elsewhere (a profile, a real endpoint, real credentials).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AWS_") && name != "AWS_CA_BUNDLE" || strings.HasPrefix(name, "EVALSCHED_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func goTool(dir string, env []string, args ...string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is not on PATH")
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
