package localservers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// FauxqsDir is where npm puts fauxqs 1.9.2, the SQS stand-in, relative to
// the repository root.
const FauxqsDir = "node_modules/fauxqs"

// fauxqsScript serves fauxqs on 127.0.0.1 only: its own startFauxqs binds
// every interface. The port is the script's one argument.
const fauxqsScript = `import("fauxqs").then(async ({buildApp}) => {
  await buildApp({logger: false}).listen({port: Number(process.argv[1]), host: "127.0.0.1"});
}).catch((err) => { console.error(err); process.exit(1); });`

// SQS starts fauxqs for the test and stops it in t.Cleanup. It fails the
// test when the server cannot start; a missing node_modules says to run
// `make test`, which installs it.
//
// Queue URLs are those CreateQueue returns (fauxqs names its host
// "sqs.<region>.localhost"): requests go to endpoint, and the URL in them
// must match the one fauxqs made, character for character.
func SQS(t T) (endpoint string) {
	t.Helper()
	s, err := StartSQS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.Endpoint
}

// StartSQS starts fauxqs on a free port of 127.0.0.1 and waits until it
// answers. It is for TestMain, which may share one server per test binary;
// the caller must Stop it.
func StartSQS() (*Server, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, FauxqsDir, "package.json")); err != nil {
		return nil, fmt.Errorf("fauxqs is not installed (%s missing): run `make test`, which runs npm ci first, or `npm ci` in %s", FauxqsDir, root)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("fauxqs needs node (20 or newer) on PATH")
	}
	var last error
	// As for DynamoDB Local: the free port may be taken between the probe
	// and the listen, so a start that dies early is tried again.
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := startFauxqs(root, node, port)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func startFauxqs(root, node string, port int) (*Server, error) {
	// Run from the repository root, so import("fauxqs") finds node_modules.
	cmd := exec.Command(node, "-e", fauxqsScript, strconv.Itoa(port))
	cmd.Dir = root
	return serve("fauxqs", cmd, port, 15*time.Second)
}
