package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	s := Start(t)
	out, err := s.FourLetterWord("srvr")
	if err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr: %q, %v", out, err)
	}
	if got, want := s.Connect("/a/b"), s.Addr()+"/a/b"; got != want {
		t.Fatalf("Connect = %q, want %q", got, want)
	}
	if got := s.Connect(""); got != s.Addr() {
		t.Fatalf("Connect(\"\") = %q", got)
	}
	s.Kill()
	if _, err := s.FourLetterWord("srvr"); err == nil {
		t.Fatal("server still answers after Kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if out, err := s.FourLetterWord("srvr"); err != nil || !strings.Contains(out, "Mode:") {
		t.Fatalf("after restart: %q, %v", out, err)
	}
	s.Stop()
	s.Stop()
}

// The JVM must not outlive a test binary that panics.
func TestKilledWhenTestProcessPanics(t *testing.T) {
	if os.Getenv("ZKTEST_PANIC_HELPER") == "1" {
		s, err := StartProcess("")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("PID=%d\n", s.PID())
		panic("helper panics on purpose")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWhenTestProcessPanics$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ZKTEST_PANIC_HELPER=1")
	out, _ := cmd.CombinedOutput()
	m := regexp.MustCompile(`PID=(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("helper printed no pid:\n%s", out)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(b), ") Z ") {
			return // zombie: dead, waiting for reaping by init
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("java pid %d survived the panicking test process", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMissingZooKeeperFails(t *testing.T) {
	old := zooKeeperJar
	zooKeeperJar = "/nonexistent/zookeeper.jar"
	defer func() { zooKeeperJar = old }()
	_, err := StartProcess("")
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install -y zookeeper") {
		t.Fatalf("StartProcess without the jar = %v, want ErrNotInstalled with the install hint", err)
	}
}
