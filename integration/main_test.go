package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/samsa-kafka/samsa/internal/zktest"
)

// zkServer is the package's one ZooKeeper; every test works in its own chroot.
var zkServer *zktest.Server

func TestMain(m *testing.M) {
	s, stop, err := zktest.Shared()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: start ZooKeeper: %v\n", err)
		os.Exit(1)
	}
	zkServer = s
	code := m.Run()
	stop()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	samsaBin  string
	buildErr  error
)

// samsaBinary builds ./cmd/samsa once per test binary (only when a test needs processes).
func samsaBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "samsa-it-bin-")
		if buildErr != nil {
			return
		}
		samsaBin = filepath.Join(binDir, "samsa")
		// go test puts its own go first in PATH.
		cmd := exec.Command("go", "build", "-o", samsaBin, "github.com/samsa-kafka/samsa/cmd/samsa")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/samsa: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return samsaBin
}
