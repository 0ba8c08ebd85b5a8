package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

func runTool(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func zkConnect(t *testing.T, connect string, sec zkmeta.Security) *zkmeta.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zkmeta.ConnectSecure(ctx, connect, 6*time.Second, testLog(t), sec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A broker tree made with open ACLs (zookeeper.set.acl=false) is secured for the digest
// identity, then opened again; the path check refuses a chroot that holds no Kafka tree.
func TestZkSecurityMigration(t *testing.T) {
	zk := zktest.Start(t)
	const digest = "admin:admin-secret"
	connect := zk.Connect("/migrate")

	open := zkConnect(t, connect, zkmeta.Security{})
	if err := open.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	if err := open.CreateTopic("t1", zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {0}}}, map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := open.SetUserConfig("alice", map[string]string{"SCRAM-SHA-256": "x"}); err != nil {
		t.Fatal(err)
	}
	open.Close()

	cfgFile := writeProps(t, zkmeta.DigestKey+"="+digest+"\nzookeeper.set.acl=true\n")
	migrate := func(acl string) {
		t.Helper()
		code, out, errb := runTool("zookeeper-security-migration", "--zookeeper.acl", acl, "--zookeeper.connect", connect,
			"--zookeeper.session.timeout", "6000", "--zookeeper.connection.timeout=10000", "--zk-tls-config-file", cfgFile)
		if code != 0 {
			t.Fatalf("--zookeeper.acl %s: exit %d, stdout %q, stderr %q", acl, code, out, errb)
		}
	}

	sum := sha1.Sum([]byte(digest))
	owner := zkmeta.ACL{Perms: zkmeta.PermAll, Scheme: "digest", ID: "admin:" + base64.StdEncoding.EncodeToString(sum[:])}
	worldRead := zkmeta.ACL{Perms: zkmeta.PermRead, Scheme: "world", ID: "anyone"}
	worldAll := []zkmeta.ACL{{Perms: zkmeta.PermAll, Scheme: "world", ID: "anyone"}}
	secure := []zkmeta.ACL{owner, worldRead}
	// ZooKeeper shows digest IDs only to a client with ADMIN rights on the znode.
	admin := zkConnect(t, connect, zkmeta.Security{Digest: digest})
	anon := zkConnect(t, connect, zkmeta.Security{})
	checkACLs := func(want map[string][]zkmeta.ACL) {
		t.Helper()
		for path, w := range want {
			got, _, err := admin.GetACL(path)
			if err != nil {
				t.Errorf("GetACL(%s): %v", path, err)
			} else if !reflect.DeepEqual(got, w) {
				t.Errorf("ACL of %s = %+v, want %+v", path, got, w)
			}
		}
	}

	migrate("secure")
	checkACLs(map[string][]zkmeta.ACL{
		"/":                        secure, // the chroot
		"/brokers":                 secure,
		"/brokers/ids":             secure,
		"/brokers/topics/t1":       secure,
		"/config/topics/t1":        secure,
		"/config/changes":          secure,
		"/config/users":            {owner},
		"/config/users/alice":      {owner},
		"/config/brokers":          {owner},
		"/kafka-acl":               secure, // a missing root, created
		"/consumers":               worldAll,
		"/admin/delete_topics":     secure,
		"/isr_change_notification": secure,
	})
	if ok, _, err := admin.Exists("/controller"); err != nil || ok {
		t.Errorf("/controller exists = %v (%v), want it left uncreated", ok, err)
	}
	if _, _, err := anon.Get("/brokers/topics/t1"); err != nil {
		t.Errorf("anonymous read of a topic: %v", err)
	}
	if _, err := anon.Set("/config/topics/t1", []byte("{}"), -1); !errors.Is(err, zkmeta.ErrNoAuth) {
		t.Errorf("anonymous set after securing = %v, want ErrNoAuth", err)
	}
	if _, err := anon.Create("/brokers/topics/evil", nil, zkmeta.Persistent); !errors.Is(err, zkmeta.ErrNoAuth) {
		t.Errorf("anonymous create after securing = %v, want ErrNoAuth", err)
	}
	if _, _, err := anon.Get("/config/users/alice"); !errors.Is(err, zkmeta.ErrNoAuth) {
		t.Errorf("anonymous read of SCRAM credentials = %v, want ErrNoAuth", err)
	}

	// Another identity cannot take the znodes back: the tool fails and says so.
	other := writeProps(t, zkmeta.DigestKey+"=mallory:x\n")
	if code, _, errb := runTool("zookeeper-security-migration", "--zookeeper.acl=unsecure", "--zookeeper.connect", connect, "--zk-tls-config-file", other); code == 0 || !strings.Contains(errb, "not authorized") {
		t.Errorf("unsecure as another identity: exit %d, stderr %q", code, errb)
	}

	migrate("unsecure")
	checkACLs(map[string][]zkmeta.ACL{
		"/":                   worldAll,
		"/brokers/topics/t1":  worldAll,
		"/config/topics/t1":   worldAll,
		"/config/users":       worldAll,
		"/config/users/alice": worldAll,
		"/kafka-acl":          worldAll,
	})
	if _, err := anon.Set("/config/topics/t1", []byte(`{"version":1,"config":{}}`), -1); err != nil {
		t.Errorf("anonymous set after unsecuring: %v", err)
	}

	// --enable.path.check on a chroot with no Kafka tree: warn, exit 1, create nothing.
	code, out, _ := runTool("zookeeper-security-migration", "--zookeeper.acl", "secure", "--zookeeper.connect", zk.Connect("/typo"),
		"--enable.path.check", "--zk-tls-config-file", cfgFile)
	if code != 1 || !strings.Contains(out, "do not exist in ZooKeeper: /admin,/brokers") || !strings.Contains(out, "Exit the command.") {
		t.Errorf("path check: exit %d, stdout %q", code, out)
	}
	root := zkConnect(t, zk.Connect(""), zkmeta.Security{})
	if ok, _, err := root.Exists("/typo"); err != nil || ok {
		t.Errorf("chroot /typo exists = %v (%v) after a failed path check", ok, err)
	}
	// Without the check the tool only warns about the missing roots, then creates them.
	code, out, errb := runTool("zookeeper-security-migration", "--zookeeper.acl", "secure", "--zookeeper.connect", zk.Connect("/fresh"),
		"--zk-tls-config-file", cfgFile)
	if code != 0 || !strings.Contains(out, "Warning: The following secure root paths do not exist") {
		t.Errorf("no path check: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	fresh := zkConnect(t, zk.Connect("/fresh"), zkmeta.Security{Digest: digest})
	if got, _, err := fresh.GetACL("/brokers"); err != nil || !reflect.DeepEqual(got, secure) {
		t.Errorf("ACL of a created root = %+v (%v), want %+v", got, err, secure)
	}
}

// Without an identity (no digest, no TLS client certificate) the tool refuses before
// connecting, in either direction; bad flags print the usage.
func TestZkSecurityMigrationRefusals(t *testing.T) {
	noIdentity := writeProps(t, "zookeeper.ssl.client.enable=false\nzookeeper.set.acl=true\n")
	for _, args := range [][]string{
		{"--zookeeper.acl", "secure", "--zookeeper.connect", "127.0.0.1:1", "--zookeeper.connection.timeout", "500"},
		{"--zookeeper.acl", "unsecure", "--zookeeper.connect", "127.0.0.1:1", "--zookeeper.connection.timeout", "500", "--zk-tls-config-file", noIdentity},
	} {
		code, _, errb := runTool(append([]string{"zookeeper-security-migration"}, args...)...)
		if code != 1 || !strings.Contains(errb, "ERROR: No ZooKeeper digest identity and no TLS client certificate") ||
			!strings.Contains(errb, zkmeta.DigestKey+"=user:password") || !strings.Contains(errb, "zookeeper.ssl.keystore.location") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb)
		}
	}
	// A TLS client certificate is an identity too (ZooKeeper's x509 scheme).
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tlsFile := writeProps(t, "zookeeper.ssl.client.enable=true\nzookeeper.ssl.keystore.location="+certs.Alice.KeyStorePEM+
		"\nzookeeper.ssl.truststore.location="+certs.CA+"\n")
	o, _, err := parseZkMigrationArgs([]string{"--zookeeper.acl", "secure", "--zk-tls-config-file", tlsFile}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sec, err := zkMigrationSecurity(o); err != nil || sec.TLS == nil || !sec.SecureACLs {
		t.Errorf("TLS key store identity: %+v, %v", sec, err)
	}
	if o.connect.v != "localhost:2181" || o.sessionTimeoutD != 30*time.Second || o.connectionTimeoutD != 30*time.Second {
		t.Errorf("defaults: connect %q, session %v, connection %v", o.connect.v, o.sessionTimeoutD, o.connectionTimeoutD)
	}

	withDigest := writeProps(t, zkmeta.DigestKey+"=a:b\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "ZooKeeper Migration Tool Help"},
		{[]string{"--zookeeper.connect", "h:1"}, "ZooKeeper Migration Tool Help"},
		{[]string{"--zookeeper.acl", "open"}, "ZooKeeper Migration Tool Help"},
		{[]string{"--zookeeper.acl", "secure", "--zookeeper.session.timeout", "0"}, "zookeeper.session.timeout must be a positive"},
		{[]string{"--zookeeper.acl", "secure", "--zk-tls-config-file", withDigest, "stray"}, "unrecognized argument"},
	} {
		code, _, errb := runTool(append([]string{"zookeeper-security-migration"}, tt.args...)...)
		if code != 1 || !strings.Contains(errb, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, errb, tt.want)
		}
	}
	if code, _, _ := runTool("zookeeper-security-migration", "--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
}
