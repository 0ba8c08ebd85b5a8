package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package if a client, fake cluster or command goroutine outlives the
// tests (every tool must close what it opens).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := checkLeaks(5 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func checkLeaks(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "franz-go/pkg/kgo.") || strings.Contains(g, "franz-go/pkg/kfake.") ||
				(strings.Contains(g, "samsa/cmd/samsa.") && !strings.Contains(g, "samsa/cmd/samsa.checkLeaks") && !strings.Contains(g, "samsa/cmd/samsa.TestMain")) {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leaked goroutines:\n%s", strings.Join(leaked, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
