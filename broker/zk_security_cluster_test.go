package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

func TestZooKeeperTLSAndACLsCluster(t *testing.T) {
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.StartWith(t, zktest.Options{TLS: &zktest.TLSOptions{
		KeyStore: certs.Broker.KeyStorePEM, KeyStoreType: "PEM", TrustStore: certs.CA, TrustStoreType: "PEM"}})
	for _, mode := range []string{"digest", "mtls"} {
		t.Run(mode, func(t *testing.T) {
			chroot := testChroot(t)
			props := func(id int) map[string]string {
				m := map[string]string{
					"broker.id":                         strconv.Itoa(id),
					"zookeeper.connect":                 srv.SecureConnect(chroot),
					"zookeeper.ssl.client.enable":       "true",
					"zookeeper.ssl.truststore.location": certs.CA,
					"zookeeper.ssl.keystore.location":   certs.Broker.PKCS12,
					"zookeeper.ssl.keystore.password":   certs.Password,
					"zookeeper.set.acl":                 "true",
				}
				if mode == "digest" {
					m["samsa.zookeeper.digest"] = "kafka:kafka-secret"
				}
				return m
			}
			b1 := startTestBroker(t, chroot, props(1))
			b2 := startTestBroker(t, chroot, props(2))
			adminWaitFor(t, 15*time.Second, "brokers alive", func() bool {
				md := b1.Metadata()
				return md.IsBrokerAlive(1) && md.IsBrokerAlive(2)
			})
			cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr("PLAINTEXT"), b2.Addr("PLAINTEXT")))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			adm := kadm.NewClient(cl)
			if r, err := adm.CreateTopic(ctx, 2, 2, nil, "t"); err != nil || r.Err != nil {
				t.Fatalf("create: %v %v", err, r.Err)
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			// The plain port of the TLS server, unauthenticated.
			anon, _, err := zk.Connect([]string{srvPlain(srv)}, 6*time.Second, zk.WithLogInfo(false))
			if err != nil {
				t.Fatal(err)
			}
			defer anon.Close()
			for _, p := range []string{"", "/brokers/topics/t", "/brokers/topics/t/partitions/0/state", "/brokers/ids/1", "/controller", "/controller_epoch", "/cluster/id"} {
				acl, _, err := anon.GetACL(chroot + p)
				if err != nil {
					t.Fatalf("getacl %s: %v", p, err)
				}
				n := 2
				if mode == "digest" {
					n = 3
				}
				if len(acl) != n || acl[n-1].Scheme != "world" || acl[n-1].Perms != zk.PermRead {
					t.Errorf("%s: %+v", p, acl)
				}
				if _, err := anon.Set(chroot+p, []byte("x"), -1); err != zk.ErrNoAuth {
					t.Errorf("anon set %s: %v", p, err)
				}
			}
			if r, err := adm.DeleteTopics(ctx, "t"); err != nil || r["t"].Err != nil {
				t.Fatalf("delete: %v %v", err, r)
			}
			adminWaitFor(t, 15*time.Second, "topic znodes gone", func() bool {
				ok, _, _ := anon.Exists(chroot + "/brokers/topics/t")
				return !ok
			})
		})
	}
}

func srvPlain(s *zktest.Server) string { return s.Addr() }
