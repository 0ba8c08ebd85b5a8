package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// The built-in actions on a LocalCluster. Each applies a fault to broker id and returns the
// function that undoes it; the injector holds the fault in between.

func (c *LocalCluster) minHold(action string, id int32) time.Duration {
	if b := c.brokers[id]; b != nil && action == "expire" {
		// The session must outlive its timeout on the server; apply waits for the expiry itself.
		return b.sessionTimeout + time.Second
	}
	return 0
}

func (c *LocalCluster) apply(ctx context.Context, action string, id int32) (undo undoFunc, detail string, err error) {
	b := c.brokers[id]
	if b == nil {
		return nil, "", fmt.Errorf("broker %d is not in the local cluster %s", id, c.dir)
	}
	switch action {
	case "kill", "term":
		return c.stop(ctx, b, action)
	case "pause":
		pid, err := c.pid(b)
		if err != nil {
			return nil, "", err
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return nil, "", err
		}
		undo := func(context.Context) (string, error) {
			return "SIGCONT", syscall.Kill(pid, syscall.SIGCONT)
		}
		// Signals are delivered asynchronously: the window starts once it is stopped.
		for i := 0; i < 100 && procState(pid) != 'T'; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		return undo, fmt.Sprintf("SIGSTOP pid %d", pid), nil
	case "expire":
		return c.expire(ctx, b)
	case "cut":
		return c.cut(b)
	}
	return nil, "", fmt.Errorf("no local action %q", action)
}

// stop kills (SIGKILL) or terminates (SIGTERM: a controlled shutdown) broker b and waits until
// it has exited; undo starts it again and waits for its new registration.
func (c *LocalCluster) stop(ctx context.Context, b *localBroker, action string) (undoFunc, string, error) {
	pid, err := c.pid(b)
	if err != nil {
		return nil, "", err
	}
	b.capture(pid)
	old, _ := c.owner(b.id)
	sig, wait := syscall.SIGKILL, 10*time.Second
	if action == "term" {
		sig, wait = syscall.SIGTERM, 60*time.Second // Kafka's controlled shutdown can retry for a while
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return nil, "", err
	}
	detail := fmt.Sprintf("%v pid %d", signalName(sig), pid)
	if !c.waitExit(b, pid, wait) {
		syscall.Kill(pid, syscall.SIGKILL)
		c.waitExit(b, pid, 10*time.Second)
		detail += fmt.Sprintf(" (still running after %v: SIGKILL)", wait)
	}
	return func(ctx context.Context) (string, error) {
		if err := c.start(b); err != nil {
			return "", err
		}
		// A crashed broker's old session holds its znode until it expires.
		if err := c.waitRegistered(ctx, b, old, b.sessionTimeout+90*time.Second); err != nil {
			return "", err
		}
		newPid, _ := c.pid(b)
		return fmt.Sprintf("restarted as pid %d, registered", newPid), nil
	}, detail, nil
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// expire cuts broker b's ZooKeeper connection (its proxy) until ZooKeeper has expired the
// session, which it sees as its /brokers/ids/<id> znode vanishing; undo heals the connection
// and waits for the broker to register in a new session, as after any expiry.
func (c *LocalCluster) expire(ctx context.Context, b *localBroker) (undoFunc, string, error) {
	if b.zk == nil {
		return nil, "", fmt.Errorf("broker %d connects to ZooKeeper directly: expire-zk-session needs --start-local", b.id)
	}
	old, err := c.owner(b.id)
	if err != nil {
		return nil, "", err
	}
	start := time.Now()
	b.zk.Cut()
	undo := func(ctx context.Context) (string, error) {
		b.zk.Heal()
		if err := c.waitRegistered(ctx, b, old, 60*time.Second); err != nil {
			return "", err
		}
		return "healed; registered in a new session", nil
	}
	limit := 3*b.sessionTimeout + 5*time.Second
	for {
		owner, err := c.owner(b.id)
		if err == nil && owner != old {
			return undo, fmt.Sprintf("ZooKeeper connection cut; session %#x expired after %v", old, time.Since(start).Round(100*time.Millisecond)), nil
		}
		if time.Since(start) > limit {
			return undo, fmt.Sprintf("ZooKeeper connection cut; session %#x still alive after %v", old, limit), fmt.Errorf("session %#x of broker %d did not expire within %v", old, b.id, limit)
		}
		select {
		case <-ctx.Done():
			return undo, "ZooKeeper connection cut; interrupted", nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cut drops every connection of broker b: those to it (clients, followers fetching from it,
// the controller's requests) at its own proxy, and its own outgoing ones (its fetchers, its
// controller's requests) at the other brokers' proxies, recognised by the socket's owner.
func (c *LocalCluster) cut(b *localBroker) (undoFunc, string, error) {
	if b.listen == nil {
		return nil, "", fmt.Errorf("broker %d is not behind a proxy: cut-broker needs --start-local", b.id)
	}
	pid, err := c.pid(b)
	if err != nil {
		return nil, "", err
	}
	before := b.listen.Conns()
	b.listen.Cut()
	name := fmt.Sprintf("from-broker-%d", b.id)
	match := ownedBy(pid)
	for _, o := range c.brokers {
		if o != b && o.listen != nil {
			o.listen.Block(name, match)
		}
	}
	return func(context.Context) (string, error) {
		b.listen.Heal()
		for _, o := range c.brokers {
			if o != b && o.listen != nil {
				o.listen.Unblock(name)
			}
		}
		return "healed", nil
	}, fmt.Sprintf("listener proxy cut (%d connections) and pid %d's connections to the other brokers", before, pid), nil
}

// ownedBy matches connections whose client end is a socket of process pid, found through
// /proc: the accepted connection's remote port is the process's local port.
func ownedBy(pid int) func(net.Conn) bool {
	return func(conn net.Conn) bool {
		addr, ok := conn.RemoteAddr().(*net.TCPAddr)
		if !ok {
			return false
		}
		inodes := socketInodes(pid)
		if len(inodes) == 0 {
			return false
		}
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			for _, inode := range localPortInodes(f, addr.Port) {
				if inodes[inode] {
					return true
				}
			}
		}
		return false
	}
}

// socketInodes lists the socket inodes among pid's file descriptors.
func socketInodes(pid int) map[string]bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	return out
}

// localPortInodes lists the inodes of the sockets bound to local port in a /proc/net/tcp
// table (columns: sl local_address rem_address st ... uid timeout inode).
func localPortInodes(table string, port int) []string {
	f, err := os.Open(table)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	suffix := fmt.Sprintf(":%04X", port)
	var out []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && strings.HasSuffix(fields[1], suffix) && fields[9] != "0" {
			out = append(out, fields[9])
		}
	}
	return out
}

// procState is the state letter of /proc/<pid>/stat (R, S, T for stopped, Z, ...); 0 when
// unknown.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}
