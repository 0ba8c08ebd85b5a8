package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
	"github.com/samsa-kafka/samsa/logstore"
)

// withProps is cfg with changes applied as a dynamic layer would (FromMap over the static
// keys plus the changes).
func withProps(t *testing.T, cfg *config.Config, changes map[string]string) *config.Config {
	t.Helper()
	raw := maps.Clone(cfg.Static)
	maps.Copy(raw, changes)
	c, _, err := config.FromMap(raw)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return c
}

// findReconfigurable returns b's reconfigurable of type T.
func findReconfigurable[T Reconfigurable](t *testing.T, b *Broker) T {
	t.Helper()
	for _, r := range b.reconfigurables() {
		if x, ok := r.(T); ok {
			return x
		}
	}
	var zero T
	t.Fatalf("no %T among the broker's reconfigurables", zero)
	return zero
}

// apply validates and applies next on r, as DynamicBrokerConfig does.
func apply(t *testing.T, r Reconfigurable, old, next *config.Config) {
	t.Helper()
	if err := r.ValidateReconfiguration(next); err != nil {
		t.Fatalf("%T refused: %v", r, err)
	}
	r.Reconfigure(old, next)
}

// TestReconfigurablesOnTwoBrokers: new log defaults reach live logs of topics without
// overrides, the replica fetcher pool grows and shrinks while replication goes on, and the
// thread counts are bounded as Kafka bounds them.
func TestReconfigurablesOnTwoBrokers(t *testing.T) {
	chroot := testChroot(t)
	b1 := startTestBroker(t, chroot, nil)
	waitController(t, b1)
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2"})
	adminWaitFor(t, 10*time.Second, "two live brokers", func() bool { return len(b1.Metadata().AliveBrokers()) == 2 })

	cl := kgoClient(t, b1.Addr("PLAINTEXT"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const parts = 8
	if _, err := adm.CreateTopic(ctx, parts, 2, nil, "dyn"); err != nil {
		t.Fatal(err)
	}
	keep := "60000"
	if _, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{"retention.ms": &keep}, "keep"); err != nil {
		t.Fatal(err)
	}
	produceAll := func(round int) {
		t.Helper()
		for p := int32(0); p < parts; p++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dyn", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("round %d produce to %d: %v", round, p, err)
			}
		}
	}
	// caughtUp: every replica of dyn on both brokers has the same log end offset, >= want.
	caughtUp := func(want int64) bool {
		for p := int32(0); p < parts; p++ {
			tp := logstore.TopicPartition{Topic: "dyn", Partition: p}
			l1, ok1 := b1.logs.GetLog(tp)
			l2, ok2 := b2.logs.GetLog(tp)
			if !ok1 || !ok2 || l1.LogEndOffset() < want || l1.LogEndOffset() != l2.LogEndOffset() {
				return false
			}
		}
		return true
	}
	produceAll(0)
	adminWaitFor(t, 15*time.Second, "replicas caught up", func() bool { return caughtUp(1) })

	t.Run("log defaults", func(t *testing.T) {
		for _, b := range []*Broker{b1, b2} {
			old := b.apis.config()
			next := withProps(t, old, map[string]string{"log.retention.ms": "1234567", "log.segment.bytes": "2000000"})
			apply(t, findReconfigurable[*dynamicLogConfig](t, b), old, next)
			for p := int32(0); p < parts; p++ {
				l, _ := b.logs.GetLog(logstore.TopicPartition{Topic: "dyn", Partition: p})
				if c := l.Config(); c.RetentionMs != 1234567 || c.SegmentBytes != 2000000 {
					t.Fatalf("broker %d dyn-%d: retention %d segment %d after the new defaults", b.ID(), p, c.RetentionMs, c.SegmentBytes)
				}
			}
			l, _ := b.logs.GetLog(logstore.TopicPartition{Topic: "keep", Partition: 0})
			if c := l.Config(); c.RetentionMs != 60000 || c.SegmentBytes != 2000000 {
				t.Fatalf("broker %d keep-0: retention %d (override 60000 must win) segment %d", b.ID(), c.RetentionMs, c.SegmentBytes)
			}
		}
		// A refusal from DynamicLogConfig's checks.
		bad := withProps(t, b1.apis.config(), map[string]string{"log.local.retention.ms": "-1", "log.retention.ms": "1000"})
		if err := findReconfigurable[*dynamicLogConfig](t, b1).ValidateReconfiguration(bad); err == nil ||
			!strings.Contains(err.Error(), "Value must not be -1 as log.retention.ms value is set as 1000") {
			t.Fatalf("local retention -1 under a finite retention: %v", err)
		}
	})

	t.Run("replica fetchers", func(t *testing.T) {
		pool := findReconfigurable[*dynamicThreadPool](t, b2)
		old := b2.apis.config()
		if err := pool.ValidateReconfiguration(withProps(t, old, map[string]string{"num.replica.fetchers": "3"})); err == nil ||
			!strings.Contains(err.Error(), "Dynamic thread count update validation failed for num.replica.fetchers=3, value should not be greater than double the current value 1") {
			t.Fatalf("1 -> 3 fetchers: %v", err)
		}
		if err := pool.ValidateReconfiguration(withProps(t, old, map[string]string{"num.io.threads": "3"})); err == nil ||
			!strings.Contains(err.Error(), "value should be at least half the current value 8") {
			t.Fatalf("8 -> 3 io threads: %v", err)
		}
		// fetcherIDs checks that every followed partition sits in the fetcher its id hash
		// names under the pool size now, and returns the partitions per fetcher id.
		fetcherIDs := func() map[int]int {
			t.Helper()
			m := b2.replicas.fetchers
			m.mu.Lock()
			defer m.mu.Unlock()
			out := map[int]int{}
			for k, f := range m.fetchers {
				f.mu.Lock()
				for tp := range f.partitions {
					if id := m.fetcherID(tp); id != k.id {
						t.Errorf("%s in fetcher %d, its hash names %d", tp, k.id, id)
					}
				}
				out[k.id] += len(f.partitions)
				f.mu.Unlock()
			}
			return out
		}
		followed := fetcherIDs()[0]
		two := withProps(t, old, map[string]string{"num.replica.fetchers": "2"})
		apply(t, pool, old, two)
		ids := fetcherIDs()
		t.Logf("partitions per fetcher id with 2 fetchers: %v", ids)
		if ids[0]+ids[1] != followed || len(ids) > 2 {
			t.Fatalf("partitions per fetcher id after growing to 2: %v, want %d in all", ids, followed)
		}
		produceAll(1)
		adminWaitFor(t, 15*time.Second, "replicas caught up with 2 fetchers", func() bool { return caughtUp(2) })

		apply(t, pool, two, withProps(t, old, map[string]string{"num.replica.fetchers": "1"}))
		if ids := fetcherIDs(); len(ids) != 1 || ids[0] != followed {
			t.Fatalf("partitions per fetcher id after shrinking to 1: %v", ids)
		}
		produceAll(2)
		adminWaitFor(t, 15*time.Second, "replicas caught up with 1 fetcher", func() bool { return caughtUp(3) })
	})

	t.Run("cleaner", func(t *testing.T) {
		r := findReconfigurable[*logCleanerReconfigurable](t, b1)
		old := b1.apis.config()
		if err := r.ValidateReconfiguration(withProps(t, old, map[string]string{"log.cleaner.threads": "3"})); err == nil {
			t.Fatal("1 -> 3 cleaner threads accepted")
		}
		apply(t, r, old, withProps(t, old, map[string]string{"log.cleaner.threads": "2", "log.cleaner.backoff.ms": "100"}))
		if s := b1.logs.CleanerSettings(); s.Threads != 2 || s.Backoff != 100*time.Millisecond {
			t.Fatalf("cleaner settings %+v", s)
		}
	})
}

// TestListenerKeyStoreReload swaps a TLS listener's key store: a connection opened before
// keeps working, new handshakes present the new certificate, and stores that would change
// the certificate's name or cannot be read are refused first.
func TestListenerKeyStoreReload(t *testing.T) {
	b1 := testCerts(t)
	b2, err := testcerts.Generate(t.TempDir(), nil) // another CA; same broker DN and SANs
	if err != nil {
		t.Fatal(err)
	}
	props1 := tlsProps(b1, "SSL", nil)
	r := newServerTLSReloader("SSL", mustServerTLS(t, props1), props1)
	rc := &listenerTLSReconfigurable{r: r, log: adminLogger(t)}

	e := newDataEnv(t)
	e.serveSecure(&ListenerSecurity{Protocol: ProtocolSSL, TLS: r.serverConfig()})
	before := dialTLS(t, e.addr, b1.ClientConfig(nil))
	before.request(kmsg.NewPtrApiVersionsRequest(), 1)

	old := &config.Config{Props: props1}
	for name, change := range map[string]map[string]string{
		"unreadable store": {"listener.name.ssl.ssl.keystore.location": "/nonexistent.p12"},
		"new DN":           {"listener.name.ssl.ssl.keystore.location": b1.Alice.PKCS12},
		"new DN allowed, SANs lost": {"listener.name.ssl.ssl.keystore.location": b1.Alice.PKCS12,
			"listener.name.ssl.ssl.allow.dn.changes": "true"},
	} {
		next := &config.Config{Props: merged(props1, change)}
		if err := rc.ValidateReconfiguration(next); err == nil {
			t.Fatalf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	noTrust := tlsProps(b1, "SSL", nil)
	delete(noTrust, "ssl.truststore.location")
	delete(noTrust, "ssl.truststore.type")
	rNoTrust := &listenerTLSReconfigurable{r: newServerTLSReloader("SSL", mustServerTLS(t, noTrust), noTrust)}
	if err := rNoTrust.ValidateReconfiguration(&config.Config{Props: props1}); err == nil ||
		!strings.Contains(err.Error(), "Cannot add SSL truststore") {
		t.Fatalf("adding a trust store: %v", err)
	}

	next := &config.Config{Props: merged(props1, map[string]string{"listener.name.ssl.ssl.keystore.location": b2.Broker.PKCS12})}
	apply(t, rc, old, next)

	// The connection from before the swap is still served.
	before.request(kmsg.NewPtrMetadataRequest(), 4)
	// New handshakes get the new certificate: a client trusting only the old CA fails, one
	// trusting the new CA succeeds.
	if c, err := tls.Dial("tcp", e.addr, b1.ClientConfig(nil)); err == nil {
		c.Close()
		t.Fatal("a client trusting only the old CA completed a handshake after the swap")
	}
	after := dialTLS(t, e.addr, b2.ClientConfig(nil))
	after.request(kmsg.NewPtrApiVersionsRequest(), 1)
	before.request(kmsg.NewPtrApiVersionsRequest(), 1)
}

func mustServerTLS(t *testing.T, props map[string]string) *tls.Config {
	t.Helper()
	cfg, err := tlsconf.ServerConfig(props, "SSL")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// TestListenerSSLSettingsLive: ssl.client.auth and ssl.principal.mapping.rules set on a
// TLS listener apply to new handshakes; connections opened before keep going, and settings
// that do not build are refused first.
func TestListenerSSLSettingsLive(t *testing.T) {
	b1 := testCerts(t)
	props := tlsProps(b1, "SSL", nil)
	r := newServerTLSReloader("SSL", mustServerTLS(t, props), props)
	r.mapsPrincipals = true
	m, err := tlsconf.PrincipalMapperFor(props, "SSL")
	if err != nil {
		t.Fatal(err)
	}
	r.principals.Store(m)
	rc := &listenerTLSReconfigurable{r: r, log: adminLogger(t)}
	for _, k := range []string{"listener.name.ssl.ssl.client.auth", "listener.name.ssl.ssl.principal.mapping.rules",
		"listener.name.ssl.ssl.enabled.protocols", "listener.name.ssl.ssl.cipher.suites", "listener.name.ssl.ssl.protocol"} {
		if !slices.Contains(rc.ReconfigurableConfigs(), k) {
			t.Errorf("%s not reconfigurable", k)
		}
	}

	e := newDataEnv(t)
	rec := e.serveSecure(&ListenerSecurity{Protocol: ProtocolSSL, TLS: r.serverConfig(), livePrincipals: &r.principals})
	before := dialTLS(t, e.addr, b1.ClientConfig(nil))
	before.request(kmsg.NewPtrApiVersionsRequest(), 1)

	old := &config.Config{Props: props}
	for name, change := range map[string]map[string]string{
		"bad client auth":   {"listener.name.ssl.ssl.client.auth": "sometimes"},
		"bad mapping rules": {"listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=(.*$/$1/"},
		"bad protocols":     {"listener.name.ssl.ssl.enabled.protocols": "TLSv0.9"},
	} {
		if err := rc.ValidateReconfiguration(&config.Config{Props: merged(props, change)}); err == nil {
			t.Fatalf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}

	apply(t, rc, old, &config.Config{Props: merged(props, map[string]string{
		"listener.name.ssl.ssl.client.auth":             "required",
		"listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/u-$1/,DEFAULT",
	})})

	// A client without a certificate fails the new handshake (with TLS 1.3 the refusal
	// arrives after the client's side of the handshake).
	c, err := tls.Dial("tcp", e.addr, b1.ClientConfig(nil))
	if err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("a client without a certificate after ssl.client.auth=required: %v", err)
	}
	t.Logf("no certificate: %v", err)

	// One with a certificate gets in and is named by the new rules.
	alice := dialTLS(t, e.addr, b1.ClientConfig(&b1.Alice))
	alice.request(kmsg.NewPtrMetadataRequest(), 4)
	if ps := rec.principals(kmsg.Metadata.Int16()); len(ps) == 0 || ps[len(ps)-1].Name != "u-alice" {
		t.Fatalf("principals of Metadata: %v, want u-alice last", ps)
	}
	before.request(kmsg.NewPtrApiVersionsRequest(), 1)
}

// TestSASLListenerJAASLive: a PLAIN user added to a SASL_PLAINTEXT listener's JAAS entry
// through IncrementalAlterConfigs logs in without a restart; a connection authenticated
// before keeps working, and a mechanism without its JAAS entry is refused.
func TestSASLListenerJAASLive(t *testing.T) {
	const jaasKey = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
	b := startTestBroker(t, testChroot(t), map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name": "PLAINTEXT",
		"password.encoder.secret":    "test-secret",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
		jaasKey: `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
	})
	waitController(t, b)
	adm := kadm.NewClient(kgoClient(t, b.Addr("PLAINTEXT")))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	login := func(user, pass string) (*kgo.Client, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("SASL_PLAINTEXT")),
			kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		defer pcancel()
		if err := cl.Ping(pctx); err != nil {
			cl.Close()
			return nil, err
		}
		return cl, nil
	}
	alice, err := login("alice", "alice-secret")
	if err != nil {
		t.Fatalf("alice before the change: %v", err)
	}
	defer alice.Close()
	if cl, err := login("bob", "bob-secret"); err == nil {
		cl.Close()
		t.Fatal("bob logged in before being added")
	}

	alter := func(name, value string) error {
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: &value}}, b.ID())
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
		return nil
	}
	// SCRAM enabled without its JAAS entry: refused, PLAIN keeps working.
	if err := alter("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256"); err == nil {
		t.Fatal("a mechanism without a JAAS entry accepted")
	} else {
		t.Logf("mechanism without JAAS: %v", err)
	}
	rc := findReconfigurable[*listenerSASLReconfigurable](t, b)
	noJAAS := withProps(t, b.apis.config(), map[string]string{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"})
	if err := rc.ValidateReconfiguration(noJAAS); err == nil || !strings.Contains(err.Error(), "no JAAS configuration") {
		t.Fatalf("SASL reconfigurable on a mechanism without JAAS: %v", err)
	}
	if err := alter(jaasKey, `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";`); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "bob logs in", func() bool {
		cl, err := login("bob", "bob-secret")
		if err == nil {
			cl.Close()
		}
		return err == nil
	})
	// alice's connection from before the change is still served.
	if err := alice.Ping(ctx); err != nil {
		t.Fatalf("alice's client after the change: %v", err)
	}
	if _, err := kadm.NewClient(alice).ListTopics(ctx); err != nil {
		t.Fatalf("alice's metadata after the change: %v", err)
	}
}

// TestInterBrokerSASLMechanismLive: with a SASL_PLAINTEXT inter-broker listener enabling
// PLAIN and OAUTHBEARER, sasl.mechanism.inter.broker.protocol moves the broker's shared
// dialer to OAUTHBEARER for new connections; a mechanism the listener does not enable is
// refused.
func TestInterBrokerSASLMechanismLive(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{
		"listeners":                                            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":                           "SASL_PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol":                 "PLAIN",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="broker" password="broker-secret" user_broker="broker-secret";`,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`unsecuredLoginStringClaim_sub="broker";`,
	})
	waitController(t, b)
	if got := b.dialer.Mechanism().Name(); got != "PLAIN" {
		t.Fatalf("inter-broker mechanism at start: %s", got)
	}
	rc := findReconfigurable[*interBrokerSASLReconfigurable](t, b)
	// config.FromMap refuses this too; the reconfigurable must on its own.
	notEnabled := *b.apis.config()
	notEnabled.Props = maps.Clone(notEnabled.Props)
	notEnabled.Props["sasl.mechanism.inter.broker.protocol"] = "SCRAM-SHA-256"
	if err := rc.ValidateReconfiguration(&notEnabled); err == nil || !strings.Contains(err.Error(), "sasl.enabled.mechanisms") {
		t.Fatalf("a mechanism the listener does not enable: %v", err)
	}

	adm := kadm.NewClient(kgoClient(t, b.Addr("PLAINTEXT")))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	alter := func(value string) error {
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "sasl.mechanism.inter.broker.protocol", Value: &value}}, b.ID())
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
		return nil
	}
	adminWaitFor(t, 10*time.Second, "the broker in the metadata", func() bool {
		m, err := adm.BrokerMetadata(ctx)
		return err == nil && len(m.Brokers) > 0
	})
	if err := alter("SCRAM-SHA-256"); err == nil {
		t.Fatal("SCRAM-SHA-256, not enabled on the inter-broker listener, accepted")
	}
	if got := b.dialer.Mechanism().Name(); got != "PLAIN" {
		t.Fatalf("a refused update changed the mechanism to %s", got)
	}
	if err := alter("OAUTHBEARER"); err != nil {
		t.Fatal(err)
	}
	// The broker applies its dynamic configs from the ZooKeeper notification.
	adminWaitFor(t, 10*time.Second, "the dialer switches to OAUTHBEARER", func() bool {
		return b.dialer.Mechanism().Name() == "OAUTHBEARER"
	})
	conn, err := b.dialer.Dial(ctx, b.Addr("SASL_PLAINTEXT"), "test")
	if err != nil {
		t.Fatalf("inter-broker dial with the new mechanism: %v", err)
	}
	conn.Close()
}

// TestProducerIDExpirationLive: producer.id.expiration.ms reaches the log manager; a value
// below 1 is refused.
func TestProducerIDExpirationLive(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	rc := findReconfigurable[*producerStateReconfigurable](t, b)
	old := b.apis.config()
	bad := *old
	bad.Props = maps.Clone(old.Props)
	bad.Props["producer.id.expiration.ms"] = "0"
	if err := rc.ValidateReconfiguration(&bad); err == nil {
		t.Fatal("producer.id.expiration.ms=0 accepted")
	}
	apply(t, rc, old, withProps(t, old, map[string]string{"producer.id.expiration.ms": "60000"}))
	if got := b.logs.ProducerIDExpiration(); got != time.Minute {
		t.Fatalf("log manager's producer id expiration: %v", got)
	}
}
