package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

const zkConnected = "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n"

func TestZkShellParsing(t *testing.T) {
	if got := zkParseCommand(`create /a "two words" 'x y' z`); strings.Join(got, "|") != "create|/a|two words|x y|z" {
		t.Errorf("%q", got)
	}
	o, err := parseCliOpts([]string{"create", "-es", "/p", "-1"}, "esc", "t")
	if err != nil || !o.has["e"] || !o.has["s"] || strings.Join(o.args, "|") != "create|/p|-1" {
		t.Errorf("%+v %v", o, err)
	}
	if _, err := parseCliOpts([]string{"get", "-x", "/p"}, "sw", ""); err == nil || err.Error() != "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x" {
		t.Errorf("%v", err)
	}
	for path, want := range map[string]string{
		"/":      "",
		"/a/b":   "",
		"a":      "Path must start with / character",
		"/a/":    "Path must not end with / character",
		"/a//b":  `Invalid path string "/a//b" caused by empty node name specified @3`,
		"/a/../": "Path must not end with / character",
		"/a/..":  `Invalid path string "/a/.." caused by relative paths not allowed @4`,
	} {
		err := validateZkPath(path)
		if (want == "" && err != nil) || (want != "" && (err == nil || err.Error() != want)) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	code, out, _ := runTool("zookeeper-shell")
	if code != 1 || out != "USAGE: samsa zookeeper-shell zookeeper_host:port[/path] [-zk-tls-config-file file] [args...]\n" {
		t.Errorf("no args: %d %q", code, out)
	}
}

// Against the ZooKeeper of a live broker, through its chroot: reads of Kafka's znodes, writes,
// ACLs with the digest identity of -zk-tls-config-file, errors and exit codes, the interactive
// mode, and a chroot that does not exist (not created).
func TestZookeeperShellEndToEnd(t *testing.T) {
	t.Parallel()
	c := startToolBrokers(t, 1, 1)
	shell := func(args ...string) (int, string, string) {
		t.Helper()
		return runTool(append([]string{"zookeeper-shell", c.connect}, args...)...)
	}
	expect := func(wantOut, wantErr string, args ...string) {
		t.Helper()
		code, out, errb := shell(args...)
		wantCode := 0
		if wantErr != "" && !strings.HasPrefix(wantErr, "Created ") {
			wantCode = 1
		}
		if code != wantCode || out != "Connecting to "+c.connect+"\n"+zkConnected+wantOut || errb != wantErr {
			t.Errorf("%v: code %d\nstdout %q\nstderr %q", args, code, out, errb)
		}
	}
	expect("[0]\n", "", "ls", "/brokers/ids")
	code, out, _ := shell("get", "/brokers/ids/0")
	if code != 0 || !strings.Contains(out, `"endpoints":["PLAINTEXT://127.0.0.1:`) {
		t.Errorf("get broker: %d %q", code, out)
	}
	expect("null\n", "", "get", "/brokers")
	expect("", "Created /g1\n", "create", "/g1", "hello")
	expect("", "Created /g1/a\n", "create", "/g1/a")
	expect("", "Created /g1/a/b\n", "create", "/g1/a/b", "x")
	expect("hello\n", "", "get", "/g1")
	expect("", "", "set", "/g1", "world")
	expect("/g1\n/g1/a\n/g1/a/b\n", "", "ls", "-R", "/g1")
	expect("'world,'anyone\n: cdrwa\n", "", "getAcl", "/g1")
	expect("2\n", "", "getAllChildrenNumber", "/g1")
	code, out, _ = shell("get", "-s", "/g1")
	stat := regexp.MustCompile(`(?s)^Connecting to .*\nworld\ncZxid = 0x[0-9a-f]+\nctime = \w{3} \w{3} \d\d \d\d:\d\d:\d\d \w+ \d{4}\nmZxid = 0x[0-9a-f]+\nmtime = .*\npZxid = 0x[0-9a-f]+\ncversion = 1\ndataVersion = 1\naclVersion = 0\nephemeralOwner = 0x0\ndataLength = 5\nnumChildren = 1\n$`)
	if code != 0 || !stat.MatchString(out) {
		t.Errorf("get -s: %d %q", code, out)
	}
	expect("", "version No is not valid : /g1\n", "set", "-v", "7", "/g1", "x")
	expect("", "Node not empty: /g1\n", "delete", "/g1")
	expect("", "Node does not exist: /nope\n", "get", "/nope")
	expect("", "Node does not exist: /nope\n", "stat", "/nope")
	expect("", "Path must start with / character\n", "ls", "nope")
	expect("", "get [-s] [-w] path\n", "get")
	expect("", "", "deleteall", "/g1")
	expect("", "Node does not exist: /g1\n", "ls", "/g1")
	code, _, errb := shell("foo")
	if code != 1 || !strings.HasPrefix(errb, "ZooKeeper -server host:port [-zk-tls-config-file <file>] cmd args\n\taddWatch ") || !strings.HasSuffix(errb, "\twhoami \nCommand not found foo\n") {
		t.Errorf("unknown command: %d %q", code, errb)
	}

	// Interactive: commands from standard input, the exit code of the last one.
	var stdout, stderr bytes.Buffer
	code = dispatch([]string{"zookeeper-shell", c.connect}, strings.NewReader("create /i one\nget /i\n\nget /missing\nhistory\n"), &stdout, &stderr)
	if code != 0 || stdout.String() != "Connecting to "+c.connect+"\n"+zkConnected+"Welcome to ZooKeeper!\nJLine support is disabled\none\n0 - create /i one\n1 - get /i\n2 - get /missing\n3 - history\n" ||
		stderr.String() != "Created /i\nNode does not exist: /missing\n" {
		t.Errorf("interactive: %d\n%q\n%q", code, stdout.String(), stderr.String())
	}

	// Session commands: printwatches, close (then "Not connected"), connect, quit (the exit code
	// of the command before it; nothing after it runs).
	stdout.Reset()
	stderr.Reset()
	in := "printwatches\nprintwatches off\nclose\nls /brokers/ids\nconnect " + c.connect + "\nls /brokers/ids\nget /missing\nquit\nls /\n"
	code = dispatch([]string{"zookeeper-shell", c.connect}, strings.NewReader(in), &stdout, &stderr)
	if code != 1 || stdout.String() != "Connecting to "+c.connect+"\n"+zkConnected+"Welcome to ZooKeeper!\nJLine support is disabled\nprintwatches is on\nNot connected\n[0]\n" ||
		stderr.String() != "Node does not exist: /missing\n" {
		t.Errorf("session commands: %d\n%q\n%q", code, stdout.String(), stderr.String())
	}

	// A watch set with -w prints its event when it fires.
	stdout.Reset()
	stderr.Reset()
	code = dispatch([]string{"zookeeper-shell", c.connect}, strings.NewReader("get -w /i\nls -w /\nset /i two\n"), &stdout, &stderr)
	for _, want := range []string{"\none\n", "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:NodeDataChanged path:/i\n"} {
		if code != 0 || !strings.Contains(stdout.String(), want) || stderr.String() != "" {
			t.Errorf("watch: %d %q %q, want %q", code, stdout.String(), stderr.String(), want)
		}
	}
	if strings.Contains(stdout.String(), "NodeChildrenChanged") {
		t.Errorf("a data change fired the children watch: %q", stdout.String())
	}

	// The digest identity from -zk-tls-config-file owns what it creates with auth ACLs.
	cfg := writeFile(t, zkmeta.DigestKey+"=alice:secret\nzookeeper.ssl.client.enable=false\nignored=1\n")
	code, _, errb = runTool("zookeeper-shell", c.connect, "-zk-tls-config-file", cfg, "create", "/d", "x", "auth::cdrwa")
	if code != 0 || errb != "Created /d\n" {
		t.Fatalf("create with auth: %d %q", code, errb)
	}
	code, out, _ = runTool("zookeeper-shell", c.connect, "-zk-tls-config-file", cfg, "getAcl", "/d")
	if code != 0 || !regexp.MustCompile(`\n'digest,'alice:[A-Za-z0-9+/=]+\n: cdrwa\n$`).MatchString(out) {
		t.Errorf("getAcl digest: %d %q", code, out)
	}
	expect("", "Insufficient permission : /d\n", "get", "/d")
	code, out, _ = runTool("zookeeper-shell", c.connect, "-zk-tls-config-file", cfg, "get", "/d")
	if code != 0 || !strings.HasSuffix(out, "\nx\n") {
		t.Errorf("get with digest: %d %q", code, out)
	}
	code, _, errb = runTool("zookeeper-shell", c.connect, "ls", "/", "-zk-tls-config-file")
	if code != 1 || errb != "Exception in thread \"main\" java.lang.IllegalArgumentException: Error: no filename provided with option -zk-tls-config-file\n" {
		t.Errorf("no tls file: %d %q", code, errb)
	}

	// A chroot that does not exist is not created.
	missing := c.zk.Connect("/not-there")
	code, _, errb = runTool("zookeeper-shell", missing, "ls", "/")
	if code != 1 || errb != "Node does not exist: /\n" {
		t.Errorf("missing chroot: %d %q", code, errb)
	}
	code, out, _ = runTool("zookeeper-shell", c.zk.Addr(), "ls", "/")
	if code != 0 || strings.Contains(out, "not-there") || !strings.Contains(out, "tools") {
		t.Errorf("root after missing chroot: %d %q", code, out)
	}
}

// Over ZooKeeper's TLS port with the zookeeper.ssl.* keys of -zk-tls-config-file: the client
// certificate is the x509 identity that owns an auth-ACL znode; without the file there is no
// session.
func TestZookeeperShellTLS(t *testing.T) {
	t.Parallel()
	b, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.StartWith(t, zktest.Options{TLS: &zktest.TLSOptions{
		KeyStore: b.Broker.PKCS12, KeyStoreType: "PKCS12", KeyStorePassword: b.Password,
		TrustStore: b.CA, TrustStoreType: "PEM",
	}})
	cfg := writeFile(t, "zookeeper.ssl.client.enable=true\nzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"+
		"zookeeper.ssl.keystore.location="+b.Alice.PKCS12+"\nzookeeper.ssl.keystore.password="+b.Password+
		"\nzookeeper.ssl.truststore.location="+b.Truststore+"\nzookeeper.ssl.truststore.password="+b.Password+"\n")
	connect := srv.SecureConnect("")
	code, _, errb := runTool("zookeeper-shell", connect, "-zk-tls-config-file", cfg, "create", "/t", "v", "auth::cdrwa")
	if code != 0 || errb != "Created /t\n" {
		t.Fatalf("create: %d %q", code, errb)
	}
	code, out, _ := runTool("zookeeper-shell", connect, "-zk-tls-config-file", cfg, "getAcl", "/t")
	if code != 0 || !strings.HasSuffix(out, "\n'x509,'"+zkCSV(b.Alice.Subject)+"\n: cdrwa\n") {
		t.Fatalf("getAcl: %d %q", code, out)
	}
	code, _, errb = runTool("zookeeper-shell", connect, "-timeout", "1500", "ls", "/")
	if code != 1 || errb != "KeeperErrorCode = ConnectionLoss for /\n" {
		t.Fatalf("plaintext to the TLS port: %d %q", code, errb)
	}
}
