package broker

// Tests of the connection security layer (conn_security.go): the SASL state machine over raw
// frames, real clients (kgo, sarama) through SASL and TLS, and re-authentication (KIP-368).

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
)

func init() {
	// On the PLAINTEXT listener of the round-trip test both APIs answer ILLEGAL_SASL_STATE.
	requestBuilders[17] = requestBuilder{
		build: func(_ *dataEnv, _ int16) kmsg.Request {
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.Mechanism = "PLAIN"
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			if resp := r.(*kmsg.SASLHandshakeResponse); resp.ErrorCode != kerr.IllegalSaslState.Code || len(resp.SupportedMechanisms) != 0 {
				t.Fatalf("SaslHandshake on PLAINTEXT: %+v", resp)
			}
		},
	}
	requestBuilders[36] = requestBuilder{
		build: func(_ *dataEnv, _ int16) kmsg.Request {
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.SASLAuthBytes = []byte("\x00alice\x00pw")
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.SASLAuthenticateResponse)
			if resp.ErrorCode != kerr.IllegalSaslState.Code || resp.ErrorMessage == nil ||
				*resp.ErrorMessage != "SaslAuthenticate request received after successful authentication" {
				t.Fatalf("SaslAuthenticate on PLAINTEXT: %+v", resp)
			}
		},
	}
}

// fakeMechs serves a PLAIN-like mechanism under the names it lists, with users' passwords
// and an optional credential lifetime, so the state machine is tested apart from the real
// mechanisms.
type fakeMechs struct {
	names    []string
	users    map[string]string
	lifetime time.Duration // credential expiry after Start; 0: none
}

func (f *fakeMechs) Mechanisms() []string { return f.names }

func (f *fakeMechs) Start(mechanism string) (sasl.Session, error) {
	if !slices.Contains(f.names, mechanism) {
		return nil, errors.New("unsupported")
	}
	s := &fakeSession{users: f.users}
	if f.lifetime > 0 {
		s.expiry = time.Now().Add(f.lifetime)
	}
	return s, nil
}

type fakeSession struct {
	users  map[string]string
	user   string
	expiry time.Time
}

func (s *fakeSession) Step(msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || s.users[string(parts[1])] != string(parts[2]) || len(parts[1]) == 0 {
		return nil, false, errors.New("Authentication failed: Invalid username or password")
	}
	s.user = string(parts[1])
	return nil, true, nil
}

func (s *fakeSession) Principal() security.Principal { return security.User(s.user) }
func (s *fakeSession) Expiry() time.Time             { return s.expiry }

func plainToken(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

// principalRecorder wraps the dispatcher and keeps the principal of every request by API.
type principalRecorder struct {
	h  Handler
	mu sync.Mutex
	by map[int16][]security.Principal
}

func (r *principalRecorder) Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	r.mu.Lock()
	r.by[rc.APIKey] = append(r.by[rc.APIKey], rc.Principal)
	r.mu.Unlock()
	return r.h.Handle(ctx, rc, req)
}

func (r *principalRecorder) principals(key int16) []security.Principal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.by[key])
}

// serveSecure starts a SocketServer with ls on loopback, announced as this broker.
func (e *dataEnv) serveSecure(ls *ListenerSecurity) *principalRecorder {
	e.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	rec := &principalRecorder{h: e.apis, by: map[int16][]security.Principal{}}
	s := NewSocketServer(l, "PLAINTEXT", rec, e.cfg.SocketRequestMaxBytes, e.log)
	s.Security = ls
	e.addr = l.Addr().String()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	e.t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			e.t.Errorf("Serve: %v", err)
		}
	})
	e.updateMetadata()
	for name := range e.topics {
		e.updateMetadataWithLeader(name, testBrokerID, []int32{testBrokerID})
	}
	return rec
}

func fakeSASL(delay, reauthMax time.Duration) *ListenerSecurity {
	return &ListenerSecurity{Protocol: ProtocolSASLPlaintext, FailedAuthDelay: delay, ReauthMax: reauthMax,
		mechs: &fakeMechs{names: []string{"PLAIN", "OTHER"}, users: map[string]string{"alice": "alice-pw", "bob": "bob-pw"}}}
}

func handshakeReq(v int16, mech string) *kmsg.SASLHandshakeRequest {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = v, mech
	return req
}

func authReq(v int16, token []byte) *kmsg.SASLAuthenticateRequest {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = v, token
	return req
}

func metadataReq() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	return req
}

// authenticate runs handshake v1 and SaslAuthenticate v2 and returns the final response.
func (tc *testClient) authenticate(user, pass string) *kmsg.SASLAuthenticateResponse {
	tc.t.Helper()
	hs := tc.request(handshakeReq(1, "PLAIN"), 1).(*kmsg.SASLHandshakeResponse)
	if hs.ErrorCode != 0 {
		tc.t.Fatalf("handshake: %+v", hs)
	}
	return tc.request(authReq(2, plainToken(user, pass)), 2).(*kmsg.SASLAuthenticateResponse)
}

func TestSASLStateBeforeAuthentication(t *testing.T) {
	e := newDataEnv(t)
	const delay = 150 * time.Millisecond
	e.serveSecure(fakeSASL(delay, 0))

	t.Run("metadata first", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		tc.write(encodeFrame(metadataReq(), 1))
		start := time.Now()
		tc.expectClosed()
		if el := time.Since(start); el < delay {
			t.Fatalf("closed after %v, want the failed-authentication delay %v", el, delay)
		}
	})
	t.Run("metadata after ApiVersions", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 3
		av.ClientSoftwareName, av.ClientSoftwareVersion = "t", "1"
		resp := tc.request(av, 1).(*kmsg.ApiVersionsResponse)
		var keys []int16
		for _, k := range resp.ApiKeys {
			keys = append(keys, k.ApiKey)
			if (k.ApiKey == 17 && k.MaxVersion != 1) || (k.ApiKey == 36 && k.MaxVersion != 2) {
				t.Errorf("ApiVersions: %+v", k)
			}
		}
		if resp.ErrorCode != 0 || !slices.Contains(keys, 17) || !slices.Contains(keys, 36) {
			t.Fatalf("ApiVersions before authentication: error %d keys %v", resp.ErrorCode, keys)
		}
		tc.write(encodeFrame(metadataReq(), 2))
		tc.expectClosed()
	})
	t.Run("ApiVersions twice", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		av := kmsg.NewPtrApiVersionsRequest()
		tc.request(av, 1)
		tc.write(encodeFrame(av, 2))
		tc.expectClosed()
	})
	t.Run("unsupported mechanism", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		start := time.Now()
		resp := tc.request(handshakeReq(1, "GSSAPI"), 1).(*kmsg.SASLHandshakeResponse)
		if el := time.Since(start); el < delay {
			t.Errorf("answered after %v, want the failed-authentication delay %v", el, delay)
		}
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(resp.SupportedMechanisms, []string{"PLAIN", "OTHER"}) {
			t.Fatalf("handshake: %+v", resp)
		}
		tc.expectClosed()
	})
	t.Run("second handshake", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		if resp := tc.request(handshakeReq(1, "PLAIN"), 1).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("handshake: %+v", resp)
		}
		resp := tc.request(handshakeReq(1, "PLAIN"), 2).(*kmsg.SASLHandshakeResponse)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("second handshake: %+v", resp)
		}
		tc.expectClosed()
	})
	t.Run("oversized frame", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		tc.write(sizePrefix(saslMaxReceiveSize + 1))
		tc.expectClosed()
	})
	t.Run("not a Kafka request", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		tc.write(append(sizePrefix(3), 0x60, 1, 2))
		tc.expectClosed()
	})
	checkServing(t, e.addr)
}

func TestSASLHandshakeV1(t *testing.T) {
	e := newDataEnv(t)
	const delay = 100 * time.Millisecond
	rec := e.serveSecure(fakeSASL(delay, 0))

	tc := dialTest(t, e.addr)
	resp := tc.authenticate("alice", "alice-pw")
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 || resp.SASLAuthBytes == nil {
		t.Fatalf("authenticate: %+v", resp)
	}
	md := tc.request(metadataReq(), 3).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 {
		t.Fatalf("metadata after authentication: %+v", md)
	}
	if got := rec.principals(3); !slices.Equal(got, []security.Principal{security.User("alice")}) {
		t.Fatalf("metadata principals %v", got)
	}
	// No session expiry: a later handshake is an ordinary request, answered by the handler.
	if hs := tc.request(handshakeReq(1, "PLAIN"), 4).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authentication: %+v", hs)
	}
	if ar := tc.request(authReq(1, plainToken("alice", "alice-pw")), 5).(*kmsg.SASLAuthenticateResponse); ar.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate after authentication: %+v", ar)
	}
	tc.request(metadataReq(), 6)

	t.Run("wrong password", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		start := time.Now()
		resp := tc.authenticate("alice", "nope")
		if el := time.Since(start); el < delay {
			t.Errorf("answered after %v, want the failed-authentication delay %v", el, delay)
		}
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
			*resp.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("authenticate: %+v", resp)
		}
		tc.expectClosed()
	})
	t.Run("other request instead of token", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		tc.request(handshakeReq(1, "PLAIN"), 1)
		tc.write(encodeFrame(metadataReq(), 2))
		tc.expectClosed()
	})
}

func TestSASLHandshakeV0BareTokens(t *testing.T) {
	e := newDataEnv(t)
	rec := e.serveSecure(fakeSASL(0, 0))

	tc := dialTest(t, e.addr)
	if hs := tc.request(handshakeReq(0, "PLAIN"), 1).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
		t.Fatalf("handshake: %+v", hs)
	}
	tok := plainToken("bob", "bob-pw")
	tc.write(append(sizePrefix(int32(len(tok))), tok...))
	if b, err := tc.readFrame(); err != nil || len(b) != 0 {
		t.Fatalf("bare token reply %q, %v; want an empty frame", b, err)
	}
	tc.request(metadataReq(), 2)
	if got := rec.principals(3); !slices.Equal(got, []security.Principal{security.User("bob")}) {
		t.Fatalf("metadata principals %v", got)
	}

	t.Run("wrong password", func(t *testing.T) {
		tc := dialTest(t, e.addr)
		tc.request(handshakeReq(0, "PLAIN"), 1)
		tok := plainToken("bob", "x")
		tc.write(append(sizePrefix(int32(len(tok))), tok...))
		tc.expectClosed() // Kafka sends no response to a failed bare token
	})
}

func TestSASLReauthentication(t *testing.T) {
	e := newDataEnv(t)
	const lifetime = 1200 * time.Millisecond
	e.serveSecure(fakeSASL(0, lifetime))

	t.Run("extends the session", func(t *testing.T) {
		t.Parallel()
		tc := dialTest(t, e.addr)
		start := time.Now()
		if r := tc.authenticate("alice", "alice-pw"); r.ErrorCode != 0 || r.SessionLifetimeMillis != lifetime.Milliseconds() {
			t.Fatalf("authenticate: %+v", r)
		}
		time.Sleep(time.Until(start.Add(1050 * time.Millisecond)))
		if r := tc.authenticate("alice", "alice-pw"); r.ErrorCode != 0 || r.SessionLifetimeMillis != lifetime.Milliseconds() {
			t.Fatalf("re-authenticate: %+v", r)
		}
		// Within a second of the last re-authentication's start, a handshake does not begin
		// another: the handler answers it.
		if hs := tc.request(handshakeReq(1, "PLAIN"), 3).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("early handshake: %+v", hs)
		}
		time.Sleep(time.Until(start.Add(lifetime + 300*time.Millisecond))) // past the first session's end
		tc.request(metadataReq(), 4)
		time.Sleep(time.Until(start.Add(1050*time.Millisecond + lifetime + 200*time.Millisecond))) // past the second's
		tc.write(encodeFrame(metadataReq(), 5))
		tc.expectClosed()
	})
	t.Run("principal change refused", func(t *testing.T) {
		t.Parallel()
		tc := dialTest(t, e.addr)
		tc.authenticate("alice", "alice-pw")
		time.Sleep(1050 * time.Millisecond)
		r := tc.authenticate("bob", "bob-pw")
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil ||
			*r.ErrorMessage != "Cannot change principals during re-authentication from User.alice: User.bob" {
			t.Fatalf("re-authenticate as bob: %+v", r)
		}
		tc.expectClosed()
	})
	t.Run("mechanism change refused", func(t *testing.T) {
		t.Parallel()
		tc := dialTest(t, e.addr)
		tc.authenticate("alice", "alice-pw")
		time.Sleep(1050 * time.Millisecond)
		if hs := tc.request(handshakeReq(1, "OTHER"), 3).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
			t.Fatalf("re-authentication handshake: %+v", hs)
		}
		tc.write(encodeFrame(authReq(2, plainToken("alice", "alice-pw")), 4))
		tc.expectClosed()
	})
	t.Run("credential expiry bounds the session", func(t *testing.T) {
		t.Parallel()
		e := newDataEnv(t)
		ls := fakeSASL(0, time.Hour)
		ls.mechs.(*fakeMechs).lifetime = 700 * time.Millisecond
		e.serveSecure(ls)
		tc := dialTest(t, e.addr)
		r := tc.authenticate("alice", "alice-pw")
		if r.ErrorCode != 0 || r.SessionLifetimeMillis <= 0 || r.SessionLifetimeMillis > 700 {
			t.Fatalf("authenticate: %+v", r)
		}
		time.Sleep(800 * time.Millisecond)
		tc.write(encodeFrame(metadataReq(), 3))
		tc.expectClosed()
	})
}

// TestSASLKgo runs franz-go's PLAIN client through authentication, produce and fetch, and
// through re-authentication on its own schedule.
func TestSASLKgo(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("sasl", 2)
	rec := e.serveSecure(fakeSASL(50*time.Millisecond, 2*time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()),
		kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("sasl"), kgo.ConsumeTopics("sasl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Over 3.5 s of 2 s sessions the client re-authenticates each connection in place.
	const n = 12
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", got, n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		got += fs.NumRecords()
	}
	for _, key := range []int16{0, 1} {
		ps := rec.principals(key)
		if len(ps) == 0 {
			t.Fatalf("no requests of key %d", key)
		}
		for _, p := range ps {
			if p != security.User("alice") {
				t.Fatalf("key %d served as %v", key, p)
			}
		}
	}
	if !e.logW.contains("SASL authentication complete", "reauthentications=1") {
		t.Error("no connection re-authenticated")
	}
	if e.logW.contains("SASL session expired") {
		t.Error("a connection outlived its session")
	}

	t.Run("wrong password", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(plain.Auth{User: "alice", Pass: "bad"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		err = cl.Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "Invalid username or password") {
			t.Fatalf("ping with a wrong password: %v", err)
		}
	})
}

// TestSASLSarama covers sarama with SaslHandshake v0 (bare tokens) and v1.
func TestSASLSarama(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("sarama-sasl", 1)
	rec := e.serveSecure(fakeSASL(0, 0))
	for _, hv := range []int16{sarama.SASLHandshakeV0, sarama.SASLHandshakeV1} {
		t.Run(fmt.Sprintf("handshake v%d", hv), func(t *testing.T) {
			cfg := sarama.NewConfig()
			cfg.Version = sarama.V3_7_0_0
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			cfg.Net.SASL.Version = hv
			cfg.ApiVersionsRequest = hv != sarama.SASLHandshakeV0 // sarama refuses both together
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "bob", "bob-pw"
			cfg.Producer.Return.Successes = true
			p, err := sarama.NewSyncProducer([]string{e.addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sarama-sasl", Value: sarama.StringEncoder("x")}); err != nil {
				t.Fatal(err)
			}
			cfg.Net.SASL.Password = "wrong"
			if _, err := sarama.NewClient([]string{e.addr}, cfg); err == nil {
				t.Fatal("client with a wrong password connected")
			}
		})
	}
	for _, p := range rec.principals(0) {
		if p != security.User("bob") {
			t.Fatalf("produce served as %v", p)
		}
	}
}

// certs is one certificate set for the package's TLS tests.
var certs = sync.OnceValues(func() (*testcerts.Bundle, error) {
	dir, err := os.MkdirTemp("", "samsa-broker-certs")
	if err != nil {
		return nil, err
	}
	return testcerts.Generate(dir, nil)
})

func testCerts(t *testing.T) *testcerts.Bundle {
	t.Helper()
	b, err := certs()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tlsProps are the broker's ssl.* keys for listener name with the test key and trust stores.
func tlsProps(b *testcerts.Bundle, listener string, extra map[string]string) map[string]string {
	p := map[string]string{
		"ssl.keystore.type":       "PKCS12",
		"ssl.keystore.location":   b.Broker.PKCS12,
		"ssl.keystore.password":   testcerts.Password,
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": b.CA,
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// listenerFromProps builds a listener's security from broker properties as broker.go does.
func listenerFromProps(t *testing.T, proto, listener string, props map[string]string, store sasl.CredentialStore) *ListenerSecurity {
	t.Helper()
	ls := &ListenerSecurity{Protocol: proto}
	var err error
	if proto == ProtocolSSL || proto == ProtocolSASLSSL {
		if ls.TLS, err = tlsconf.ServerConfig(props, listener); err != nil {
			t.Fatal(err)
		}
	}
	if proto == ProtocolSSL {
		if ls.Principals, err = tlsconf.PrincipalMapperFor(props, listener); err != nil {
			t.Fatal(err)
		}
	}
	if proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL {
		if ls.SASL, err = sasl.NewServer(sasl.Config{Props: props, Listener: listener, Credentials: store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ls.Validate(); err != nil {
		t.Fatal(err)
	}
	return ls
}

// produceConsume sends n records through cl and reads them back from the start.
func produceConsume(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("value-%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cl.AddConsumeTopics(topic)
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(seen), n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for i := 0; i < n; i++ {
		if !seen[fmt.Sprintf("value-%d", i)] {
			t.Fatalf("record %d not read back: %v", i, seen)
		}
	}
}

func kgoClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(3 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ping(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

func TestTLSListener(t *testing.T) {
	b := testCerts(t)

	t.Run("one-way", func(t *testing.T) {
		e := newDataEnv(t)
		e.createTopic("tls", 2)
		rec := e.serveSecure(listenerFromProps(t, ProtocolSSL, "SSL", tlsProps(b, "SSL", nil), nil))
		// Fetch goes through TLS, so record bytes are copied, not sent with sendfile.
		produceConsume(t, kgoClient(t, e.addr, kgo.DialTLSConfig(b.ClientConfig(nil))), "tls", 50)
		for _, p := range rec.principals(0) {
			if p != security.Anonymous {
				t.Fatalf("produce without a client certificate served as %v", p)
			}
		}
		t.Run("plaintext client", func(t *testing.T) {
			if err := ping(kgoClient(t, e.addr)); err == nil {
				t.Fatal("plaintext client served on a TLS listener")
			}
			tc := dialTest(t, e.addr) // the raw view: no answer, a closed connection
			tc.write(encodeFrame(kmsg.NewPtrApiVersionsRequest(), 1))
			tc.expectClosed()
		})
		t.Run("untrusted server certificate", func(t *testing.T) {
			if err := ping(kgoClient(t, e.addr, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))); err == nil {
				t.Fatal("client trusted a certificate of an unknown CA")
			}
		})
	})

	t.Run("mutual", func(t *testing.T) {
		e := newDataEnv(t)
		e.createTopic("mtls", 1)
		props := tlsProps(b, "SSL", map[string]string{
			"ssl.client.auth":             "required",
			"ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/L,DEFAULT",
		})
		rec := e.serveSecure(listenerFromProps(t, ProtocolSSL, "SSL", props, nil))
		produceConsume(t, kgoClient(t, e.addr, kgo.DialTLSConfig(b.ClientConfig(&b.Alice))), "mtls", 5)
		if ps := rec.principals(0); len(ps) == 0 || ps[0] != security.User("alice") {
			t.Fatalf("produce principals %v, want User:alice", ps)
		}
		if err := ping(kgoClient(t, e.addr, kgo.DialTLSConfig(b.ClientConfig(nil)))); err == nil {
			t.Fatal("client without a certificate served with ssl.client.auth=required")
		}
	})

	t.Run("requested, DEFAULT rule", func(t *testing.T) {
		e := newDataEnv(t)
		rec := e.serveSecure(listenerFromProps(t, ProtocolSSL, "SSL", tlsProps(b, "SSL", map[string]string{"ssl.client.auth": "requested"}), nil))
		if err := ping(kgoClient(t, e.addr, kgo.DialTLSConfig(b.ClientConfig(&b.Bob)))); err != nil {
			t.Fatal(err)
		}
		if err := ping(kgoClient(t, e.addr, kgo.DialTLSConfig(b.ClientConfig(nil)))); err != nil {
			t.Fatal(err)
		}
		ps := rec.principals(3)
		if !slices.Contains(ps, security.User(b.Bob.Subject)) || !slices.Contains(ps, security.Anonymous) {
			t.Fatalf("metadata principals %v, want User:%s and User:ANONYMOUS", ps, b.Bob.Subject)
		}
	})
}

// scramStore is a CredentialStore over a map, standing in for the ZooKeeper cache.
type scramStore map[string]scramcred.Credential

func (s scramStore) ScramCredential(mechanism, user string) (scramcred.Credential, bool) {
	c, ok := s[mechanism+"/"+user]
	return c, ok
}

func unsecuredToken(sub string, exp time.Time) string {
	claims, _ := json.Marshal(map[string]any{"sub": sub, "iat": time.Now().Unix(), "exp": exp.Unix()})
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(claims) + "."
}

// TestSASLSSLMechanisms authenticates kgo with every mechanism over SASL_SSL against the
// real SASL server built from JAAS properties.
func TestSASLSSLMechanisms(t *testing.T) {
	b := testCerts(t)
	store := scramStore{}
	for _, m := range scramcred.Mechanisms() {
		c, err := scramcred.New(m, "carol-secret", scramcred.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		store[m+"/carol"] = c
	}
	props := tlsProps(b, "SASL_SSL", map[string]string{
		"listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":   `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
	})
	e := newDataEnv(t)
	e.createTopic("sasl-ssl", 1)
	ls := listenerFromProps(t, ProtocolSASLSSL, "SASL_SSL", props, store)
	ls.FailedAuthDelay = 20 * time.Millisecond
	rec := e.serveSecure(ls)
	tlsCfg := kgo.DialTLSConfig(b.ClientConfig(nil))

	good := []struct {
		name string
		mech kgo.Opt
		user string
	}{
		{"PLAIN", kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), "alice"},
		{"SCRAM-SHA-256", kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()), "carol"},
		{"SCRAM-SHA-512", kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()), "carol"},
		{"OAUTHBEARER", kgo.SASL(oauth.Auth{Token: unsecuredToken("dave", time.Now().Add(time.Hour))}.AsMechanism()), "dave"},
	}
	for _, g := range good {
		t.Run(g.name, func(t *testing.T) {
			before := len(rec.principals(0))
			produceConsume(t, kgoClient(t, e.addr, tlsCfg, g.mech), "sasl-ssl", 3)
			ps := rec.principals(0)[before:]
			if len(ps) == 0 || ps[0] != security.User(g.user) {
				t.Fatalf("produce principals %v, want User:%s", ps, g.user)
			}
		})
	}

	bad := []struct {
		name string
		mech kgo.Opt
		msg  string
	}{
		{"PLAIN", kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()), "Invalid username or password"},
		{"SCRAM-SHA-256", kgo.SASL(scram.Auth{User: "carol", Pass: "nope"}.AsSha256Mechanism()), ""},
		{"SCRAM-SHA-512 unknown user", kgo.SASL(scram.Auth{User: "nobody", Pass: "x"}.AsSha512Mechanism()), ""},
		{"OAUTHBEARER expired", kgo.SASL(oauth.Auth{Token: unsecuredToken("dave", time.Now().Add(-time.Minute))}.AsMechanism()), ""},
	}
	for _, bc := range bad {
		t.Run("wrong "+bc.name, func(t *testing.T) {
			err := ping(kgoClient(t, e.addr, tlsCfg, bc.mech))
			if err == nil || (bc.msg != "" && !strings.Contains(err.Error(), bc.msg)) {
				t.Fatalf("ping: %v, want an authentication failure mentioning %q", err, bc.msg)
			}
		})
	}

	t.Run("token expiry bounds the session", func(t *testing.T) {
		tc := dialTLS(t, e.addr, b.ClientConfig(nil))
		if hs := tc.request(handshakeReq(1, "OAUTHBEARER"), 1).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
			t.Fatalf("handshake: %+v", hs)
		}
		exp := time.Now().Add(5 * time.Second)
		msg := "n,,\x01auth=Bearer " + unsecuredToken("dave", exp) + "\x01\x01"
		r := tc.request(authReq(2, []byte(msg)), 2).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 || r.SessionLifetimeMillis <= 3000 || r.SessionLifetimeMillis > 5000 {
			t.Fatalf("authenticate: %+v", r)
		}
	})
}

// dialTLS is dialTest over TLS.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *testClient {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{t: t, c: c}
}
