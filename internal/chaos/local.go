package chaos

// Local clusters: the brokers' processes are on this machine, so faults are signals to them.
// Two kinds:
//
//   - a scripts/cluster.sh directory (--local-cluster DIR): broker-N/server.yaml and
//     broker-N/broker.pid. kill, term and pause work; a stopped broker is started again the
//     way it was started (its command line, environment and working directory, read from
//     /proc before the signal), its pid written back, as `scripts/cluster.sh start-broker`.
//   - a cluster this process starts (--start-local N --zookeeper ZK): the same layout, and
//     every broker's listener and ZooKeeper connection go through a Proxy of this process (the
//     broker advertises its proxy, so clients and the other brokers connect through it too).
//     Cutting a broker's ZooKeeper proxy for longer than its session timeout expires its
//     session the way a network failure does; cut-broker closes its connections.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// LocalCluster is a set of broker processes on this machine.
type LocalCluster struct {
	dir     string
	temp    bool // dir was made by StartLocalCluster and goes with Close
	owned   bool // started by StartLocalCluster: Close stops the brokers
	brokers map[int32]*localBroker
	zkAddrs []string
	chroot  string
	zkc     *zk.Conn
	log     *logrus.Entry
}

type localBroker struct {
	id             int32
	dir            string // DIR/broker-N
	config         string // DIR/broker-N/server.yaml
	sessionTimeout time.Duration
	listen, zk     *Proxy // nil unless started by StartLocalCluster
	realAddr       string // the listener behind listen
	launch         launchInfo
}

// launchInfo is how a broker process is started again.
type launchInfo struct {
	argv []string
	env  []string
	cwd  string
}

// Bootstrap is the brokers' addresses as clients should use them (the proxies when there are).
func (c *LocalCluster) Bootstrap() []string {
	var out []string
	for _, id := range c.ids() {
		b := c.brokers[id]
		if b.listen != nil {
			out = append(out, b.listen.Addr())
		} else if a := readProps(b.config)["listeners"]; a != "" {
			if _, hp, ok := strings.Cut(strings.Split(a, ",")[0], "://"); ok {
				out = append(out, hp)
			}
		}
	}
	return out
}

// Dir is the cluster's directory (broker-N/broker.log are the brokers' logs).
func (c *LocalCluster) Dir() string { return c.dir }

func (c *LocalCluster) ids() []int32 {
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// OpenLocalCluster opens a scripts/cluster.sh directory of running brokers.
func OpenLocalCluster(dir string, log *logrus.Entry) (*LocalCluster, error) {
	cfgs, _ := filepath.Glob(filepath.Join(dir, "broker-*", "server.yaml"))
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("no broker-N/server.yaml in %s (a scripts/cluster.sh cluster directory)", dir)
	}
	c := &LocalCluster{dir: dir, brokers: map[int32]*localBroker{}, log: log}
	for _, cfg := range cfgs {
		props := readProps(cfg)
		id, err := strconv.Atoi(props["broker.id"])
		if err != nil {
			return nil, fmt.Errorf("%s: broker.id %q: %v", cfg, props["broker.id"], err)
		}
		b := &localBroker{id: int32(id), dir: filepath.Dir(cfg), config: cfg, sessionTimeout: 18 * time.Second}
		if ms, err := strconv.Atoi(props["zookeeper.session.timeout.ms"]); err == nil {
			b.sessionTimeout = time.Duration(ms) * time.Millisecond
		}
		c.brokers[b.id] = b
		if c.zkAddrs == nil {
			c.zkAddrs, c.chroot = splitZKConnect(props["zookeeper.connect"])
		}
	}
	if err := c.connectZK(); err != nil {
		return nil, err
	}
	return c, nil
}

// StartLocalCluster starts o.StartLocal brokers (ids 1..N, like scripts/cluster.sh) with
// o.SamsaBinary (default: this executable) against o.ZooKeeper, each behind a proxy for its
// listener and one for its ZooKeeper connection, in o.LocalCluster (default: a temporary
// directory removed by Close). It returns when every broker is registered and a controller is
// elected; NewInjector(o, ...) then applies faults to this cluster. Close stops it.
func StartLocalCluster(ctx context.Context, o *FaultOptions, log *logrus.Entry) (*LocalCluster, error) {
	if o.StartLocal <= 0 {
		return nil, errors.New("StartLocalCluster: --start-local is 0")
	}
	c := &LocalCluster{dir: o.LocalCluster, owned: true, brokers: map[int32]*localBroker{}, log: log}
	c.zkAddrs, c.chroot = splitZKConnect(o.ZooKeeper)
	if len(c.zkAddrs) == 0 {
		return nil, fmt.Errorf("--zookeeper %q: no server", o.ZooKeeper)
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "samsa-chaos-")
		if err != nil {
			return nil, err
		}
		c.dir, c.temp = d, true
	}
	bin := o.SamsaBinary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	if err := c.connectZK(); err != nil {
		return nil, err
	}
	for i := 1; i <= o.StartLocal; i++ {
		b, err := c.writeBroker(int32(i), bin, o.LocalProps)
		if err != nil {
			return nil, err
		}
		c.brokers[b.id] = b
		if err := c.start(b); err != nil {
			return nil, err
		}
	}
	for _, id := range c.ids() {
		if err := c.waitRegistered(ctx, c.brokers[id], 0, 60*time.Second); err != nil {
			return nil, err
		}
	}
	if err := c.waitController(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	log.WithFields(logrus.Fields{"brokers": o.StartLocal, "dir": c.dir, "bootstrap": strings.Join(c.Bootstrap(), ",")}).Info("local cluster up")
	o.local = c
	ok = true
	return c, nil
}

// writeBroker makes broker id's proxies, directory and server.yaml.
func (c *LocalCluster) writeBroker(id int32, bin string, extra []string) (*localBroker, error) {
	b := &localBroker{id: id, dir: filepath.Join(c.dir, fmt.Sprintf("broker-%d", id))}
	b.config = filepath.Join(b.dir, "server.yaml")
	if err := os.MkdirAll(filepath.Join(b.dir, "data"), 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	b.realAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if b.listen, err = NewProxy("127.0.0.1:0", b.realAddr); err != nil {
		return nil, err
	}
	if b.zk, err = NewProxy("127.0.0.1:0", c.zkAddrs...); err != nil {
		b.listen.Close()
		return nil, err
	}
	props := map[string]string{
		"broker.id":            strconv.Itoa(int(id)),
		"listeners":            "PLAINTEXT://" + b.realAddr,
		"advertised.listeners": "PLAINTEXT://" + b.listen.Addr(),
		"log.dirs":             filepath.Join(b.dir, "data"),
		"zookeeper.connect":    b.zk.Addr() + c.chroot,
		// Short, so that expire-zk-session and a killed broker's registration take seconds.
		"zookeeper.session.timeout.ms":         "6000",
		"group.initial.rebalance.delay.ms":     "0",
		"controlled.shutdown.retry.backoff.ms": "100",
		"samsa.state.change.log.file":          filepath.Join(b.dir, "state-change.log"),
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString("# generated by samsa chaos --start-local\n")
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s: %s\n", k, props[k])
	}
	if err := os.WriteFile(b.config, []byte(sb.String()), 0o644); err != nil {
		return nil, err
	}
	b.sessionTimeout = 6 * time.Second
	if ms, err := strconv.Atoi(props["zookeeper.session.timeout.ms"]); err == nil {
		b.sessionTimeout = time.Duration(ms) * time.Millisecond
	}
	b.launch = launchInfo{argv: []string{bin, "broker", "--config", b.config}, env: os.Environ()}
	return b, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Close stops the brokers this process started (SIGCONT, SIGTERM, SIGKILL after 15 s), closes
// the proxies and removes a temporary directory. A scripts/cluster.sh cluster keeps running.
func (c *LocalCluster) Close() error {
	if c.owned {
		done := make(chan struct{}, len(c.brokers))
		for _, b := range c.brokers {
			go func() {
				defer func() { done <- struct{}{} }()
				pid, err := c.pid(b)
				if err != nil {
					return
				}
				syscall.Kill(pid, syscall.SIGCONT)
				syscall.Kill(pid, syscall.SIGTERM)
				if !c.waitExit(b, pid, 15*time.Second) {
					syscall.Kill(pid, syscall.SIGKILL)
					c.waitExit(b, pid, 5*time.Second)
				}
			}()
		}
		for range c.brokers {
			<-done
		}
	}
	for _, b := range c.brokers {
		if b.listen != nil {
			b.listen.Close()
		}
		if b.zk != nil {
			b.zk.Close()
		}
	}
	if c.zkc != nil {
		c.zkc.Close()
	}
	if c.temp {
		return os.RemoveAll(c.dir)
	}
	return nil
}

// ---- processes ----

// pid is broker b's running process from its broker.pid, checked against its command line (pid
// files outlive their processes, and pids are reused), as scripts/cluster.sh's broker_pid.
func (c *LocalCluster) pid(b *localBroker) (int, error) {
	data, err := os.ReadFile(filepath.Join(b.dir, "broker.pid"))
	if err != nil {
		return 0, fmt.Errorf("broker %d is not running: %v", b.id, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("broker %d: pid file: %v", b.id, err)
	}
	if !isBroker(pid, b.config) {
		return 0, fmt.Errorf("broker %d (pid %d) is not running", b.id, pid)
	}
	return pid, nil
}

// isBroker says whether pid runs with config on its command line (a zombie has none).
func isBroker(pid int, config string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), config)
}

// capture remembers how pid was started, so that it can be started again after a signal.
func (b *localBroker) capture(pid int) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return
	}
	li := launchInfo{argv: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && !strings.HasSuffix(exe, " (deleted)") {
		li.argv[0] = exe // the path it was started by may be relative to its cwd
	}
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && len(env) > 0 {
		li.env = strings.Split(strings.TrimRight(string(env), "\x00"), "\x00")
	}
	li.cwd, _ = os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	b.launch = li
}

// start launches broker b in its own session, appending to its broker.log, and writes its pid
// file (scripts/cluster.sh's broker_launch).
func (c *LocalCluster) start(b *localBroker) error {
	li := b.launch
	if len(li.argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		li.argv = []string{exe, "broker", "--config", b.config}
	}
	logf, err := os.OpenFile(filepath.Join(b.dir, "broker.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(li.argv[0], li.argv[1:]...)
	cmd.Env, cmd.Dir = li.env, li.cwd
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start broker %d: %w", b.id, err)
	}
	go func() { // reap it, whoever ends it
		cmd.Wait()
		logf.Close()
	}()
	if err := os.WriteFile(filepath.Join(b.dir, "broker.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	c.log.WithFields(logrus.Fields{"broker": b.id, "pid": cmd.Process.Pid}).Info("broker started")
	return nil
}

// waitExit polls until pid no longer runs broker b.
func (c *LocalCluster) waitExit(b *localBroker, pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for isBroker(pid, b.config) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// ---- ZooKeeper (read only: registrations and the controller, as scripts/cluster.sh reads them) ----

func splitZKConnect(s string) (servers []string, chroot string) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, chroot = s[:i], strings.TrimRight(s[i:], "/")
	}
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	return servers, chroot
}

type discardZKLog struct{}

func (discardZKLog) Printf(string, ...any) {}

func (c *LocalCluster) connectZK() error {
	conn, _, err := zk.Connect(c.zkAddrs, 10*time.Second, zk.WithLogger(discardZKLog{}), zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("connect to ZooKeeper %v: %w", c.zkAddrs, err)
	}
	c.zkc = conn
	return nil
}

// owner is the session holding /brokers/ids/<id> (0: none).
func (c *LocalCluster) owner(id int32) (int64, error) {
	_, st, err := c.zkc.Get(fmt.Sprintf("%s/brokers/ids/%d", c.chroot, id))
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.EphemeralOwner, nil
}

// waitRegistered waits until broker b runs and holds /brokers/ids/<id> in a session other than
// old (after a crash the old session holds it until it expires).
func (c *LocalCluster) waitRegistered(ctx context.Context, b *localBroker, old int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if _, err := c.pid(b); err != nil {
			return fmt.Errorf("broker %d exited during start-up (log: %s): %v", b.id, filepath.Join(b.dir, "broker.log"), err)
		}
		owner, err := c.owner(b.id)
		if err == nil && owner != 0 && owner != old {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("broker %d not registered after %v (last: %v; log: %s)", b.id, timeout, last, filepath.Join(b.dir, "broker.log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *LocalCluster) waitController(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if ok, _, err := c.zkc.Exists(c.chroot + "/controller"); err == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no controller after %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readProps reads a server.yaml as scripts/cluster.sh writes it (key: value lines) or a
// server.properties (key=value).
func readProps(path string) map[string]string {
	m := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.IndexAny(line, ":=")
		if i < 0 {
			continue
		}
		m[strings.TrimSpace(line[:i])] = strings.Trim(strings.TrimSpace(line[i+1:]), `"'`)
	}
	return m
}
