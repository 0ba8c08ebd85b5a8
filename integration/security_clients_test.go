package integration

// Secured listeners against real clients: one cluster with a listener per security set-up
// (TLS one-way, TLS mutual, SASL_PLAINTEXT, SASL_SSL) serves sarama and franz-go with every
// SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER), then the refusals a
// secured broker owes (bad credentials, revoked or changed SCRAM credentials, untrusted
// certificates, the wrong protocol on a port), then kcat (librdkafka) over SASL_SSL and
// mutual TLS. The AclAuthorizer runs with only super users, so a client that reaches the
// wrong principal is refused: success shows the principal came from the authentication.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/xdg-go/scram"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
)

// The listeners of the secured cluster. PLAINTEXT comes first: the harness's helpers
// (createTopic, waitLeaders) and the brokers themselves talk over it, as User:ANONYMOUS.
var secListeners = []string{"PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL"}

const (
	secPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`user_alice="alice-secret" user_eve="eve-secret";`
	secScramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required;`
	secOAuthJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`
	// super.users: the principals the matrix authenticates as. eve (PLAIN), CN=bob (a
	// client certificate) and mallory (a token) authenticate but are no super users.
	secSuperUsers = "User:ANONYMOUS;User:CN=alice;User:alice;User:carol;User:dave"
)

// secEnv is the secured cluster and what clients need to reach it.
type secEnv struct {
	c     *Cluster
	certs *testcerts.Bundle
	admin *kadm.Client // over PLAINTEXT, a super user
}

func (e *secEnv) addrs(listener string) []string {
	var out []string
	for _, b := range e.c.Brokers {
		out = append(out, b.AddrOf(listener))
	}
	return out
}

func startSecuredCluster(t *testing.T) *secEnv {
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		"inter.broker.listener.name":     "PLAINTEXT",
		// PKCS12 key and trust stores by default; the SSL listener overrides them with a
		// PEM key store and an inline PEM trust store (Kafka's listener prefix).
		"ssl.keystore.type":                             "PKCS12",
		"ssl.keystore.location":                         certs.Broker.PKCS12,
		"ssl.keystore.password":                         certs.Password,
		"ssl.truststore.type":                           "PKCS12",
		"ssl.truststore.location":                       certs.Truststore,
		"ssl.truststore.password":                       certs.Password,
		"listener.name.ssl.ssl.keystore.type":           "PEM",
		"listener.name.ssl.ssl.keystore.location":       certs.Broker.KeyStorePEM,
		"listener.name.ssl.ssl.keystore.password":       "",
		"listener.name.ssl.ssl.truststore.type":         "PEM",
		"listener.name.ssl.ssl.truststore.location":     "",
		"listener.name.ssl.ssl.truststore.password":     "",
		"listener.name.ssl.ssl.truststore.certificates": certs.CAPEM,
		"listener.name.mtls.ssl.client.auth":            "required",
		"sasl.enabled.mechanisms":                       "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"authorizer.class.name":                         "kafka.security.authorizer.AclAuthorizer",
		"super.users":                                   secSuperUsers,
		"allow.everyone.if.no.acl.found":                "false",
	}
	for _, l := range []string{"sasl_plaintext", "sasl_ssl"} {
		props["listener.name."+l+".plain.sasl.jaas.config"] = secPlainJAAS
		props["listener.name."+l+".scram-sha-256.sasl.jaas.config"] = secScramJAAS
		props["listener.name."+l+".scram-sha-512.sasl.jaas.config"] = secScramJAAS
		props["listener.name."+l+".oauthbearer.sasl.jaas.config"] = secOAuthJAAS
	}
	c := StartCluster(t, ClusterConfig{Brokers: 2, Listeners: secListeners, Props: props})
	e := &secEnv{c: c, certs: certs, admin: adminClient(t, c)}
	// __consumer_offsets first, so the groups of the matrix do not all race its creation.
	e.committed(t, "sec-warm-up", "none")
	waitLeaders(t, c, "__consumer_offsets", 50)
	return e
}

// secCase is one way of reaching the cluster.
type secCase struct {
	name     string
	listener string
	tls      bool
	cert     *testcerts.Identity // client certificate (mutual TLS)
	mech     string              // SASL mechanism; "" for none
	user     string
	pass     string
}

func (e *secEnv) tlsConfig(cs secCase) *tls.Config {
	if !cs.tls {
		return nil
	}
	return e.certs.ClientConfig(cs.cert)
}

// secToken is an unsecured JWS (alg "none") as Kafka's OAuthBearerUnsecuredLoginCallbackHandler
// makes: what the broker's default unsecured validator accepts.
func secToken(sub string, exp time.Time) string {
	enc := base64.RawURLEncoding
	claims, _ := json.Marshal(map[string]any{"sub": sub, "iat": time.Now().Unix(), "exp": exp.Unix(), "scope": "kafka"})
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(claims) + "."
}

func (e *secEnv) kgoOpts(t testing.TB, cs secCase, addrs []string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.WithLogger(kgoTestLogger(t)),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.ClientID("sec-" + cs.name),
	}
	if cfg := e.tlsConfig(cs); cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch cs.mech {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: cs.user, Pass: cs.pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(kscram.Auth{User: cs.user, Pass: cs.pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(kscram.Auth{User: cs.user, Pass: cs.pass}.AsSha512Mechanism()))
	case "OAUTHBEARER":
		// A token per authentication: kgo calls this for every connection.
		sub := cs.user
		opts = append(opts, kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: secToken(sub, time.Now().Add(time.Hour))}, nil
		})))
	default:
		t.Fatalf("unknown mechanism %q", cs.mech)
	}
	return opts
}

func (e *secEnv) kgoClient(t testing.TB, cs secCase, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return e.kgoClientTo(t, cs, e.addrs(cs.listener), opts...)
}

func (e *secEnv) kgoClientTo(t testing.TB, cs secCase, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(e.kgoOpts(t, cs, addrs), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// secPing is one round trip on a fresh client: ApiVersions, the SASL exchange, Metadata.
func (e *secEnv) secPing(t testing.TB, cs secCase, addr string) error {
	cl, err := kgo.NewClient(append(e.kgoOpts(t, cs, []string{addr}), kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// xdgSCRAM adapts github.com/xdg-go/scram to sarama's SCRAMClient.
type xdgSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, pass, authzID string) error {
	cl, err := x.hash.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	x.conv = cl.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

// secTokenProvider gives sarama a fresh unsecured token per connection.
type secTokenProvider struct{ sub string }

func (p secTokenProvider) Token() (*sarama.AccessToken, error) {
	return &sarama.AccessToken{Token: secToken(p.sub, time.Now().Add(time.Hour))}, nil
}

func (e *secEnv) saramaConfig(cs secCase) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_7_0_0
	cfg.ClientID = "sec-" + cs.name
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 20
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	if c := e.tlsConfig(cs); c != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, c
	}
	if cs.mech != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Handshake = true
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
		cfg.Net.SASL.User, cfg.Net.SASL.Password = cs.user, cs.pass
		switch cs.mech {
		case "PLAIN":
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		case "SCRAM-SHA-256":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA256} }
		case "SCRAM-SHA-512":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA512} }
		case "OAUTHBEARER":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeOAuth
			cfg.Net.SASL.TokenProvider = secTokenProvider{sub: cs.user}
		}
	}
	return cfg
}

// scramUpsert sets a user's SCRAM password through AlterUserScramCredentials.
func (e *secEnv) scramUpsert(t testing.TB, user, pass string, mechs ...kadm.ScramMechanism) {
	t.Helper()
	var ups []kadm.UpsertSCRAM
	for _, m := range mechs {
		ups = append(ups, kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: 4096, Password: pass})
	}
	e.scramAlter(t, nil, ups)
}

func (e *secEnv) scramAlter(t testing.TB, del []kadm.DeleteSCRAM, ups []kadm.UpsertSCRAM) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := e.admin.AlterUserSCRAMs(ctx, del, ups)
	if err != nil {
		t.Fatalf("AlterUserScramCredentials: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("AlterUserScramCredentials %s: %v %s", r.User, r.Err, r.ErrMessage)
		}
	}
}

// waitAuth waits until cs authenticates (want nil) or is refused (want an error) on every
// broker: a credential change reaches the other broker through the change notification.
func (e *secEnv) waitAuth(t testing.TB, cs secCase, refused bool) {
	t.Helper()
	for _, addr := range e.addrs(cs.listener) {
		waitFor(t, 15*time.Second, func() error {
			err := e.secPing(t, cs, addr)
			switch {
			case refused && err == nil:
				return fmt.Errorf("%s still authenticates at %s", cs.name, addr)
			case refused && !isSASLAuthFailed(err):
				return fmt.Errorf("%s at %s: %v, want SASL_AUTHENTICATION_FAILED", cs.name, addr, err)
			case !refused && err != nil:
				return fmt.Errorf("%s at %s: %w", cs.name, addr, err)
			}
			return nil
		})
	}
}

func isSASLAuthFailed(err error) bool { return errors.Is(err, kerr.SaslAuthenticationFailed) }

func TestSecurityClients(t *testing.T) {
	e := startSecuredCluster(t)
	e.scramUpsert(t, "carol", "carol-secret", kadm.ScramSha256, kadm.ScramSha512)
	for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		e.waitAuth(t, secCase{name: "carol " + m, listener: "SASL_PLAINTEXT", mech: m, user: "carol", pass: "carol-secret"}, false)
	}

	t.Run("matrix", func(t *testing.T) { e.testMatrix(t) })
	t.Run("principals", func(t *testing.T) { e.testPrincipals(t) })
	t.Run("refusals", func(t *testing.T) { e.testRefusals(t) })
	t.Run("kcat", func(t *testing.T) { e.testKcat(t) })
}

// secMatrix is every way in that should work.
func (e *secEnv) secMatrix() []secCase {
	cases := []secCase{
		{name: "SSL", listener: "SSL", tls: true},
		{name: "SSL-mutual", listener: "MTLS", tls: true, cert: &e.certs.Alice},
	}
	for _, l := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		tlsOn := l == "SASL_SSL"
		cases = append(cases,
			secCase{name: l + "-PLAIN", listener: l, tls: tlsOn, mech: "PLAIN", user: "alice", pass: "alice-secret"},
			secCase{name: l + "-SCRAM-SHA-256", listener: l, tls: tlsOn, mech: "SCRAM-SHA-256", user: "carol", pass: "carol-secret"},
			secCase{name: l + "-SCRAM-SHA-512", listener: l, tls: tlsOn, mech: "SCRAM-SHA-512", user: "carol", pass: "carol-secret"},
			secCase{name: l + "-OAUTHBEARER", listener: l, tls: tlsOn, mech: "OAUTHBEARER", user: "dave"},
		)
	}
	return cases
}

const secRecords = 20

func secValues(prefix string) []string {
	var vs []string
	for i := range secRecords {
		vs = append(vs, fmt.Sprintf("%s-%02d", prefix, i))
	}
	return vs
}

// testMatrix: every client × way in creates and describes a topic, produces to it and
// consumes it in a group with a commit, all as the authenticated principal. The cases
// mostly wait on the network, so all run at once (t.Parallel would hold them to
// GOMAXPROCS at a time).
func (e *secEnv) testMatrix(t *testing.T) {
	var wg sync.WaitGroup
	for _, cs := range e.secMatrix() {
		wg.Add(2)
		go func() {
			defer wg.Done()
			t.Run("kgo/"+cs.name, func(t *testing.T) { e.kgoRoundTrip(t, cs) })
		}()
		go func() {
			defer wg.Done()
			t.Run("sarama/"+cs.name, func(t *testing.T) { e.saramaRoundTrip(t, cs) })
		}()
	}
	wg.Wait()
}

func (e *secEnv) kgoRoundTrip(t *testing.T, cs secCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic, group := "kgo-"+cs.name, "kgo-group-"+cs.name

	adm := kadm.NewClient(e.kgoClient(t, cs))
	resp, err := adm.CreateTopic(ctx, 2, 2, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v %s", err, resp.Err, resp.ErrMessage)
	}
	waitLeaders(t, e.c, topic, 2)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td.Error() != nil || len(td[topic].Partitions) != 2 {
		t.Fatalf("describe topic: %v %v %+v", err, td.Error(), td[topic])
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	if rc, err := rcs.On(topic, nil); err != nil || rc.Err != nil || len(rc.Configs) == 0 {
		t.Fatalf("describe configs of %s: %v %+v", topic, err, rc)
	}

	prod := e.kgoClient(t, cs, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	want := secValues(cs.name)
	for i, v := range want {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte{byte(i)}, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	cons := e.kgoClient(t, cs, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var got []string
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), len(want), ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	e.checkConsumed(t, topic, group, want, got)
}

// secSaramaHandler reads until want records, commits and ends the session.
type secSaramaHandler struct {
	want   int64
	n      atomic.Int64
	got    chan string
	cancel context.CancelFunc
}

func (h *secSaramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *secSaramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *secSaramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			h.got <- string(m.Value)
			if h.n.Add(1) == h.want {
				s.Commit()
				h.cancel()
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func (e *secEnv) saramaRoundTrip(t *testing.T, cs secCase) {
	topic, group := "sarama-"+cs.name, "sarama-group-"+cs.name
	cfg := e.saramaConfig(cs)
	addrs := e.addrs(cs.listener)

	adm, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 2}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitLeaders(t, e.c, topic, 2)
	mds, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(mds) != 1 || !errors.Is(mds[0].Err, sarama.ErrNoError) || len(mds[0].Partitions) != 2 {
		t.Fatalf("describe topic: %v %+v", err, mds)
	}

	prod, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	want := secValues(cs.name)
	var msgs []*sarama.ProducerMessage
	for i, v := range want {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder{byte(i)}, Value: sarama.StringEncoder(v)})
	}
	err = prod.SendMessages(msgs)
	prod.Close()
	if err != nil {
		t.Fatalf("produce: %v", err)
	}

	cg, err := sarama.NewConsumerGroup(addrs, group, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := &secSaramaHandler{want: int64(len(want)), got: make(chan string, 2*len(want)), cancel: cancel}
	errc := make(chan error, 1)
	go func() {
		var err error
		for ctx.Err() == nil && err == nil {
			err = cg.Consume(ctx, []string{topic}, h)
		}
		errc <- err
	}()
	<-ctx.Done()
	consumeErr := <-errc
	if err := cg.Close(); err != nil {
		t.Errorf("close consumer group: %v", err)
	}
	if consumeErr != nil {
		t.Fatalf("consume: %v", consumeErr)
	}
	close(h.got)
	var got []string
	for v := range h.got {
		got = append(got, v)
	}
	e.checkConsumed(t, topic, group, want, got)
}

// checkConsumed compares the values read with those written and the group's committed
// offsets (read over PLAINTEXT) with the end of the topic.
func (e *secEnv) checkConsumed(t *testing.T, topic, group string, want, got []string) {
	t.Helper()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
	if sum := e.committed(t, group, topic); sum != int64(len(want)) {
		t.Fatalf("group %s committed %d records of %s, want %d", group, sum, topic, len(want))
	}
}

// committed is the sum of a group's committed offsets on topic, asked over PLAINTEXT.
// COORDINATOR_NOT_AVAILABLE and the like are retried: a broker answers so until its
// metadata shows the leader of the group's __consumer_offsets partition.
func (e *secEnv) committed(t *testing.T, group, topic string) int64 {
	t.Helper()
	var sum int64
	waitFor(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := e.admin.FetchOffsets(ctx, group)
		if err != nil {
			if kerr.IsRetriable(err) {
				return fmt.Errorf("fetch offsets of %s: %w", group, err)
			}
			t.Fatalf("fetch offsets of %s: %v", group, err)
		}
		sum = 0
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				sum += o.At
			}
		})
		return nil
	})
	return sum
}

// testPrincipals: an authenticated identity that is not a super user is refused by the
// authorizer with Kafka's code, so the matrix's successes came from the right principal
// (the certificate's subject, the SASL user, the token's sub).
func (e *secEnv) testPrincipals(t *testing.T) {
	createTopic(t, e.c, "sec-principals", 1, 2, nil)
	cases := []secCase{
		{name: "certificate CN=bob", listener: "MTLS", tls: true, cert: &e.certs.Bob},
		{name: "PLAIN eve", listener: "SASL_SSL", tls: true, mech: "PLAIN", user: "eve", pass: "eve-secret"},
		{name: "OAUTHBEARER mallory", listener: "SASL_PLAINTEXT", mech: "OAUTHBEARER", user: "mallory"},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			cl := e.kgoClient(t, cs, kgo.DefaultProduceTopic("sec-principals"), kgo.RecordRetries(2))
			err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr()
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Fatalf("produce as %s: %v, want TOPIC_AUTHORIZATION_FAILED", cs.name, err)
			}
			resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "sec-principals-"+strings.Fields(cs.name)[1])
			if err == nil {
				err = resp.Err
			}
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Fatalf("create topic as %s: %v, want TOPIC_AUTHORIZATION_FAILED", cs.name, err)
			}
		})
	}
}

// testRefusals: each bad way in is refused with Kafka's error or a failed TLS handshake,
// and a good client is served right after.
func (e *secEnv) testRefusals(t *testing.T) {
	good := secCase{name: "good", listener: "SASL_SSL", tls: true, mech: "SCRAM-SHA-512", user: "carol", pass: "carol-secret"}
	stillServing := func(t *testing.T) {
		t.Helper()
		for _, addr := range e.addrs(good.listener) {
			if err := e.secPing(t, good, addr); err != nil {
				t.Fatalf("a good client at %s after the refusal: %v", addr, err)
			}
		}
		for _, addr := range e.addrs("MTLS") {
			if err := e.secPing(t, secCase{name: "good-mtls", listener: "MTLS", tls: true, cert: &e.certs.Alice}, addr); err != nil {
				t.Fatalf("a good TLS client at %s after the refusal: %v", addr, err)
			}
		}
	}

	saslCases := []struct {
		cs  secCase
		msg string // in the broker's error message, when Kafka sends one
	}{
		{secCase{name: "PLAIN wrong password", listener: "SASL_PLAINTEXT", mech: "PLAIN", user: "alice", pass: "nope"},
			"Invalid username or password"},
		{secCase{name: "PLAIN unknown user", listener: "SASL_SSL", tls: true, mech: "PLAIN", user: "nobody", pass: "alice-secret"},
			"Invalid username or password"},
		{secCase{name: "SCRAM-SHA-256 wrong password", listener: "SASL_SSL", tls: true, mech: "SCRAM-SHA-256", user: "carol", pass: "nope"},
			"SCRAM-SHA-256"},
		{secCase{name: "SCRAM-SHA-512 unknown user", listener: "SASL_PLAINTEXT", mech: "SCRAM-SHA-512", user: "nobody", pass: "x"},
			"SCRAM-SHA-512"},
	}
	for _, sc := range saslCases {
		t.Run(sc.cs.name, func(t *testing.T) {
			err := e.secPing(t, sc.cs, e.addrs(sc.cs.listener)[0])
			if !isSASLAuthFailed(err) || !strings.Contains(err.Error(), sc.msg) {
				t.Fatalf("kgo: %v, want SASL_AUTHENTICATION_FAILED mentioning %q", err, sc.msg)
			}
			// sarama sees the same refusal.
			cl, err := sarama.NewClient(e.addrs(sc.cs.listener)[:1], e.saramaConfig(sc.cs))
			if err == nil {
				cl.Close()
				t.Fatal("sarama: client connected")
			}
			if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
				t.Fatalf("sarama: %v, want %v", err, sarama.ErrSASLAuthenticationFailed)
			}
			stillServing(t)
		})
	}

	t.Run("OAUTHBEARER expired token", func(t *testing.T) {
		cs := secCase{name: "expired", listener: "SASL_SSL", tls: true, mech: "OAUTHBEARER"}
		opts := e.kgoOpts(t, cs, e.addrs(cs.listener)[:1])
		opts = append(opts, kgo.RequestRetries(0), kgo.SASL(oauth.Auth{Token: secToken("dave", time.Now().Add(-time.Minute))}.AsMechanism()))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.Ping(ctx); !isSASLAuthFailed(err) {
			t.Fatalf("expired token: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		stillServing(t)
	})

	t.Run("SCRAM credential revoked", func(t *testing.T) {
		frank := secCase{name: "frank", listener: "SASL_SSL", tls: true, mech: "SCRAM-SHA-256", user: "frank", pass: "frank-secret"}
		e.scramUpsert(t, "frank", "frank-secret", kadm.ScramSha256)
		e.waitAuth(t, frank, false)
		e.scramAlter(t, []kadm.DeleteSCRAM{{User: "frank", Mechanism: kadm.ScramSha256}}, nil)
		e.waitAuth(t, frank, true)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ds, err := e.admin.DescribeUserSCRAMs(ctx, "frank")
		if err != nil {
			t.Fatal(err)
		}
		if d := ds["frank"]; !errors.Is(d.Err, kerr.ResourceNotFound) {
			t.Fatalf("describe a deleted user: %+v, want RESOURCE_NOT_FOUND", d)
		}
		stillServing(t)
	})

	t.Run("SCRAM credential changed", func(t *testing.T) {
		old := secCase{name: "grace-old", listener: "SASL_PLAINTEXT", mech: "SCRAM-SHA-512", user: "grace", pass: "grace-old"}
		e.scramUpsert(t, "grace", "grace-old", kadm.ScramSha512)
		e.waitAuth(t, old, false)
		e.scramUpsert(t, "grace", "grace-new", kadm.ScramSha512)
		e.waitAuth(t, old, true)
		renewed := old
		renewed.name, renewed.pass = "grace-new", "grace-new"
		e.waitAuth(t, renewed, false)
		stillServing(t)
	})

	t.Run("untrusted client certificate", func(t *testing.T) {
		other, err := testcerts.Generate(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// CN=alice, a super user's name, but issued by a CA the broker does not trust.
		cfg := e.certs.ClientConfig(nil)
		cfg.Certificates = []tls.Certificate{other.Alice.TLS}
		for _, c := range []*tls.Config{cfg, e.certs.ClientConfig(nil)} {
			err := e.pingTLS(t, e.addrs("MTLS")[0], c)
			if err == nil || !strings.Contains(err.Error(), "tls:") {
				t.Fatalf("mutual TLS with %d untrusted/missing certificates: %v, want a TLS handshake failure", len(c.Certificates), err)
			}
			t.Logf("refused: %v", err)
		}
		stillServing(t)
	})

	t.Run("plaintext client on a TLS port", func(t *testing.T) {
		for _, l := range []string{"SSL", "SASL_SSL"} {
			cs := secCase{name: "plaintext-on-" + l, listener: l}
			if l == "SASL_SSL" {
				cs.mech, cs.user, cs.pass = "PLAIN", "alice", "alice-secret"
			}
			if err := e.secPing(t, cs, e.addrs(l)[0]); err == nil {
				t.Fatalf("plaintext client served on %s", l)
			}
			// The raw view: an ApiVersions request gets no Kafka answer, only a TLS alert or
			// a closed connection.
			resp := rawApiVersions(t, e.addrs(l)[0])
			if len(resp) >= 4 && resp[0] != 0x15 {
				t.Fatalf("%s answered a plaintext ApiVersions with %x", l, resp)
			}
			t.Logf("%s: a plaintext ApiVersions got %x and a closed connection", l, resp)
		}
		stillServing(t)
	})

	t.Run("TLS client on a plaintext port", func(t *testing.T) {
		for _, l := range []string{"PLAINTEXT", "SASL_PLAINTEXT"} {
			err := e.pingTLS(t, e.addrs(l)[0], e.certs.ClientConfig(nil))
			if err == nil {
				t.Fatalf("TLS client served on %s", l)
			}
			t.Logf("%s: %v", l, err)
		}
		// The raw view: the broker closes the connection without answering the ClientHello.
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", e.addrs("PLAINTEXT")[0], e.certs.ClientConfig(nil))
		if err == nil {
			conn.Close()
			t.Fatal("TLS handshake completed on a PLAINTEXT port")
		}
		stillServing(t)
	})
}

// pingTLS is a kgo Ping over TLS with cfg and no SASL.
func (e *secEnv) pingTLS(t testing.TB, addr string, cfg *tls.Config) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(cfg), kgo.RequestRetries(0), kgo.WithLogger(kgoTestLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// rawApiVersions writes an ApiVersions v0 request in plaintext and returns whatever comes
// back before the connection closes (or 2 s pass).
func rawApiVersions(t testing.TB, addr string) []byte {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	body := req.AppendTo(nil)
	var frame []byte
	frame = binary.BigEndian.AppendUint32(frame, 0) // size, set below
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, 0)
	frame = binary.BigEndian.AppendUint32(frame, 1)      // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := conn.Write(frame); err != nil {
		return nil
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	resp, _ := io.ReadAll(conn)
	return resp
}

// testKcat: librdkafka (kcat) produces and consumes over SASL_SSL with SCRAM-SHA-256 and
// over mutual TLS with a client certificate.
func (e *secEnv) testKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: apt-get install -y kcat")
	}
	cases := []struct {
		name     string
		listener string
		args     []string
	}{
		{"SASL_SSL-SCRAM-SHA-256", "SASL_SSL", []string{
			"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
			"-X", "sasl.username=carol", "-X", "sasl.password=carol-secret",
			"-X", "ssl.ca.location=" + e.certs.CA}},
		{"SSL-client-certificate", "MTLS", []string{
			"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + e.certs.CA,
			"-X", "ssl.certificate.location=" + e.certs.Alice.Cert, "-X", "ssl.key.location=" + e.certs.Alice.Key}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic := "kcat-" + tc.name
			createTopic(t, e.c, topic, 2, 2, nil)
			brokers := strings.Join(e.addrs(tc.listener), ",")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			want := secValues(tc.name)
			prod := exec.CommandContext(ctx, kcat, append([]string{"-b", brokers, "-P", "-t", topic, "-X", "acks=all"}, tc.args...)...)
			prod.Stdin = strings.NewReader(strings.Join(want, "\n") + "\n")
			if out, err := prod.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			cons := exec.CommandContext(ctx, kcat, append([]string{"-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e",
				"-f", "%s\n"}, tc.args...)...)
			var stderr bytes.Buffer
			cons.Stderr = &stderr
			out, err := cons.Output()
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, lastBytes(stderr.Bytes(), 3000))
			}
			var got []string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("kcat consumed %q, want %q\n%s", got, want, lastBytes(stderr.Bytes(), 3000))
			}
			// kcat's records reached the log: the end offsets add up.
			offs, err := e.admin.ListEndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
			if n != int64(len(want)) {
				t.Fatalf("end offsets add to %d, want %d", n, len(want))
			}
		})
	}
}
