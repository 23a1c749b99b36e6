package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPauseResumeKeepTheSDKQuiet: pause and resume against DynamoDB Local
// (whose error responses fail the SDK's response checksum) print no SDK
// log line, neither on the command's stderr nor on the process's (where
// the SDK's default logger writes).
func TestPauseResumeKeepTheSDKQuiet(t *testing.T) {
	withTables(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stderr
	os.Stderr = f
	var cmdErr strings.Builder
	for _, args := range [][]string{{"pause", "acme"}, {"resume", "acme"}, {"pause", "acme/search"}, {"resume", "acme/search"}} {
		_, stderr, code := cli(t, args...)
		cmdErr.WriteString(stderr)
		if code != exitOK {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
	os.Stderr = saved
	process, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{cmdErr.String(), string(process)} {
		if strings.Contains(out, "SDK") || strings.Contains(out, "WARN") {
			t.Errorf("SDK log lines reached the terminal:\n%s", out)
		}
	}
}

func TestLocalEndpoint(t *testing.T) {
	for v, want := range map[string]bool{
		"http://127.0.0.1:8000": true, "http://localhost:4566": true, "http://sqs.us-east-1.localhost:9324": true,
		"http://[::1]:8000": true, "https://dynamodb.eu-west-1.amazonaws.com": false, "": false,
	} {
		t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", v)
		if got := localEndpoint("AWS_ENDPOINT_URL_DYNAMODB"); got != want {
			t.Errorf("%q: got %v, want %v", v, got, want)
		}
	}
}
