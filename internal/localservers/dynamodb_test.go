package localservers

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestDynamoDBAnswers(t *testing.T) {
	endpoint := DynamoDB(t)
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("got endpoint %q, want one on 127.0.0.1", endpoint)
	}
	// An unsigned request is refused, but by DynamoDB: the server speaks HTTP.
	resp, err := http.Post(endpoint, "application/x-amz-json-1.0", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("got HTTP %d, want 400 for an unsigned request", resp.StatusCode)
	}
}

func TestStopFreesThePort(t *testing.T) {
	s, err := StartDynamoDB()
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop() // twice is fine
	addr := strings.TrimPrefix(s.Endpoint, "http://")
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s still answers after Stop", addr)
	}
}
