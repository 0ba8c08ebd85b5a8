package broker

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/samsa-kafka/samsa/internal/zktest"
)

// One ZooKeeper for the package, started on first use; every test takes its own chroot.
var (
	testZKOnce sync.Once
	testZKSrv  *zktest.Server
	testZKErr  error
)

// testZK returns the package's ZooKeeper, failing the test (never skipping) if it cannot
// start, e.g. because ZooKeeper is not installed.
func testZK(t testing.TB) *zktest.Server {
	t.Helper()
	testZKOnce.Do(func() { testZKSrv, _, testZKErr = zktest.Shared() })
	if testZKErr != nil {
		t.Fatalf("zookeeper: %v", testZKErr)
	}
	return testZKSrv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testZKSrv != nil {
		testZKSrv.Stop()
	}
	if code == 0 && testZKErr != nil {
		fmt.Fprintln(os.Stderr, testZKErr)
		code = 1
	}
	os.Exit(code)
}
