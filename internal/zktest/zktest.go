// Package zktest starts a real, standalone ZooKeeper (Debian's zookeeper package) for tests:
// a plain java process on a free 127.0.0.1 port with its own data folder, tickTime=500 so
// session expiry happens close to the configured timeout, and forceSync=no for speed.
//
// A missing java or ZooKeeper jar is a test failure, never a skip.
//
// One server per test package is enough (see Shared / StartProcess for TestMain); each test
// then uses its own chroot via Connect.
//
// With Options.TLS the server also serves a TLS port (secureClientPort) through ZooKeeper's
// Netty connection factory, with the x509 authentication provider that Kafka's ZooKeeper
// security guide configures: a client certificate becomes an "x509" identity for ACLs.
package zktest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Jar locations of Debian's zookeeper package.
const (
	ZooKeeperJar = "/usr/share/java/zookeeper.jar"
	SLF4JJar     = "/usr/share/java/slf4j-simple.jar"
	mainClass    = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	// TickTime is the server's tickTime; session timeouts are rounded to whole ticks and
	// clamped to [2, 20] ticks, i.e. [1 s, 10 s].
	TickTime = 500 * time.Millisecond
)

// jar paths used; tests point them elsewhere.
var zooKeeperJar, slf4jJar = ZooKeeperJar, SLF4JJar

// nettyExtraJars complete Debian's zookeeper.jar class path for the Netty server: its
// manifest names netty-handler but not netty-codec and netty-resolver, which SslHandler needs.
var nettyExtraJars = []string{"/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"}

// Options are the optional features of a test server.
type Options struct {
	TLS *TLSOptions // nil: plain client port only
}

// TLSOptions configure the secureClientPort. Store types are ZooKeeper's: PEM, PKCS12 or JKS
// ("" lets ZooKeeper guess from the file name).
type TLSOptions struct {
	KeyStore, KeyStoreType, KeyStorePassword       string
	TrustStore, TrustStoreType, TrustStorePassword string
	// ClientAuth is ZooKeeper's ssl.clientAuth: "need" (its default when ""), "want" or "none".
	ClientAuth string
}

// ErrNotInstalled is returned (and reported by Start) when java or the jar is missing.
var ErrNotInstalled = errors.New("ZooKeeper not installed: run apt-get install -y zookeeper (or ./scripts/test.sh, which installs it)")

// Server is one running standalone ZooKeeper. Safe for concurrent use.
type Server struct {
	dir        string // data dir, zoo.cfg and zookeeper.log live here
	ownDir     bool   // created by us: removed by Stop
	port       int
	securePort int // 0 without Options.TLS
	opts       Options

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	stopped bool
}

// Start starts a ZooKeeper for one test (or benchmark) and stops it in t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options (a TLS port).
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := StartProcessWith(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Shared starts a ZooKeeper in a fresh temp folder for a whole test package (TestMain).
// Call stop after m.Run; it kills the server and removes the folder.
func Shared() (s *Server, stop func(), err error) {
	s, err = StartProcess("")
	if err != nil {
		return nil, nil, err
	}
	return s, s.Stop, nil
}

// StartProcess starts a ZooKeeper whose files live in dir ("" = a new temp folder that Stop
// removes). The java process is killed when this process dies, even on panic or SIGKILL
// (Linux: Pdeathsig). Returns once the server serves (srvr prints "Mode:").
func StartProcess(dir string) (*Server, error) {
	return StartProcessWith(dir, Options{})
}

// StartProcessWith is StartProcess with options (a TLS port).
func StartProcessWith(dir string, opts Options) (*Server, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("%w (java not found: %v)", ErrNotInstalled, err)
	}
	if _, err := os.Stat(zooKeeperJar); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNotInstalled, err)
	}
	s := &Server{dir: dir, opts: opts}
	if dir == "" {
		d, err := os.MkdirTemp("", "zktest-")
		if err != nil {
			return nil, fmt.Errorf("zktest: temp dir: %w", err)
		}
		s.dir, s.ownDir = d, true
	}
	// A free port found by listening can be taken by someone else before java binds it:
	// retry with a new port when the process dies early.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		s.port = port
		if opts.TLS != nil {
			if s.securePort, err = freePort(); err != nil {
				lastErr = err
				continue
			}
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("zktest: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) writeConfig() (string, error) {
	dataDir := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", fmt.Errorf("zktest: %w", err)
	}
	cfg := fmt.Sprintf(`tickTime=%d
initLimit=10
syncLimit=5
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxClientCnxns=0
autopurge.purgeInterval=0
`, TickTime.Milliseconds(), dataDir, s.port)
	if t := s.opts.TLS; t != nil {
		// Keys zoo.cfg does not know become zookeeper.<key> system properties, which is where
		// the Netty factory and the x509 provider read them.
		cfg += fmt.Sprintf("secureClientPort=%d\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"+
			"authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n", s.securePort)
		for _, kv := range [][2]string{
			{"ssl.keyStore.location", t.KeyStore}, {"ssl.keyStore.type", t.KeyStoreType},
			{"ssl.keyStore.password", t.KeyStorePassword},
			{"ssl.trustStore.location", t.TrustStore}, {"ssl.trustStore.type", t.TrustStoreType},
			{"ssl.trustStore.password", t.TrustStorePassword},
			{"ssl.clientAuth", t.ClientAuth},
		} {
			if kv[1] != "" {
				cfg += kv[0] + "=" + kv[1] + "\n"
			}
		}
	}
	path := filepath.Join(s.dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return "", fmt.Errorf("zktest: %w", err)
	}
	return path, nil
}

// start launches java on s.port and waits until it serves.
func (s *Server) start() error {
	cfgPath, err := s.writeConfig()
	if err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, "zookeeper.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	cp := zooKeeperJar
	if _, err := os.Stat(slf4jJar); err == nil {
		cp += ":" + slf4jJar
	}
	if s.opts.TLS != nil {
		for _, j := range nettyExtraJars {
			if _, err := os.Stat(j); err != nil {
				return fmt.Errorf("%w (ZooKeeper's TLS port needs %s: %v)", ErrNotInstalled, j, err)
			}
			cp += ":" + j
		}
	}
	cmd := exec.Command("java",
		"-Dzookeeper.forceSync=no",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.4lw.commands.whitelist=*",
		// Small, quick-starting JVM: tests run many processes on few cores.
		"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
		"-cp", cp, mainClass, cfgPath)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	// Pdeathsig fires when the forking OS *thread* exits, not the process: fork from a
	// goroutine locked to its thread that lives exactly as long as the child.
	exited := make(chan struct{})
	startErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(exited)
		defer logf.Close()
		if err := cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		cmd.Wait()
	}()
	if err := <-startErr; err != nil {
		return fmt.Errorf("zktest: start java: %w", err)
	}
	s.mu.Lock()
	s.cmd, s.exited, s.stopped = cmd, exited, false
	s.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for {
		if out, err := s.FourLetterWord("srvr"); err == nil && strings.Contains(out, "Mode:") && s.secureListening() {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("zktest: zookeeper exited during start-up (port %d): %s", s.port, tail(logPath))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("zktest: zookeeper not ready after 60s (port %d): %s", s.port, tail(logPath))
		}
	}
}

// secureListening reports whether the TLS port accepts connections (true without one).
func (s *Server) secureListening() bool {
	if s.securePort == 0 {
		return true
	}
	c, err := net.DialTimeout("tcp", s.SecureAddr(), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// FourLetterWord sends a four-letter command (srvr, stat, cons, dump, ...) and returns the answer.
func (s *Server) FourLetterWord(cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	_, err = io.Copy(&buf, bufio.NewReader(c))
	return buf.String(), err
}

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port is the client port.
func (s *Server) Port() int { return s.port }

// SecureAddr is "127.0.0.1:SECUREPORT" ("" without Options.TLS).
func (s *Server) SecureAddr() string {
	if s.securePort == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(s.securePort)
}

// SecureConnect is Connect for the TLS port.
func (s *Server) SecureConnect(chroot string) string {
	chroot = strings.Trim(chroot, "/")
	if chroot == "" {
		return s.SecureAddr()
	}
	return s.SecureAddr() + "/" + chroot
}

// PID is the java process id (0 when not running).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return 0
	}
	return s.cmd.Process.Pid
}

// Dir is the folder holding zoo.cfg, the data dir and zookeeper.log.
func (s *Server) Dir() string { return s.dir }

// Connect returns a zookeeper.connect string for chroot: "127.0.0.1:PORT/chroot"
// ("" or "/" = no chroot).
func (s *Server) Connect(chroot string) string {
	chroot = strings.Trim(chroot, "/")
	if chroot == "" {
		return s.Addr()
	}
	return s.Addr() + "/" + chroot
}

// Stop kills the server (it is a test server: no clean shutdown needed) and, if it created
// its folder, removes it. Safe to call more than once.
func (s *Server) Stop() {
	s.kill()
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
}

// Kill stops the process but keeps its data, so Restart brings the same znodes back on the
// same port (sessions survive if the restart is within their timeout).
func (s *Server) Kill() { s.kill() }

// Restart starts a killed server again on the same port and data dir.
func (s *Server) Restart() error {
	s.kill()
	return s.start()
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited, stopped := s.cmd, s.exited, s.stopped
	s.stopped = true
	s.mu.Unlock()
	if cmd == nil || stopped {
		return
	}
	cmd.Process.Kill()
	<-exited
}
