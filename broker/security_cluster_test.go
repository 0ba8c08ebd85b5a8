package broker

// A three-broker cluster whose only listener is SASL_SSL: the brokers talk to each other
// over TLS with SASL/PLAIN (replica fetchers, the controller's LeaderAndIsr and
// UpdateMetadata, AlterPartition, producer id allocation, transaction verification and
// markers all dial through the inter-broker Dialer), and clients authenticate with
// SASL/PLAIN and SCRAM. Start-up refuses a listener or inter-broker login it cannot build.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/logstore"
)

const brokerPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="broker" password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";`

// saslSSLBrokerConfig is broker id's config: one SASL_SSL listener, PLAIN between brokers,
// PLAIN and SCRAM-SHA-256 for clients, PKCS12 key and trust stores.
func saslSSLBrokerConfig(id int32, certs *testcerts.Bundle) map[string]string {
	return map[string]string{
		"broker.id":                                             fmt.Sprint(id),
		"listeners":                                             "SASL_SSL://127.0.0.1:0",
		"security.inter.broker.protocol":                        "SASL_SSL",
		"sasl.enabled.mechanisms":                               "PLAIN,SCRAM-SHA-256",
		"sasl.mechanism.inter.broker.protocol":                  "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":         brokerPlainJAAS,
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"ssl.keystore.type":                                     "PKCS12",
		"ssl.keystore.location":                                 certs.Broker.PKCS12,
		"ssl.keystore.password":                                 certs.Password,
		"ssl.truststore.type":                                   "PKCS12",
		"ssl.truststore.location":                               certs.Truststore,
		"ssl.truststore.password":                               certs.Password,
		"transaction.state.log.num.partitions":                  "1",
		"offsets.topic.num.partitions":                          "1",
		"controlled.shutdown.enable":                            "false",
		// Sessions expire every 1.5 s: long-lived inter-broker connections re-authenticate.
		"connections.max.reauth.ms": "1500",
	}
}

func TestSASLSSLClusterReplicates(t *testing.T) {
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	chroot := testChroot(t)
	brokers := map[int32]*Broker{}
	var seeds []string
	for id := int32(1); id <= 3; id++ {
		brokers[id] = startTestBroker(t, chroot, saslSSLBrokerConfig(id, certs))
		seeds = append(seeds, brokers[id].Addr("SASL_SSL"))
	}
	if brokers[1].Addr("PLAINTEXT") != "" {
		t.Fatal("a PLAINTEXT listener is open")
	}
	adminWaitFor(t, 15*time.Second, "three brokers alive", func() bool {
		md := brokers[1].Metadata()
		return md.IsBrokerAlive(1) && md.IsBrokerAlive(2) && md.IsBrokerAlive(3)
	})

	// A SCRAM user, as kafka-configs.sh would store it under /config/users.
	cred, err := scramcred.New(scramcred.SHA256, "bob-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		b.scram.updateCredentials("bob", map[string]string{scramcred.SHA256: cred.String()})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(mech kgo.Opt, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(certs.ClientConfig(nil)), mech,
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())

	adm := kadm.NewClient(client(alice))
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, "secured")
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	// acks=all with min.insync.replicas=3: every append needs both followers to have fetched
	// it over SASL_SSL.
	prod := client(alice, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("secured"), kgo.RecordRetries(100))
	for i := 0; i < 20; i++ {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	for id, b := range brokers {
		adminWaitFor(t, 10*time.Second, fmt.Sprintf("broker %d has the 20 records", id), func() bool {
			l, ok := b.logs.GetLog(logstore.TopicPartition{Topic: "secured", Partition: 0})
			return ok && l.LogEndOffset() == 20
		})
	}

	// A transaction (producer id from the controller, verification of the partition with the
	// coordinator, markers from the coordinator) by a SCRAM user.
	bob := kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())
	tx := client(bob, kgo.TransactionalID("secured-tx"), kgo.DefaultProduceTopic("secured"), kgo.RecordRetries(100))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, kgo.StringRecord("in-txn")).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cons := client(bob, kgo.ConsumeTopics("secured"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 21 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 21 records: %v", len(got), err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[20] != "in-txn" {
		t.Fatalf("last committed record %q", got[20])
	}

	// The inter-broker Dialer re-authenticates a connection whose session expired (KIP-368);
	// the broker would close it otherwise.
	conn, err := brokers[1].dialer.Dial(ctx, brokers[2].Addr("SASL_SSL"), "reauth-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := 0; i < 2; i++ {
		if _, err := conn.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			t.Fatalf("request %d on one connection: %v", i, err)
		}
		time.Sleep(1600 * time.Millisecond)
	}

	// A wrong password is refused.
	bad := client(kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()))
	if err := bad.Ping(ctx); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestSecuredStartFailsNamingListener(t *testing.T) {
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	chroot := testChroot(t)
	cases := []struct {
		name string
		edit map[string]string
		want []string
	}{
		{"no key store", map[string]string{"ssl.keystore.location": "", "ssl.keystore.type": "", "ssl.keystore.password": ""},
			[]string{"SASL_SSL", "key store"}},
		{"no inter-broker username", map[string]string{"listener.name.sasl_ssl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="x";`},
			[]string{"inter-broker listener SASL_SSL", "username"}},
		{"no JAAS for SCRAM", map[string]string{"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": ""},
			[]string{"SASL_SSL", "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			overrides := saslSSLBrokerConfig(1, certs)
			for k, v := range tc.edit {
				overrides[k] = v
			}
			b, err := New(testBrokerConfig(t, chroot, overrides), adminLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = b.Start(ctx)
			b.Shutdown()
			if err == nil {
				t.Fatal("started")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
