package transaction

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if a goroutine started by this package outlives the tests (every
// coordinator is shut down by its test's cleanup).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(); leaked != "" {
			fmt.Fprintln(os.Stderr, "leaked goroutines:\n"+leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func leakedGoroutines() string {
	var leaked string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = ""
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "coordinator/transaction.") && !strings.Contains(g, "leakedGoroutines") && !strings.Contains(g, "TestMain") {
				leaked += g + "\n\n"
			}
		}
		if leaked == "" {
			return ""
		}
	}
	return leaked
}
