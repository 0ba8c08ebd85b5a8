package zkmeta

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

func digestID(userPass string) string {
	user, _, _ := strings.Cut(userPass, ":")
	sum := sha1.Sum([]byte(userPass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func connectSecure(t *testing.T, connect string, sec Security) *Client {
	t.Helper()
	log, _ := testLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ConnectSecure(ctx, connect, 6*time.Second, log, sec)
	if err != nil {
		t.Fatalf("ConnectSecure(%s): %v", connect, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func rawACL(t *testing.T, conn *zk.Conn, path string) []zk.ACL {
	t.Helper()
	acl, _, err := conn.GetACL(path)
	if err != nil {
		t.Fatalf("get acl %s: %v", path, err)
	}
	return acl
}

// zookeeper.set.acl=true with a digest identity: every znode samsa creates carries Kafka's
// ACLs (ZkData.defaultAcls), the chroot included; a client without the identity can read
// what is world-readable and change nothing; /config/users is hidden from it.
func TestSecureACLsWithDigest(t *testing.T) {
	const digest = "samsa:broker-secret"
	chroot := chrootFor(t)
	sec, err := SecurityFromProps(map[string]string{"zookeeper.set.acl": "true", DigestKey: digest})
	if err != nil {
		t.Fatal(err)
	}
	c := connectSecure(t, zkServer.Connect(chroot), sec)
	if !c.SecureACLs() {
		t.Fatal("SecureACLs() = false")
	}
	if err := c.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic("t1", TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetUserConfig("alice", map[string]string{"SCRAM-SHA-256": "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterBroker(context.Background(), BrokerInfo{ID: 1, Endpoints: []Endpoint{{ListenerName: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "h", Port: 9092}}}); err != nil {
		t.Fatal(err)
	}

	owner := zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: digestID(digest)}
	worldRead := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
	secure := []zk.ACL{owner, worldRead}
	// ZooKeeper shows digests only to a client with ADMIN on the znode (ZOOKEEPER-1392).
	raw := rawConn(t)
	if err := raw.AddAuth("digest", []byte(digest)); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]zk.ACL{
		chroot:                                 secure, // created by the secured client too
		chroot + "/brokers/ids":                secure,
		chroot + "/brokers/ids/1":              secure, // ephemeral registration
		chroot + "/brokers/topics/t1":          secure,
		chroot + "/config/topics/t1":           secure,
		chroot + "/config/changes":             secure,
		chroot + "/config/users":               {owner},
		chroot + "/config/users/alice":         {owner},
		chroot + "/config/brokers":             {owner},
		chroot + "/consumers":                  {{Perms: zk.PermAll, Scheme: "world", ID: "anyone"}},
		chroot + "/latest_producer_id_block":   secure,
		chroot + "/log_dir_event_notification": secure,
	} {
		if got := rawACL(t, raw, path); !reflect.DeepEqual(got, want) {
			t.Errorf("ACL of %s = %+v, want %+v", path, got, want)
		}
	}
	if got := DefaultACLs(true, "/config/users/bob"); len(got) != 1 || got[0].Scheme != "auth" {
		t.Errorf("DefaultACLs(sensitive) = %+v", got)
	}
	if got := DefaultACLs(false, "/brokers"); len(got) != 1 || got[0].Scheme != "world" || got[0].Perms != PermAll {
		t.Errorf("DefaultACLs(false) = %+v", got)
	}

	// An unauthenticated client: reads where world may read, writes nowhere.
	anon := connectTo(t, zkServer.Connect(chroot), 6*time.Second, nil)
	if _, _, err := anon.Get("/config/topics/t1"); err != nil {
		t.Errorf("anonymous read of a topic config: %v", err)
	}
	if _, err := anon.Set("/config/topics/t1", []byte("{}"), -1); !errors.Is(err, ErrNoAuth) {
		t.Errorf("anonymous set = %v, want ErrNoAuth", err)
	}
	if _, err := anon.Create("/brokers/topics/evil", nil, Persistent); !errors.Is(err, ErrNoAuth) {
		t.Errorf("anonymous create = %v, want ErrNoAuth", err)
	}
	if err := anon.Delete("/brokers/ids/1", -1); !errors.Is(err, ErrNoAuth) {
		t.Errorf("anonymous delete = %v, want ErrNoAuth", err)
	}
	if _, _, err := anon.Get("/config/users/alice"); !errors.Is(err, ErrNoAuth) {
		t.Errorf("anonymous read of SCRAM credentials = %v, want ErrNoAuth", err)
	}
	if _, err := anon.Create("/consumers/g", nil, Persistent); err != nil {
		t.Errorf("anonymous create under /consumers (open, as Kafka): %v", err)
	}
	// Another digest user is no better off.
	other := connectSecure(t, zkServer.Connect(chroot), Security{Digest: "mallory:x"})
	if _, err := other.Set("/config/topics/t1", []byte("{}"), -1); !errors.Is(err, ErrNoAuth) {
		t.Errorf("other digest user's set = %v, want ErrNoAuth", err)
	}
	// A second broker with the same identity may change everything (a restarted broker,
	// or the other brokers of the cluster).
	peer := connectSecure(t, zkServer.Connect(chroot), sec)
	if err := peer.SetTopicConfig("t1", map[string]string{"retention.ms": "2000"}); err != nil {
		t.Errorf("same identity set: %v", err)
	}
	if cfg, err := peer.GetUserConfig("alice"); err != nil || cfg["SCRAM-SHA-256"] != "x" {
		t.Errorf("same identity read credentials: %v %v", cfg, err)
	}
}

func TestSecureACLsNeedAnIdentity(t *testing.T) {
	_, err := SecurityFromProps(map[string]string{"zookeeper.set.acl": "true"})
	if err == nil || !strings.Contains(err.Error(), DigestKey) {
		t.Fatalf("set.acl without identity: %v", err)
	}
	_, err = ConnectSecure(context.Background(), zkServer.Connect(chrootFor(t)), 6*time.Second, nil, Security{SecureACLs: true})
	if err == nil {
		t.Fatal("ConnectSecure with SecureACLs and no identity succeeded")
	}
	if _, err := SecurityFromProps(map[string]string{DigestKey: "nocolon"}); err == nil {
		t.Fatal("digest without password accepted")
	}
	if sec, err := SecurityFromProps(map[string]string{"zookeeper.set.acl": "false", "zookeeper.ssl.client.enable": "false",
		"zookeeper.ssl.keystore.location": "/nonexistent.p12"}); err != nil || sec.TLS != nil || sec.SecureACLs || sec.Digest != "" {
		t.Fatalf("defaults: %+v, %v", sec, err)
	}
}

func TestZooKeeperTLSSettings(t *testing.T) {
	b, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	base := func(kv ...string) map[string]string {
		m := map[string]string{"zookeeper.ssl.client.enable": "true"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		err   string
		check func(t *testing.T, cfg *tls.Config)
	}{
		{name: "types from file names", props: base("zookeeper.ssl.keystore.location", b.Alice.PKCS12,
			"zookeeper.ssl.keystore.password", b.Password, "zookeeper.ssl.truststore.location", b.CA,
			"zookeeper.ssl.truststore.password", "ignored for PEM"),
			check: func(t *testing.T, cfg *tls.Config) {
				if len(cfg.Certificates) != 1 || cfg.RootCAs == nil {
					t.Errorf("certificates %d, roots %v", len(cfg.Certificates), cfg.RootCAs)
				}
				if cfg.MinVersion != tls.VersionTLS12 || cfg.MaxVersion != tls.VersionTLS12 {
					t.Errorf("versions %x..%x, want TLSv1.2 only (ZooKeeper's default)", cfg.MinVersion, cfg.MaxVersion)
				}
				if cfg.InsecureSkipVerify {
					t.Error("host name verification off by default")
				}
			}},
		{name: "PEM key store", props: base("zookeeper.ssl.keystore.location", b.Alice.KeyStorePEM),
			check: func(t *testing.T, cfg *tls.Config) {
				if len(cfg.Certificates) != 1 {
					t.Error("no certificate")
				}
			}},
		{name: "protocols", props: base("zookeeper.ssl.protocol", "TLSv1.3"),
			check: func(t *testing.T, cfg *tls.Config) {
				if cfg.MinVersion != tls.VersionTLS13 {
					t.Errorf("min version %x, want TLSv1.3 only", cfg.MinVersion)
				}
			}},
		{name: "enabled protocols", props: base("zookeeper.ssl.protocol", "TLSv1.3", "zookeeper.ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
			check: func(t *testing.T, cfg *tls.Config) {
				if cfg.MinVersion != tls.VersionTLS12 || cfg.MaxVersion != tls.VersionTLS13 {
					t.Errorf("versions %x..%x", cfg.MinVersion, cfg.MaxVersion)
				}
			}},
		{name: "no host name verification", props: base("zookeeper.ssl.endpoint.identification.algorithm", ""),
			check: func(t *testing.T, cfg *tls.Config) {
				if !cfg.InsecureSkipVerify || cfg.VerifyConnection == nil {
					t.Error("want chain-only verification")
				}
			}},
		{name: "cipher suites", props: base("zookeeper.ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
			check: func(t *testing.T, cfg *tls.Config) {
				if len(cfg.CipherSuites) != 1 || cfg.CipherSuites[0] != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
					t.Errorf("suites %v", cfg.CipherSuites)
				}
			}},
		{name: "unknown cipher", props: base("zookeeper.ssl.cipher.suites", "NOPE"), err: "NOPE"},
		{name: "old protocol", props: base("zookeeper.ssl.protocol", "TLSv1.1"), err: "TLSv1.1"},
		{name: "JKS", props: base("zookeeper.ssl.keystore.location", "/x/keystore.jks", "zookeeper.ssl.keystore.password", "p"), err: "JKS"},
		{name: "undetectable type", props: base("zookeeper.ssl.truststore.location", "/x/trust.store"), err: "auto-detect"},
		{name: "wrong password", props: base("zookeeper.ssl.keystore.location", b.Alice.PKCS12, "zookeeper.ssl.keystore.password", "wrong"), err: "zookeeper.ssl"},
		{name: "CRL", props: base("zookeeper.ssl.crl.enable", "true"), err: "zookeeper.ssl.crl.enable"},
		{name: "set.acl with a key store", props: base("zookeeper.set.acl", "true", "zookeeper.ssl.keystore.location", b.Alice.PKCS12,
			"zookeeper.ssl.keystore.password", b.Password)},
		{name: "set.acl with TLS but no key store", props: base("zookeeper.set.acl", "true"), err: DigestKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec, err := SecurityFromProps(tc.props)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sec.TLS == nil {
				t.Fatal("no TLS config")
			}
			if tc.check != nil {
				tc.check(t, sec.TLS)
			}
		})
	}

	// The authorizer's client: authorizer.zookeeper.ssl.* override, and may switch TLS off.
	props := base("zookeeper.ssl.protocol", "TLSv1.2", "authorizer.zookeeper.ssl.protocol", "TLSv1.3")
	sec, err := AuthorizerSecurityFromProps(props)
	if err != nil || sec.TLS == nil || sec.TLS.MinVersion != tls.VersionTLS13 {
		t.Fatalf("authorizer override: %+v %v", sec.TLS, err)
	}
	props["authorizer.zookeeper.ssl.client.enable"] = "false"
	if sec, err := AuthorizerSecurityFromProps(props); err != nil || sec.TLS != nil {
		t.Fatalf("authorizer TLS off: %+v %v", sec.TLS, err)
	}
}

// TLS to a ZooKeeper secureClientPort that requires client certificates: the session works,
// set.acl=true takes the certificate's x509 identity as owner, and a client that does not
// trust the server's CA gets no session.
func TestZooKeeperTLS(t *testing.T) {
	b, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.StartWith(t, zktest.Options{TLS: &zktest.TLSOptions{
		KeyStore: b.Broker.PKCS12, KeyStoreType: "PKCS12", KeyStorePassword: b.Password,
		TrustStore: b.CA, TrustStoreType: "PEM",
	}})
	props := map[string]string{
		"zookeeper.ssl.client.enable":       "true",
		"zookeeper.ssl.keystore.location":   b.Alice.PKCS12,
		"zookeeper.ssl.keystore.password":   b.Password,
		"zookeeper.ssl.truststore.location": b.Truststore,
		"zookeeper.ssl.truststore.password": b.Password,
		"zookeeper.set.acl":                 "true",
	}
	sec, err := SecurityFromProps(props)
	if err != nil {
		t.Fatal(err)
	}
	c := connectSecure(t, srv.SecureConnect("/kafka"), sec)
	if err := c.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	acl, _, err := c.GetACL("/brokers/ids")
	want := []ACL{{Perms: PermAll, Scheme: "x509", ID: b.Alice.Subject}, {Perms: PermRead, Scheme: "world", ID: "anyone"}}
	if err != nil || !reflect.DeepEqual(acl, want) {
		t.Fatalf("ACL = %+v, %v; want %+v", acl, err, want)
	}
	if acl, _, err := c.GetACL("/"); err != nil || !reflect.DeepEqual(acl, want) {
		t.Fatalf("chroot ACL = %+v, %v; want %+v", acl, err, want)
	}
	// Bob's certificate is a different identity: read yes, write no.
	bobProps := map[string]string{}
	for k, v := range props {
		bobProps[k] = v
	}
	bobProps["zookeeper.ssl.keystore.location"] = b.Bob.KeyStorePEM
	delete(bobProps, "zookeeper.ssl.keystore.password")
	bobSec, err := SecurityFromProps(bobProps)
	if err != nil {
		t.Fatal(err)
	}
	bob := connectSecure(t, srv.SecureConnect("/kafka"), bobSec)
	if _, err := bob.Children("/brokers"); err != nil {
		t.Errorf("bob reads: %v", err)
	}
	if _, err := bob.Create("/brokers/ids/7", nil, Ephemeral); !errors.Is(err, ErrNoAuth) {
		t.Errorf("bob creates = %v, want ErrNoAuth", err)
	}

	// A client trusting only the system roots cannot verify the server: no session.
	delete(props, "zookeeper.ssl.truststore.location")
	delete(props, "zookeeper.ssl.truststore.password")
	untrusting, err := SecurityFromProps(props)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	log, logs := testLogger(t)
	c2, err := ConnectSecure(ctx, srv.SecureConnect(""), 6*time.Second, log, untrusting)
	if err == nil {
		c2.Close()
		t.Fatal("connected without trusting the server's CA")
	}
	if !strings.Contains(err.Error(), "certificate") || !strings.Contains(logs.String(), "cannot open a TLS connection to ZooKeeper") {
		t.Errorf("error %v does not name the certificate problem, or it was not logged:\n%s", err, logs.String())
	}
}

// ZkSecurityMigrator: a tree made without ACLs is secured, then opened again.
func TestMigrateACLs(t *testing.T) {
	chroot := chrootFor(t)
	const digest = "samsa:pw"
	open := connectSecure(t, zkServer.Connect(chroot), Security{Digest: digest})
	if err := open.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	if _, err := open.SetUserConfig("alice", map[string]string{"SCRAM-SHA-256": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := open.CreateTopic("t", TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := open.GetACL("/brokers/topics/t"); len(got) != 1 || got[0].Scheme != "world" {
		t.Fatalf("before: %+v", got)
	}
	if err := open.MigrateACLs(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	owner := ACL{Perms: PermAll, Scheme: "digest", ID: digestID(digest)}
	worldRead := ACL{Perms: PermRead, Scheme: "world", ID: "anyone"}
	for path, want := range map[string][]ACL{
		"/":                   {owner, worldRead},
		"/brokers/topics/t":   {owner, worldRead},
		"/config/users/alice": {owner},
		"/kafka-acl":          {owner, worldRead}, // created by the migrator, as Kafka's
		"/consumers":          {{Perms: PermAll, Scheme: "world", ID: "anyone"}},
	} {
		if got, _, err := open.GetACL(path); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("after secure: ACL of %s = %+v, %v; want %+v", path, got, err, want)
		}
	}
	if err := open.MigrateACLs(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := open.GetACL("/config/users/alice"); len(got) != 1 || got[0].Scheme != "world" {
		t.Errorf("after unsecure: %+v", got)
	}
	anon := connectTo(t, zkServer.Connect(chroot), 6*time.Second, nil)
	if err := anon.MigrateACLs(context.Background(), true); err == nil {
		t.Error("an unauthenticated client secured the tree")
	}
}

// The digest identity outlives the session: after an expiry, the new session still owns
// what it creates and may change what the old one created.
func TestDigestSurvivesSessionExpiry(t *testing.T) {
	log, _ := testLogger(t)
	proxy := zktest.StartProxy(t, zkServer.Addr())
	sec := Security{Digest: "samsa:pw", SecureACLs: true}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ConnectSecure(ctx, proxy.Connect(chrootFor(t)), time.Second, log, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other := connectTo(t, zkServer.Connect(chrootFor(t)), 4*time.Second, log)
	events := c.SessionEvents()
	if _, err := c.Create("/persistent", nil, Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/alive", nil, Ephemeral); err != nil {
		t.Fatal(err)
	}
	proxy.Partition()
	waitFor(t, 10*time.Second, "the server to expire the session", func() bool {
		ok, _, err := other.Exists("/alive")
		return err == nil && !ok
	})
	proxy.Heal()
	if ev := recvSession(t, events, 10*time.Second); ev.Type != SessionExpired {
		t.Fatalf("event %+v, want SessionExpired", ev)
	}
	if ev := recvSession(t, events, 10*time.Second); ev.Type != SessionReestablished {
		t.Fatalf("event %+v, want SessionReestablished", ev)
	}
	// Without the identity the create below fails with InvalidACL (no one to own it) and
	// the set with NoAuth.
	if _, err := c.Create("/alive", nil, Ephemeral); err != nil {
		t.Fatalf("create in the new session: %v", err)
	}
	if _, err := c.Set("/persistent", []byte("x"), -1); err != nil {
		t.Fatalf("set in the new session: %v", err)
	}
	if _, err := other.Set("/persistent", []byte("y"), -1); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("unauthenticated set = %v, want ErrNoAuth", err)
	}
}
