package main

// zookeeper-shell mirrors Kafka 3.7's zookeeper-shell.sh: ZooKeeper 3.8's command line client
// (ZooKeeperMain, the cli.*Command classes) as Kafka wraps it (ZooKeeperMainWithTlsSupportForKafka:
// -zk-tls-config-file with the zookeeper.ssl.* client keys of a broker's config). The client
// paths are relative to the chroot of the connect string, which is never created, as a Java
// ZooKeeper client with a chroot behaves. Besides the TLS keys, the file may hold samsa's
// ZooKeeper digest identity (samsa.zookeeper.digest), sent as the broker sends it.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() {
	commands["zookeeper-shell"] = command{runZookeeperShell, "run ZooKeeper commands against the ensemble brokers use (zookeeper-shell.sh)"}
}

// zkShellCommands is ZooKeeperMain.commandMap: each command and its option string, printed
// sorted by the usage text.
var zkShellCommands = map[string]string{
	"connect": "host:port", "history": "", "redo": "cmdno", "printwatches": "on|off", "quit": "",
	"close": "", "create": "[-s] [-e] [-c] [-t ttl] path [data] [acl]", "delete": "[-v version] path",
	"deleteall": "path [-b batch size]", "set": "[-s] [-v version] path data", "get": "[-s] [-w] path",
	"ls": "[-s] [-w] [-R] path", "getAcl": "[-s] path", "setAcl": "[-s] [-v version] [-R] path acl",
	"stat": "[-w] path", "sync": "path", "setquota": "-n|-b|-N|-B val path", "listquota": "path",
	"delquota": "[-n|-b|-N|-B] path", "addauth": "scheme auth",
	"reconfig": "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]",
	"config":   "[-c] [-w] [-s]", "removewatches": "path [-c|-d|-a] [-l]", "getEphemerals": "path",
	"getAllChildrenNumber": "path", "version": "",
	"addWatch": "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE",
	"whoami":   "",
}

// zkCliErr is a CliException: its message goes to stderr and the exit code becomes 1.
type zkCliErr struct{ msg string }

func (e *zkCliErr) Error() string { return e.msg }

func cliErr(format string, a ...any) error { return &zkCliErr{fmt.Sprintf(format, a...)} }

// lockedWriter serializes the shell's output with the watch events printed meanwhile.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type zkShell struct {
	out, err     io.Writer
	server       string // the connect string, chroot included
	chroot       string
	timeout      time.Duration
	sec          zkmeta.Security
	conn         *zk.Conn
	closing      *atomic.Bool // of conn: its Close's own events are not printed
	printWatches bool
	watchMu      sync.Mutex
	watchers     sync.WaitGroup
	history      map[int]string
	count        int
	exitCode     int
	quit         bool
}

func runZookeeperShell(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stdout, "USAGE: samsa zookeeper-shell zookeeper_host:port[/path] [-zk-tls-config-file file] [args...]")
		return 1
	}
	args = append([]string{"-server"}, args...)
	props := map[string]string{}
	for i, a := range args {
		if a != "-zk-tls-config-file" {
			continue
		}
		if i == len(args)-1 {
			fmt.Fprintln(stderr, "Exception in thread \"main\" java.lang.IllegalArgumentException: Error: no filename provided with option -zk-tls-config-file")
			return 1
		}
		all, err := loadPropsFile(args[i+1])
		if err != nil {
			fmt.Fprintf(stderr, "Exception in thread \"main\" java.io.FileNotFoundException: %s (%v)\n", args[i+1], err)
			return 1
		}
		// ZkSecurityMigrator.createZkClientConfigFromFile keeps the ZooKeeper client keys.
		for k, v := range all {
			if strings.HasPrefix(k, "zookeeper.ssl.") || k == "zookeeper.clientCnxnSocket" || k == zkmeta.DigestKey {
				props[k] = v
			}
		}
		args = append(args[:i:i], args[i+2:]...)
		break
	}
	sec, err := zkmeta.SecurityFromProps(props)
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" org.apache.zookeeper.common.X509Exception: %v\n", err)
		return 1
	}
	var mu sync.Mutex
	sh := &zkShell{out: lockedWriter{&mu, stdout}, err: lockedWriter{&mu, stderr}, printWatches: true, history: map[int]string{}, sec: sec}
	opts, cmdArgs, ok := zkParseOptions(args, sh.err)
	if !ok {
		return 1
	}
	if opts["readonly"] != "" && len(props) > 0 {
		fmt.Fprintln(stderr, "Exception in thread \"main\" java.lang.IllegalArgumentException: read-only mode (-r) is not supported with an explicit TLS config (-zk-tls-config-file)")
		return 1
	}
	if opts["client-configuration"] != "" {
		fmt.Fprintln(stderr, "samsa zookeeper-shell: -client-configuration is not supported; use -zk-tls-config-file with the broker's zookeeper.ssl.* keys")
		return 1
	}
	ms, err := strconv.Atoi(opts["timeout"])
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" java.lang.NumberFormatException: For input string: \"%s\"\n", opts["timeout"])
		return 1
	}
	sh.timeout = time.Duration(ms) * time.Millisecond
	fmt.Fprintln(sh.out, "Connecting to "+opts["server"])
	if err := sh.connect(opts["server"]); err != nil {
		// The command fails as its request would: ConnectionLoss for its path.
		msg := err.Error()
		for _, a := range cmdArgs[min(1, len(cmdArgs)):] {
			if strings.HasPrefix(a, "/") && strings.HasSuffix(msg, "ConnectionLoss") {
				msg += " for " + a
				break
			}
		}
		fmt.Fprintln(sh.err, msg)
		return 1
	}
	defer sh.close()
	if cmdArgs == nil {
		fmt.Fprintln(sh.out, "Welcome to ZooKeeper!")
		fmt.Fprintln(sh.out, "JLine support is disabled")
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
		for !sh.quit && sc.Scan() {
			sh.executeLine(sc.Text())
		}
		return sh.exitCode
	}
	sh.processCmd(cmdArgs)
	return sh.exitCode
}

// zkParseOptions is MyCommandOptions.parseOptions: leading options, then the command and its
// arguments (nil when there is no command).
func zkParseOptions(args []string, stderr io.Writer) (map[string]string, []string, bool) {
	opts := map[string]string{"server": "localhost:2181", "timeout": "30000"}
	for i := 0; i < len(args); i++ {
		opt := args[i]
		next := func(name string) bool {
			if i+1 >= len(args) {
				fmt.Fprintln(stderr, "Error: no argument found for option "+opt)
				return false
			}
			i++
			opts[name] = args[i]
			return true
		}
		switch opt {
		case "-server":
			if !next("server") {
				return nil, nil, false
			}
		case "-timeout":
			if !next("timeout") {
				return nil, nil, false
			}
		case "-client-configuration":
			if !next("client-configuration") {
				return nil, nil, false
			}
		case "-r":
			opts["readonly"] = "true"
		case "-waitforconnection":
			opts["waitforconnection"] = "true"
		}
		if !strings.HasPrefix(opt, "-") {
			return opts, args[i:], true
		}
	}
	return opts, nil, true
}

// zkArgsRe and zkQuotedRe are MyCommandOptions.ARGS_PATTERN and QUOTED_PATTERN.
var (
	zkArgsRe   = regexp.MustCompile(`\s*([^"']\S*|"[^"]*"|'[^']*')\s*`)
	zkQuotedRe = regexp.MustCompile(`^(?:'(.*)'|"(.*)")$`)
)

// zkParseCommand is MyCommandOptions.parseCommand: words, quotes stripped.
func zkParseCommand(line string) []string {
	var args []string
	for _, m := range zkArgsRe.FindAllStringSubmatch(line, -1) {
		v := m[1]
		if q := zkQuotedRe.FindStringSubmatch(v); q != nil {
			v = v[1 : len(v)-1]
		}
		args = append(args, v)
	}
	return args
}

func (sh *zkShell) executeLine(line string) {
	if line == "" {
		return
	}
	args := zkParseCommand(line)
	sh.history[sh.count] = line
	if len(args) > 0 {
		sh.processCmd(args)
	}
	sh.count++
}

// processCmd is ZooKeeperMain.processCmd: a CliException prints its message on stderr and
// sets the exit code to 1; success sets it to 0.
func (sh *zkShell) processCmd(args []string) {
	err := sh.processZKCmd(args)
	if sh.quit {
		return // quit exits with the code of the command before it
	}
	if err != nil {
		var ce *zkCliErr
		if !errors.As(err, &ce) {
			ce = &zkCliErr{err.Error()}
		}
		sh.exitCode = 1
		fmt.Fprintln(sh.err, ce.msg)
		return
	}
	sh.exitCode = 0
}

// usage is ZooKeeperMainWithTlsSupportForKafka.kafkaTlsUsage.
func (sh *zkShell) usage() {
	fmt.Fprintln(sh.err, "ZooKeeper -server host:port [-zk-tls-config-file <file>] cmd args")
	names := make([]string, 0, len(zkShellCommands))
	for n := range zkShellCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(sh.err, "\t%s %s\n", n, zkShellCommands[n])
	}
}

func (sh *zkShell) processZKCmd(args []string) error {
	if len(args) < 1 {
		sh.usage()
		return cliErr("No command entered")
	}
	cmd := args[0]
	if _, ok := zkShellCommands[cmd]; !ok {
		sh.usage()
		return cliErr("Command not found %s", cmd)
	}
	switch cmd {
	case "quit":
		sh.quit = true
		return nil
	case "redo":
		if len(args) >= 2 {
			i, err := strconv.ParseInt(args[1], 0, 32)
			if err != nil {
				return cliErr("For input string: \"%s\"", args[1])
			}
			if int64(sh.count) <= i || i < 0 {
				return cliErr("Command index out of range")
			}
			line := sh.history[int(i)]
			redo := zkParseCommand(line)
			if len(redo) > 0 && redo[0] == "redo" {
				return cliErr("No redoing redos")
			}
			sh.history[sh.count] = line
			sh.processCmd(redo)
		}
	case "history":
		for i := sh.count - 10; i <= sh.count; i++ {
			if i >= 0 {
				h, ok := sh.history[i]
				if !ok {
					h = "null"
				}
				fmt.Fprintf(sh.out, "%d - %s\n", i, h)
			}
		}
	case "printwatches":
		sh.watchMu.Lock()
		if len(args) == 1 {
			state := "off"
			if sh.printWatches {
				state = "on"
			}
			fmt.Fprintln(sh.out, "printwatches is "+state)
		} else {
			sh.printWatches = args[1] == "on"
		}
		sh.watchMu.Unlock()
	case "connect":
		server := sh.server
		if len(args) >= 2 {
			server = args[1]
		}
		sh.close()
		if err := sh.connect(server); err != nil {
			return err
		}
	}
	if sh.conn == nil {
		fmt.Fprintln(sh.out, "Not connected")
		return nil
	}
	return sh.runCliCommand(cmd, args)
}

// printMessage is ZooKeeperMain.printMessage.
func (sh *zkShell) printMessage(msg string) { fmt.Fprintln(sh.out, "\n"+msg) }

// watchedEvent prints a fired watch as the shell's Watcher does.
func (sh *zkShell) watchedEvent(state, typ, path string) {
	sh.watchMu.Lock()
	on := sh.printWatches
	sh.watchMu.Unlock()
	if on {
		sh.printMessage("WATCHER::")
		sh.printMessage(fmt.Sprintf("WatchedEvent state:%s type:%s path:%s", state, typ, path))
	}
}

// connect opens a session (ZooKeeperMain.connectToZK) and waits for it, bounded by -timeout.
func (sh *zkShell) connect(server string) error {
	sh.server = server
	hosts, chroot := server, ""
	if i := strings.IndexByte(server, '/'); i >= 0 {
		hosts, chroot = server[:i], strings.TrimRight(server[i:], "/")
	}
	sh.chroot = chroot
	var servers []string
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			if !strings.Contains(h, ":") {
				h += ":2181"
			}
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return cliErr("A HostProvider may not be empty!")
	}
	established := make(chan struct{})
	var once sync.Once
	closing := &atomic.Bool{}
	sh.closing = closing
	cb := func(ev zk.Event) {
		if ev.Type != zk.EventSession || closing.Load() {
			return
		}
		switch ev.State {
		case zk.StateHasSession:
			// Printed before the session counts as established, so the event always comes
			// before what the shell prints next ("Welcome to ZooKeeper!").
			sh.watchedEvent("SyncConnected", "None", "null")
			once.Do(func() { close(established) })
		case zk.StateDisconnected:
			sh.watchedEvent("Disconnected", "None", "null")
		case zk.StateExpired:
			sh.watchedEvent("Expired", "None", "null")
		case zk.StateAuthFailed:
			sh.watchedEvent("AuthFailed", "None", "null")
		}
	}
	var dialer zk.Dialer = net.DialTimeout // go-zookeeper's default
	if sh.sec.TLS != nil {
		dialer = zkShellTLSDialer(sh.sec.TLS)
	}
	conn, _, err := zk.Connect(servers, sh.timeout, zk.WithLogger(zkShellNopLogger{}), zk.WithEventCallback(cb), zk.WithDialer(dialer))
	if err != nil {
		return cliErr("%v", err)
	}
	sh.conn = conn
	select {
	case <-established:
	case <-time.After(sh.timeout):
		return cliErr("KeeperErrorCode = ConnectionLoss")
	}
	if sh.sec.Digest != "" {
		if err := conn.AddAuth("digest", []byte(sh.sec.Digest)); err != nil {
			return cliErr("%s", zkKeeperMessage(err, "/"))
		}
	}
	return nil
}

func (sh *zkShell) close() {
	if sh.conn != nil {
		sh.closing.Store(true)
		sh.conn.Close()
		sh.conn = nil
	}
	sh.watchers.Wait()
}

type zkShellNopLogger struct{}

func (zkShellNopLogger) Printf(string, ...any) {}

// zkShellTLSDialer opens TLS connections, checking the server's certificate against the host
// of the connect string unless the configuration names one.
func zkShellTLSDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		raw, err := (&net.Dialer{Timeout: timeout}).Dial(network, address)
		if err != nil {
			return nil, err
		}
		conf := cfg
		if cfg.ServerName == "" {
			conf = cfg.Clone()
			if host, _, err := net.SplitHostPort(address); err == nil {
				conf.ServerName = host
			}
		}
		conn := tls.Client(raw, conf)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return conn, nil
	}
}

// abs turns a client path into the server path under the chroot.
func (sh *zkShell) abs(p string) string {
	if sh.chroot == "" {
		return p
	}
	if p == "/" {
		return sh.chroot
	}
	return sh.chroot + p
}

// rel turns a server path back into a client path.
func (sh *zkShell) rel(p string) string {
	if sh.chroot == "" {
		return p
	}
	if p == sh.chroot {
		return "/"
	}
	return strings.TrimPrefix(p, sh.chroot)
}

// validateZkPath is PathUtils.validatePath.
func validateZkPath(path string) error {
	if path == "" {
		return cliErr("Path length must be > 0")
	}
	if path[0] != '/' {
		return cliErr("Path must start with / character")
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return cliErr("Path must not end with / character")
	}
	chars := []rune(path)
	reason := ""
	last := '/'
	for i := 1; i < len(chars); last, i = chars[i], i+1 {
		c := chars[i]
		switch {
		case c == 0:
			reason = fmt.Sprintf("null character not allowed @%d", i)
		case c == '/' && last == '/':
			reason = fmt.Sprintf("empty node name specified @%d", i)
		case c == '.' && last == '.':
			if chars[i-2] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c == '.':
			if chars[i-1] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0 && c <= 0xffff:
			reason = fmt.Sprintf("invalid character @%d", i)
		}
		if reason != "" {
			return cliErr("Invalid path string \"%s\" caused by %s", path, reason)
		}
	}
	return nil
}

// zkKeeperMessage is the CliWrapperException message for a ZooKeeper error on path.
func zkKeeperMessage(err error, path string) string {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return "Node does not exist: " + path
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return "Ephemerals cannot have children: " + path
	case errors.Is(err, zk.ErrNodeExists):
		return "Node already exists: " + path
	case errors.Is(err, zk.ErrNotEmpty):
		return "Node not empty: " + path
	case errors.Is(err, zk.ErrInvalidACL):
		return "Acl is not valid : " + path
	case errors.Is(err, zk.ErrNoAuth):
		return "Insufficient permission : " + path
	case errors.Is(err, zk.ErrBadArguments):
		return "Arguments are not valid : " + path
	case errors.Is(err, zk.ErrBadVersion):
		return "version No is not valid : " + path
	case errors.Is(err, zk.ErrSessionExpired):
		return "KeeperErrorCode = Session expired for " + path
	case errors.Is(err, zk.ErrAuthFailed):
		return "KeeperErrorCode = AuthFailed for " + path
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrClosing):
		return "KeeperErrorCode = ConnectionLoss for " + path
	case errors.Is(err, zk.ErrSessionMoved):
		return "KeeperErrorCode = Session moved for " + path
	case errors.Is(err, zk.ErrAPIError):
		return "KeeperErrorCode = APIError for " + path
	}
	// Codes go-zookeeper has no error for (KeeperException.getCodeMessage).
	var code int
	if _, serr := fmt.Sscanf(err.Error(), "unknown error: %d", &code); serr == nil {
		names := map[int]string{-1: "SystemError", -2: "RuntimeInconsistency", -3: "DataInconsistency", -4: "ConnectionLoss",
			-5: "MarshallingError", -6: "Unimplemented", -7: "OperationTimeout", -13: "NewConfigNoQuorum",
			-14: "ReconfigInProgress", -119: "Not a read-only call", -120: "Ephemeral node on local session",
			-121: "No such watcher", -124: "Session closed because client failed to authenticate",
			-125: "Quota has exceeded", -127: "Op throttled due to high load"}
		if name, ok := names[code]; ok {
			return "KeeperErrorCode = " + name + " for " + path
		}
	}
	return err.Error()
}

func keeperErr(err error, path string) error { return &zkCliErr{zkKeeperMessage(err, path)} }
