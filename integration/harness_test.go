package integration

// The cluster harness (after Kafka's KafkaServerTestHarness and hashicorp/raft's testing.go):
// N brokers against the package's ZooKeeper, each test in its own chroot, each broker's data in
// t.TempDir(), every log line to t.Log. Brokers run in this process or as `samsa broker`
// processes; only processes can be killed like a crash (SIGKILL: the ZooKeeper session is
// left to expire, as after a real crash), so tests that kill brokers use processes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ClusterConfig says what StartCluster starts.
type ClusterConfig struct {
	Brokers int               // number of brokers (default 3); ids are 0..Brokers-1 as in Kafka's tests
	Process bool              // separate `samsa broker` processes (needed to kill -9 one)
	Props   map[string]string // extra broker properties (Kafka names) for every broker
	// BrokerProps are properties for one broker (by id) over Props, e.g. its broker.rack.
	BrokerProps map[int32]map[string]string
	// Listeners names each broker's listeners, all on 127.0.0.1 (default: PLAINTEXT only);
	// a name that is not a security protocol needs listener.security.protocol.map in Props.
	// Addr is the first one's address; AddrOf any one's.
	Listeners []string
	// BeforeStart runs once the chroot is named and before any broker starts: for what must
	// be in ZooKeeper first, such as the SCRAM credential brokers log in to each other with.
	BeforeStart func(chroot string)
}

// Cluster is a running set of brokers in one ZooKeeper chroot. Methods are for the test's
// goroutine.
type Cluster struct {
	t         testing.TB
	cfg       ClusterConfig
	Chroot    string // e.g. "/TestFoo-1"
	ZKConnect string // the brokers' zookeeper.connect
	Brokers   []*Broker

	zkMu sync.Mutex
	zkc  *zk.Conn
}

// Broker is one broker of a Cluster.
type Broker struct {
	c   *Cluster
	ID  int32
	Dir string // its log.dirs

	port  int            // bound port of the first listener at the first start, reused by restarts
	ports map[string]int // bound port of every listener, by name
	czxid int64          // czxid of the registration seen last (broker epoch)

	// process mode
	cmd    *exec.Cmd
	exited chan struct{}
	// in-process mode
	stopInProcess func()
	running       bool
}

// startInProcess starts one broker inside the test process from its properties, returns
// its bound PLAINTEXT address and a function that shuts it down cleanly. Set by
// inprocess_test.go (broker.New + config); nil until those packages exist.
var startInProcess func(t testing.TB, id int32, props map[string]string) (addr string, stop func(), err error)

var chrootSeq atomic.Int64

// StartCluster starts the brokers, waits until each is registered under /brokers/ids and a
// controller is elected, and stops them all when the test ends.
func StartCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	if cfg.Brokers == 0 {
		cfg.Brokers = 3
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	c := &Cluster{t: t, cfg: cfg, Chroot: fmt.Sprintf("/%s-%d", name, chrootSeq.Add(1))}
	c.ZKConnect = zkServer.Connect(c.Chroot)
	if cfg.Process {
		samsaBinary(t)
	} else if startInProcess == nil {
		t.Fatal("in-process brokers need broker.New and config (inprocess_test.go); use ClusterConfig.Process")
	}
	for i := 0; i < cfg.Brokers; i++ {
		c.Brokers = append(c.Brokers, &Broker{c: c, ID: int32(i), Dir: t.TempDir()})
	}
	if cfg.BeforeStart != nil {
		cfg.BeforeStart(c.Chroot)
	}
	// After the TempDirs: cleanups run last-in first-out, and brokers must stop before
	// their folders go.
	t.Cleanup(c.close)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Brokers))
	for i, b := range c.Brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.start()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.WaitController(30 * time.Second)
	t.Logf("cluster of %d brokers (%s) up in %v: %s", len(c.Brokers), c.mode(), time.Since(start).Round(time.Millisecond), strings.Join(c.Bootstrap(), ","))
	return c
}

func (c *Cluster) mode() string {
	if c.cfg.Process {
		return "processes"
	}
	return "in process"
}

// Bootstrap lists the running brokers' addresses.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, b := range c.Brokers {
		if b.running {
			out = append(out, b.Addr())
		}
	}
	return out
}

// Broker returns the broker with this id.
func (c *Cluster) Broker(id int32) *Broker {
	for _, b := range c.Brokers {
		if b.ID == id {
			return b
		}
	}
	c.t.Fatalf("no broker %d", id)
	return nil
}

func (c *Cluster) close() {
	var wg sync.WaitGroup
	for _, b := range c.Brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.cmd != nil {
				b.kill() // a test cluster needs no clean stop; its chroot is thrown away
			} else if b.running {
				b.stopInProcess()
				b.running = false
			}
		}()
	}
	wg.Wait()
	c.zkMu.Lock()
	if c.zkc != nil {
		c.zkc.Close()
		c.zkc = nil
	}
	c.zkMu.Unlock()
}

// props are broker b's properties: the harness's, then the test's.
func (b *Broker) props() map[string]string {
	var listeners []string
	for _, name := range b.c.listenerNames() {
		listeners = append(listeners, fmt.Sprintf("%s://127.0.0.1:%d", name, b.ports[name]))
	}
	p := map[string]string{
		"broker.id":         strconv.Itoa(int(b.ID)),
		"listeners":         strings.Join(listeners, ","),
		"log.dirs":          b.Dir,
		"zookeeper.connect": b.c.ZKConnect,
		// Short, so a killed broker's registration expires soon (tickTime is 500 ms).
		"zookeeper.session.timeout.ms":     "6000",
		"group.initial.rebalance.delay.ms": "0",
		// As Kafka's TestUtils.createBrokerConfig: brokers stopping together retry fast.
		"controlled.shutdown.retry.backoff.ms": "100",
		"offsets.topic.replication.factor":     "1",
	}
	for k, v := range b.c.cfg.Props {
		p[k] = v
	}
	for k, v := range b.c.cfg.BrokerProps[b.ID] {
		p[k] = v
	}
	return p
}

// Addr is the host:port of the broker's first listener (PLAINTEXT by default).
func (b *Broker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// AddrOf is the host:port of the broker's listener name.
func (b *Broker) AddrOf(name string) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.ports[name]))
}

// listenerNames are ClusterConfig.Listeners or PLAINTEXT.
func (c *Cluster) listenerNames() []string {
	if len(c.cfg.Listeners) == 0 {
		return []string{"PLAINTEXT"}
	}
	return c.cfg.Listeners
}

// Running says whether the broker was started and not stopped or killed.
func (b *Broker) Running() bool { return b.running }

func (b *Broker) start() error {
	if b.running {
		return fmt.Errorf("broker %d already running", b.ID)
	}
	if !b.c.cfg.Process {
		_, stop, err := startInProcess(b.c.t, b.ID, b.props())
		if err != nil {
			return fmt.Errorf("start broker %d: %w", b.ID, err)
		}
		b.stopInProcess, b.running = stop, true
		return b.waitRegistered(30 * time.Second)
	}
	cfgPath := filepath.Join(b.Dir, "..", fmt.Sprintf("server-%d.yaml", b.ID))
	var buf bytes.Buffer
	buf.WriteString("# written by the integration test harness\n")
	props := b.props()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&buf, "%s: %s\n", k, props[k])
	}
	if err := os.WriteFile(cfgPath, buf.Bytes(), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(samsaBin, "broker", "--config", cfgPath)
	w := newTestLogWriter(b.c.t, fmt.Sprintf("broker %d: ", b.ID))
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start broker %d: %w", b.ID, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		w.Close()
		if err != nil && !b.killed(cmd) {
			b.c.t.Logf("broker %d (pid %d) exited: %v", b.ID, cmd.Process.Pid, err)
		}
		close(exited)
	}()
	b.cmd, b.exited, b.running = cmd, exited, true
	return b.waitRegistered(60 * time.Second)
}

var killedCmds sync.Map // *exec.Cmd -> true once the harness killed it

func (b *Broker) killed(cmd *exec.Cmd) bool { _, ok := killedCmds.Load(cmd); return ok }

// waitRegistered waits for a new /brokers/ids/<id> (a czxid not seen before) and takes the
// bound port from it.
func (b *Broker) waitRegistered(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if b.exited != nil {
			select {
			case <-b.exited:
				b.running = false
				return fmt.Errorf("broker %d exited during start-up (its log is above)", b.ID)
			default:
			}
		}
		reg, czxid, err := b.c.registration(b.ID)
		switch {
		case err != nil:
			last = err
		case czxid == b.czxid:
			last = fmt.Errorf("still the previous registration (czxid %d)", czxid)
		default:
			ports := make(map[string]int)
			for _, name := range b.c.listenerNames() {
				port, err := reg.listenerPort(name)
				if err != nil {
					return fmt.Errorf("broker %d: %w", b.ID, err)
				}
				if b.ports[name] != 0 && port != b.ports[name] {
					return fmt.Errorf("broker %d registered port %d for %s, listens on %d", b.ID, port, name, b.ports[name])
				}
				ports[name] = port
			}
			b.ports, b.port, b.czxid = ports, ports[b.c.listenerNames()[0]], czxid
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("broker %d not registered in ZooKeeper after %v: %v", b.ID, timeout, last)
}

// Restart starts a stopped or killed broker again with the same id, data and port.
func (b *Broker) Restart() {
	b.c.t.Helper()
	if err := b.start(); err != nil {
		b.c.t.Fatal(err)
	}
}

// Kill ends a broker process like a crash: SIGKILL, no clean shutdown, its ZooKeeper session
// left to expire.
func (b *Broker) Kill() {
	b.c.t.Helper()
	if b.cmd == nil {
		b.c.t.Fatalf("broker %d: only processes can be killed (ClusterConfig.Process)", b.ID)
	}
	b.kill()
}

func (b *Broker) kill() {
	if !b.running || b.cmd == nil {
		return
	}
	killedCmds.Store(b.cmd, true)
	b.cmd.Process.Kill()
	<-b.exited
	b.running = false
}

// Pause freezes a broker process (SIGSTOP): its ZooKeeper session expires if it stays
// frozen past zookeeper.session.timeout.ms, like a long GC pause. Resume continues it.
func (b *Broker) Pause() {
	b.c.t.Helper()
	if b.cmd == nil || !b.running {
		b.c.t.Fatalf("broker %d: only a running process can be paused", b.ID)
	}
	b.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused broker process (SIGCONT).
func (b *Broker) Resume() {
	b.c.t.Helper()
	if b.cmd != nil && b.running {
		b.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Stop shuts a broker down cleanly: SIGTERM for a process (it must exit, with status 0,
// within timeout), Shutdown for one in process.
func (b *Broker) Stop(timeout time.Duration) {
	b.c.t.Helper()
	if err := b.terminate(timeout); err != nil {
		b.c.t.Fatal(err)
	}
}

func (b *Broker) terminate(timeout time.Duration) error {
	if !b.running {
		return nil
	}
	if b.cmd == nil {
		b.stopInProcess()
		b.running = false
		return nil
	}
	start := time.Now()
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
		b.running = false
		if code := b.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("broker %d exited with status %d after SIGTERM", b.ID, code)
		}
		b.c.t.Logf("broker %d stopped by SIGTERM in %v", b.ID, time.Since(start).Round(time.Millisecond))
		return nil
	case <-time.After(timeout):
		b.kill()
		return fmt.Errorf("broker %d did not exit within %v of SIGTERM", b.ID, timeout)
	}
}

// ---- ZooKeeper inspection (raw client: checks what the brokers wrote, not zkmeta's view) ----

// ZK is a raw ZooKeeper connection to the server root; use c.Path to address the chroot.
func (c *Cluster) ZK() *zk.Conn {
	c.zkMu.Lock()
	defer c.zkMu.Unlock()
	if c.zkc == nil {
		conn, _, err := zk.Connect([]string{zkServer.Addr()}, 10*time.Second,
			zk.WithLogger(discardLogger{}), zk.WithLogInfo(false))
		if err != nil {
			c.t.Fatalf("connect to ZooKeeper: %v", err)
		}
		c.zkc = conn
	}
	return c.zkc
}

// Path is p inside the cluster's chroot.
func (c *Cluster) Path(p string) string { return c.Chroot + p }

// ZKGet reads a znode in the chroot; ok is false when it does not exist.
func (c *Cluster) ZKGet(p string) (data []byte, stat *zk.Stat, ok bool) {
	c.t.Helper()
	data, stat, err := c.ZK().Get(c.Path(p))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, false
	}
	if err != nil {
		c.t.Fatalf("zk get %s: %v", c.Path(p), err)
	}
	return data, stat, true
}

// ZKChildren lists a znode's children in the chroot, sorted (nil when it does not exist).
func (c *Cluster) ZKChildren(p string) []string {
	c.t.Helper()
	kids, _, err := c.ZK().Children(c.Path(p))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		c.t.Fatalf("zk children %s: %v", c.Path(p), err)
	}
	sort.Strings(kids)
	return kids
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// brokerRegistration is /brokers/ids/<id> (version 5) as Kafka writes it.
type brokerRegistration struct {
	Version                     int               `json:"version"`
	Host                        *string           `json:"host"`
	Port                        int               `json:"port"`
	JMXPort                     int               `json:"jmx_port"`
	Timestamp                   string            `json:"timestamp"`
	Endpoints                   []string          `json:"endpoints"`
	ListenerSecurityProtocolMap map[string]string `json:"listener_security_protocol_map"`
	Features                    map[string]any    `json:"features"`
	Rack                        *string           `json:"rack"`
}

func (r brokerRegistration) listenerPort(name string) (int, error) {
	for _, ep := range r.Endpoints {
		if rest, ok := strings.CutPrefix(ep, name+"://"); ok {
			_, port, err := net.SplitHostPort(rest)
			if err != nil {
				return 0, fmt.Errorf("endpoint %q: %w", ep, err)
			}
			return strconv.Atoi(port)
		}
	}
	return 0, fmt.Errorf("no %s endpoint in %v", name, r.Endpoints)
}

func (c *Cluster) registration(id int32) (brokerRegistration, int64, error) {
	var r brokerRegistration
	data, stat, err := c.ZK().Get(c.Path(fmt.Sprintf("/brokers/ids/%d", id)))
	if err != nil {
		return r, 0, fmt.Errorf("/brokers/ids/%d: %w", id, err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, 0, fmt.Errorf("/brokers/ids/%d: %w in %q", id, err, data)
	}
	return r, stat.Czxid, nil
}

// controllerZnode is /controller (version 2).
type controllerZnode struct {
	Version              int    `json:"version"`
	BrokerID             int32  `json:"brokerid"`
	Timestamp            string `json:"timestamp"`
	KRaftControllerEpoch *int   `json:"kraftControllerEpoch"`
}

// WaitController waits for /controller and returns the controller's id.
func (c *Cluster) WaitController(timeout time.Duration) int32 {
	c.t.Helper()
	var ctl controllerZnode
	waitFor(c.t, timeout, func() error {
		data, _, ok := c.ZKGet("/controller")
		if !ok {
			return errors.New("no /controller")
		}
		return json.Unmarshal(data, &ctl)
	})
	return ctl.BrokerID
}

// ---- helpers ----

// waitFor polls fn until it returns nil, failing the test with fn's last error after timeout.
func waitFor(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testLogWriter sends a process's output to t.Log line by line, until Close (logging after
// the test ends would panic).
type testLogWriter struct {
	mu     sync.Mutex
	t      testing.TB
	prefix string
	buf    []byte
	closed bool
}

func newTestLogWriter(t testing.TB, prefix string) *testLogWriter {
	return &testLogWriter{t: t, prefix: prefix}
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.t.Log(w.prefix + string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *testLogWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 && !w.closed {
		w.t.Log(w.prefix + string(w.buf))
	}
	w.closed = true
}
