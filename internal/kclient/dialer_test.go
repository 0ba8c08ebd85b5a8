package kclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-kafka/samsa/internal/kafkatest"
)

// testTLS makes a CA and a server certificate for 127.0.0.1 signed by it: the server's
// config and a client config trusting the CA.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func TestDialerTLSAndSCRAM(t *testing.T) {
	srv, cli := testTLS(t)
	c := kfake.MustCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.TLS(srv),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "broker", "broker-secret"))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := c.ListenAddrs()[0]

	d := &Dialer{TLS: cli, SASL: scram.Auth{User: "broker", Pass: "broker-secret"}.AsSha256Mechanism(), Timeout: 5 * time.Second}
	conn, err := d.Dial(ctx, addr, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	resp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if mr := resp.(*kmsg.MetadataResponse); len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata %+v", mr.Topics)
	}
	if cli.ServerName != "" {
		t.Fatal("Dial changed the shared tls.Config")
	}

	// kfake closes the connection on a failed SCRAM exchange (a real broker answers
	// SASL_AUTHENTICATION_FAILED first: TestDialerReauthenticates checks that path).
	bad := &Dialer{TLS: cli, SASL: scram.Auth{User: "broker", Pass: "wrong"}.AsSha256Mechanism()}
	if _, err := bad.Dial(ctx, addr, "test"); err == nil {
		t.Fatal("wrong password accepted")
	}
	// No SASL on a SASL listener: the broker refuses the first real request.
	noSASL := &Dialer{TLS: cli}
	if conn, err := noSASL.Dial(ctx, addr, "test"); err == nil {
		_, err = conn.Request(ctx, kmsg.NewPtrMetadataRequest())
		conn.Close()
		if err == nil {
			t.Fatal("unauthenticated request succeeded on a SASL listener")
		}
	}

	// The broker's certificate is checked: a client trusting another CA fails the handshake.
	_, other := testTLS(t)
	if _, err := (&Dialer{TLS: other}).Dial(ctx, addr, "test"); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("untrusted broker certificate: err = %v", err)
	}
	// Plain TCP to a TLS port fails rather than hanging.
	if _, err := (&Dialer{Timeout: 2 * time.Second}).Dial(ctx, addr, "test"); err == nil {
		t.Fatal("plaintext dial to a TLS listener succeeded")
	}
}

func TestDialerPlainOverTCP(t *testing.T) {
	c := kfake.MustCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "pw"))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mech, err := MechanismFromJAAS("PLAIN", PlainLoginModule, map[string]string{"username": "admin", "password": "pw"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := (&Dialer{SASL: mech}).Dial(ctx, c.ListenAddrs()[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatal(err)
	}
}

// saslServer is a kafkatest broker that serves PLAIN with a short session lifetime and
// counts authentications; a request after the session expired without re-authentication
// is answered with an error, as a real broker would close the connection.
func saslServer(t *testing.T, lifetime time.Duration, auths *atomic.Int32) *kafkatest.Server {
	var expires atomic.Int64
	return kafkatest.NewServer(t, func(key, version int16, req kmsg.Request) kmsg.Response {
		switch key {
		case 18:
			return apiVersions(version, 3, map[int16]VersionRange{18: {0, 3}, 17: {0, 1}, 36: {0, 2}, 3: {0, 12}})
		case 17:
			resp := kmsg.NewPtrSASLHandshakeResponse()
			resp.SetVersion(version)
			resp.SupportedMechanisms = []string{"PLAIN"}
			if req.(*kmsg.SASLHandshakeRequest).Mechanism != "PLAIN" {
				resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			}
			return resp
		case 36:
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.SetVersion(version)
			if string(req.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes) != "\x00u\x00p" {
				resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
				resp.ErrorMessage = kmsg.StringPtr("Authentication failed: Invalid username or password")
				return resp
			}
			auths.Add(1)
			resp.SessionLifetimeMillis = lifetime.Milliseconds()
			expires.Store(time.Now().Add(lifetime).UnixNano())
			return resp
		case 3:
			resp := kmsg.NewPtrMetadataResponse()
			resp.SetVersion(version)
			if time.Now().UnixNano() > expires.Load() {
				resp.Topics = []kmsg.MetadataResponseTopic{{ErrorCode: kerr.SaslAuthenticationFailed.Code}}
			}
			return resp
		}
		return nil
	})
}

func TestDialerReauthenticates(t *testing.T) {
	var auths atomic.Int32
	s := saslServer(t, 300*time.Millisecond, &auths)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := &Dialer{SASL: plain.Auth{User: "u", Pass: "p"}.AsMechanism()}
	conn, err := d.Dial(ctx, s.Addr(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := 0; i < 8; i++ { // 8 × 100ms spans more than two sessions
		r, err := conn.Request(ctx, kmsg.NewPtrMetadataRequest())
		if err != nil {
			t.Fatal(err)
		}
		if mr := r.(*kmsg.MetadataResponse); len(mr.Topics) != 0 {
			t.Fatalf("request %d sent on an expired session", i)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := auths.Load(); n < 3 {
		t.Fatalf("authenticated %d times over ~800ms with 300ms sessions, want >= 3", n)
	}

	bad := &Dialer{SASL: plain.Auth{User: "u", Pass: "x"}.AsMechanism()}
	_, err = bad.Dial(ctx, s.Addr(), "test")
	if !errors.Is(err, ErrAuthentication) || !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "Invalid username or password") {
		t.Fatalf("err = %v", err)
	}
	wrongMech := &Dialer{SASL: scram.Auth{User: "u", Pass: "p"}.AsSha512Mechanism()}
	if _, err := wrongMech.Dial(ctx, s.Addr(), "test"); !errors.Is(err, ErrAuthentication) || !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("mechanism the broker does not enable: err = %v", err)
	}
}

func TestMechanismFromJAAS(t *testing.T) {
	now := time.Unix(1700000000, 500_000_000)
	mech, err := MechanismFromJAAS("OAUTHBEARER", OAuthBearerLoginModule, map[string]string{
		"unsecuredLoginStringClaim_sub":   "broker",
		"unsecuredLoginListClaim_scope":   "|a|b",
		"unsecuredLoginNumberClaim_n":     "7",
		"unsecuredLoginLifetimeSeconds":   "60",
		"unsecuredLoginExtension_traceId": "123",
	}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if mech.Name() != "OAUTHBEARER" {
		t.Fatal(mech.Name())
	}
	_, first, err := mech.Authenticate(context.Background(), "h")
	if err != nil {
		t.Fatal(err)
	}
	msg := string(first)
	if !strings.HasPrefix(msg, "n,,\x01auth=Bearer ") || !strings.Contains(msg, "\x01traceId=123\x01") {
		t.Fatalf("client first message %q", msg)
	}
	tok := strings.TrimPrefix(msg, "n,,\x01auth=Bearer ")
	tok = tok[:strings.IndexByte(tok, '\x01')]
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[2] != "" {
		t.Fatalf("token %q is not an unsecured JWS", tok)
	}
	hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if string(hdr) != `{"alg":"none"}` {
		t.Fatalf("header %s", hdr)
	}
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil {
		t.Fatalf("claims %s: %v", body, err)
	}
	if claims["sub"] != "broker" || claims["exp"] != 1700000060.5 || claims["iat"] != 1700000000.5 || claims["n"] != 7.0 {
		t.Fatalf("claims %v", claims)
	}
	if s, _ := claims["scope"].([]any); len(s) != 2 || s[0] != "a" || s[1] != "b" {
		t.Fatalf("scope %v", claims["scope"])
	}

	bad := []struct {
		mech, module string
		opts         map[string]string
		want         string
	}{
		{"GSSAPI", "com.sun.security.auth.module.Krb5LoginModule", nil, "not supported"},
		{"PLAIN", ScramLoginModule, map[string]string{"username": "a", "password": "b"}, "needs login module"},
		{"SCRAM-SHA-512", ScramLoginModule, map[string]string{"password": "b"}, "username"},
		{"PLAIN", PlainLoginModule, map[string]string{"username": "a"}, "password"},
		{"OAUTHBEARER", OAuthBearerLoginModule, map[string]string{}, "unsecuredLoginStringClaim_sub"},
		{"OAUTHBEARER", OAuthBearerLoginModule, map[string]string{"unsecuredLoginStringClaim_x": "y"}, "principal claim"},
		{"OAUTHBEARER", OAuthBearerLoginModule, map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_exp": "1"}, "'exp'"},
		{"OAUTHBEARER", OAuthBearerLoginModule, map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "x"}, "LifetimeSeconds"},
		{"OAUTHBEARER", OAuthBearerLoginModule, map[string]string{"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_auth": "x"}, "extension"},
	}
	for _, b := range bad {
		if _, err := MechanismFromJAAS(b.mech, b.module, b.opts, nil); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %v: err = %v, want %q", b.mech, b.opts, err, b.want)
		}
	}
}

func TestJSONList(t *testing.T) {
	for in, want := range map[string]string{
		"":       "[]",
		"|":      "[]",
		"|a|b":   `["a","b"]`,
		",a,,b":  `["a","","b",""]`,
		"|a|":    `["a",""]`,
		`|x"y\z`: `["x\"y\\z"]`,
	} {
		if got := jsonList(in); got != want {
			t.Errorf("jsonList(%q) = %s, want %s", in, got, want)
		}
	}
}
