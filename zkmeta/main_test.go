package zkmeta

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/sirupsen/logrus"
)

// One ZooKeeper for the package; every test works in its own chroot.
var zkServer *zktest.Server

func TestMain(m *testing.M) {
	s, stop, err := zktest.Shared()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zkServer = s
	code := m.Run()
	stop()
	if code == 0 {
		if err := checkNoLeakedGoroutines(5 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkNoLeakedGoroutines fails if goroutines started by zkmeta outlive their Client.
func checkNoLeakedGoroutines(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "samsa/zkmeta.(*Client)") || strings.Contains(g, "zktest.(*Proxy)") {
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

// logWriter sends log lines to t.Log until the test ends (go-zookeeper may log late).
type logWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
	buf  bytes.Buffer // everything logged, for assertions
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *logWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func testLogger(t testing.TB) (*logrus.Entry, *logWriter) {
	w := &logWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() }) // registered first: runs last
	l := logrus.New()
	l.SetOutput(w)
	l.SetLevel(logrus.InfoLevel)
	return logrus.NewEntry(l), w
}

var (
	chroots   sync.Map // testing.TB -> string
	chrootSeq atomic.Int64
)

// chrootFor is the test's own chroot, fresh for every run (-count=N shares one ZooKeeper).
func chrootFor(t testing.TB) string {
	if v, ok := chroots.Load(t); ok {
		return v.(string)
	}
	name := fmt.Sprintf("/%s_%d", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), chrootSeq.Add(1))
	v, _ := chroots.LoadOrStore(t, name)
	return v.(string)
}

// connectTo opens a client to connect and closes it at the end of the test.
func connectTo(t testing.TB, connect string, timeout time.Duration, log *logrus.Entry) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := Connect(ctx, connect, timeout, log)
	if err != nil {
		t.Fatalf("Connect(%s): %v", connect, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newClient connects to the test's chroot with top-level paths created.
func newClient(t testing.TB) *Client {
	t.Helper()
	log, _ := testLogger(t)
	c := connectTo(t, zkServer.Connect(chrootFor(t)), 6*time.Second, log)
	if err := c.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	return c
}

// rawConn is a go-zookeeper connection without chroot, to see exactly what is stored.
func rawConn(t testing.TB) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{zkServer.Addr()}, 6*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(zkLogger{logrus.NewEntry(logrus.New()).WithField("raw", true)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func rawGet(t testing.TB, conn *zk.Conn, path string) ([]byte, *zk.Stat) {
	t.Helper()
	data, st, err := conn.Get(path)
	if err != nil {
		t.Fatalf("raw get %s: %v", path, err)
	}
	return data, st
}

// waitFor polls fn until it is true or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func recvEvent(t testing.TB, ch <-chan Event, timeout time.Duration) Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event within %v", timeout)
	}
	return Event{}
}

func recvSession(t testing.TB, ch <-chan SessionEvent, timeout time.Duration) SessionEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(timeout):
		t.Fatalf("no session event within %v", timeout)
	}
	return SessionEvent{}
}
