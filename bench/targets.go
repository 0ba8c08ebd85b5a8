package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// target is one running cluster under test: its brokers are child processes of the bench,
// so their CPU time can be read from /proc.
type target struct {
	name      string   // "samsa", "kfake", "samsa-3"
	bootstrap []string // host:port of every broker
	pids      []int
	dirs      []string // broker data folders
	debug     []string // samsa.debug.listener of every broker (pprof); empty for kfake
	stop      func()
}

// cpuSeconds is the user+system CPU time of the target's broker processes so far
// (/proc/<pid>/stat fields 14 and 15, in clock ticks).
func (t *target) cpuSeconds() float64 {
	var sum float64
	for _, pid := range t.pids {
		sum += procCPUSeconds(pid)
	}
	return sum
}

// clkTck is sysconf(_SC_CLK_TCK); 100 on every Linux we run on.
var clkTck = 100.0

func procCPUSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: fields count from after its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64) // field 14
	stime, _ := strconv.ParseFloat(f[12], 64) // field 15
	return (utime + stime) / clkTck
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startProcess starts a child that dies with the bench (Pdeathsig) and logs to logPath.
func startProcess(logPath string, name string, args ...string) (*exec.Cmd, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { cmd.Wait(); lf.Close() }()
	return cmd, nil
}

func stopProcess(cmd *exec.Cmd, grace time.Duration) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
}

// startSamsa starts n samsa brokers (ids 1..n) against ZooKeeper zkConnect (with a chroot
// unique to this cluster) and waits until all are registered and a controller is known.
// extra is appended to every broker's YAML config.
func startSamsa(ctx context.Context, bin, dir, name, zkConnect string, n int, extra string) (*target, error) {
	t := &target{name: name}
	var cmds []*exec.Cmd
	t.stop = func() {
		for _, c := range cmds {
			stopProcess(c, 10*time.Second)
		}
	}
	for id := 1; id <= n; id++ {
		port, err := freePort()
		if err != nil {
			t.stop()
			return nil, err
		}
		bdir := filepath.Join(dir, fmt.Sprintf("%s-broker-%d", name, id))
		t.dirs = append(t.dirs, bdir)
		if err := os.MkdirAll(filepath.Join(bdir, "data"), 0o755); err != nil {
			t.stop()
			return nil, err
		}
		debug, err := freeAddr()
		if err != nil {
			t.stop()
			return nil, err
		}
		t.debug = append(t.debug, debug)
		cfg := fmt.Sprintf("broker.id: %d\nlisteners: PLAINTEXT://127.0.0.1:%d\nlog.dirs: %s\nzookeeper.connect: %s\nsamsa.log.level: warn\nsamsa.debug.listener: %s\n",
			id, port, filepath.Join(bdir, "data"), zkConnect, debug)
		if n == 1 {
			// __transaction_state as a one-broker Kafka needs it (the default factor of 3
			// would keep transactions waiting for brokers that never come).
			cfg += "transaction.state.log.replication.factor: 1\ntransaction.state.log.min.isr: 1\n"
		}
		cfg += extra
		cfgPath := filepath.Join(bdir, "server.yaml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			t.stop()
			return nil, err
		}
		cmd, err := startProcess(filepath.Join(bdir, "broker.log"), bin, "broker", "--config", cfgPath)
		if err != nil {
			t.stop()
			return nil, err
		}
		cmds = append(cmds, cmd)
		t.pids = append(t.pids, cmd.Process.Pid)
		t.bootstrap = append(t.bootstrap, fmt.Sprintf("127.0.0.1:%d", port))
	}
	if err := waitBrokers(ctx, t.bootstrap, n, 60*time.Second); err != nil {
		t.stop()
		return nil, fmt.Errorf("%s: %w (logs under %s)", name, err, dir)
	}
	return t, nil
}

// startKfake starts bench/kfakeserver with n brokers.
func startKfake(ctx context.Context, bin, dir, name string, n int) (*target, error) {
	var ports []string
	t := &target{name: name}
	for i := 0; i < n; i++ {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports = append(ports, strconv.Itoa(p))
		t.bootstrap = append(t.bootstrap, "127.0.0.1:"+strconv.Itoa(p))
	}
	cmd := exec.Command(bin, "-ports", strings.Join(ports, ","))
	cmd.SysProcAttr = childSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start kfakeserver: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
		}
		cmd.Wait()
		lf.Close()
		close(exited)
	}()
	t.pids = []int{cmd.Process.Pid}
	t.stop = func() {
		stdin.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	if err := waitBrokers(ctx, t.bootstrap, n, 30*time.Second); err != nil {
		t.stop()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// waitBrokers polls Metadata until n brokers and a controller are listed.
func waitBrokers(ctx context.Context, seeds []string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestRetries(0))
		if err == nil {
			adm := kadm.NewClient(cl)
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			md, err := adm.BrokerMetadata(rctx)
			cancel()
			cl.Close()
			if err == nil && len(md.Brokers) >= n && md.Controller >= 0 {
				return nil
			}
			if err != nil {
				last = err
			} else {
				last = fmt.Errorf("%d of %d brokers, controller %d", len(md.Brokers), n, md.Controller)
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("brokers not ready after %v: %v", timeout, last)
}

// createTopic creates a topic and waits until every partition has a leader that answers
// a ListOffsets for it.
func createTopic(ctx context.Context, seeds []string, topic string, partitions int32, rf int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(rctx, partitions, rf, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w", topic, resp.Err)
	}
	for {
		offs, err := adm.ListEndOffsets(rctx, topic)
		ready := err == nil
		if ready {
			n := 0
			offs.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					n++
				}
			})
			ready = n == int(partitions)
		}
		if ready {
			return nil
		}
		select {
		case <-rctx.Done():
			return fmt.Errorf("topic %s: partitions not ready: %v", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
