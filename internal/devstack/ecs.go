package devstack

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/evalsched/evalsched/internal/dynamostore"
)

// ecsEndpoint answers, on loopback, the one ECS call made of a running
// system: StopTask, from the CLI (evalsched cancel --stop-running) and from
// the pass's yield step (localECS). Local mode prints its URL as
// AWS_ENDPOINT_URL_ECS, so the CLI's ECS client stops the world's sandboxes
// instead of calling the real ECS endpoint.
type ecsEndpoint struct {
	srv *http.Server
	url string
}

// serveECS starts the endpoint on 127.0.0.1 for the world's tasks.
func serveECS(w *world) (*ecsEndpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &ecsEndpoint{url: "http://" + ln.Addr().String()}
	e.srv = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { serveStopTask(w, rw, r) })}
	go e.srv.Serve(ln) //nolint:errcheck // ends with Close
	return e, nil
}

func (e *ecsEndpoint) Close() { _ = e.srv.Close() }

// localECS is the SDK's ECS client pointed at the endpoint, as the
// scheduler Lambda's is at ECS: its StopTask serializes over HTTP for real.
// Built from options, not the shared config, so no AWS_* variable of the
// developer's shell (a profile, AWS_CA_BUNDLE) reaches it.
func localECS(url string) *ecs.Client {
	return ecs.New(ecs.Options{Region: dynamostore.LocalRegion, BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
}

func serveStopTask(w *world, rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "application/x-amz-json-1.1")
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonEC2ContainerServiceV20141113.")
	var in struct {
		Task   string `json:"task"`
		Reason string `json:"reason"`
	}
	body, _ := io.ReadAll(r.Body)
	fail := func(code, msg string) {
		rw.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(rw).Encode(map[string]string{"__type": code, "message": msg})
	}
	switch {
	case op != "StopTask":
		fail("ClientException", "evalsched local answers StopTask only, not "+op)
	case json.Unmarshal(body, &in) != nil:
		fail("ClientException", "bad JSON")
	case !w.StopTask(in.Task, in.Reason):
		// As ECS answers for a task it no longer runs.
		fail("InvalidParameterException", "The referenced task was not found.")
	default:
		_ = json.NewEncoder(rw).Encode(map[string]any{"task": map[string]any{"taskArn": in.Task, "lastStatus": "RUNNING", "desiredStatus": "STOPPED", "stopCode": "UserInitiated", "stoppedReason": in.Reason}})
	}
}
