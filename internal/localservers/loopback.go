package localservers

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// loopbackSource is the launcher that binds DynamoDB Local to 127.0.0.1.
//
//go:embed LoopbackDynamoDBLocal.java
var loopbackSource []byte

// loopbackClass is the launcher's class name, the java command's main class.
const loopbackClass = "LoopbackDynamoDBLocal"

// launcher compiles the launcher once per process.
var launcher struct {
	once sync.Once
	dir  string
	err  error
}

// loopbackLauncher returns a directory holding LoopbackDynamoDBLocal.class,
// compiled against the DynamoDB Local in jarDir. The class is cached under
// the user's cache directory (~/.cache/evalsched on Linux), keyed by the
// source and the DynamoDB Local version, so javac runs (~1 s) once per
// machine and version, not once per test binary. Concurrent first runs
// each compile into a directory of their own and the first rename wins.
func loopbackLauncher(jarDir string) (string, error) {
	launcher.once.Do(func() { launcher.dir, launcher.err = compileLauncher(jarDir) })
	return launcher.dir, launcher.err
}

func compileLauncher(jarDir string) (string, error) {
	sum := sha256.Sum256(append(append([]byte{}, loopbackSource...), DynamoDBLocalDir...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	parent := filepath.Join(cache, "evalsched", "dynamodb-local-loopback")
	dir := filepath.Join(parent, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, loopbackClass+".class")); err == nil {
		return dir, nil
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", errors.New("DynamoDB Local is bound to 127.0.0.1 by a launcher compiled with javac, which is not on PATH: install a JDK 17 or newer (not only a JRE), e.g. apt-get install openjdk-17-jdk-headless")
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("cache for the DynamoDB Local launcher: %w", err)
	}
	work, err := os.MkdirTemp(parent, "build-")
	if err != nil {
		return "", fmt.Errorf("cache for the DynamoDB Local launcher: %w", err)
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, loopbackClass+".java")
	if err := os.WriteFile(src, loopbackSource, 0o644); err != nil {
		return "", err
	}
	classes := filepath.Join(work, "classes")
	classpath := filepath.Join(jarDir, "DynamoDBLocal.jar") + string(os.PathListSeparator) + filepath.Join(jarDir, "DynamoDBLocal_lib", "*")
	cmd := exec.Command(javac, "-nowarn", "-d", classes, "-cp", classpath, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compile the DynamoDB Local launcher (%s): %v\n%s", loopbackClass+".java", err, out)
	}
	if err := os.Rename(classes, dir); err != nil {
		// Another process cached it first: use theirs.
		if _, statErr := os.Stat(filepath.Join(dir, loopbackClass+".class")); statErr != nil {
			return "", fmt.Errorf("cache the DynamoDB Local launcher: %w", err)
		}
	}
	return dir, nil
}
