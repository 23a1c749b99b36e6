package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBridgeCheck: --check validates the file and prints it with its
// defaults, the CloudWatch names it leaves empty taken from the
// scheduler's variables; a broken file is a usage error naming the field.
func TestBridgeCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "bridge.json")
	if err := os.WriteFile(good, []byte(`{"targets": [{"url": "http://127.0.0.1:8000/metrics", "preset": "vllm"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVALSCHED_METRIC_NAME", "Waiting")
	t.Setenv("EVALSCHED_INSERVICE_METRIC_NAME", "InService")
	var out, errb bytes.Buffer
	if code := run([]string{"bridge", "--config", good, "--check"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{`"namespace": "LLMGateway"`, `"depth": "Waiting"`, `"in_service": "InService"`, `"preset": "vllm"`, `"interval": "1s"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--check printed %s; want %q in it", out.String(), want)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"targets": [{"url": "http://h/m", "preset": "tgi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"bridge", "--config", bad}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "targets[0].preset") {
		t.Errorf("bad preset: exit %d, %q; want 2 naming targets[0].preset", code, errb.String())
	}
	t.Setenv(envBridgeConfig, "")
	errb.Reset()
	if code := run([]string{"bridge"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), envBridgeConfig) {
		t.Errorf("no configuration: exit %d, %q", code, errb.String())
	}
}
