package sasl

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

// fakeStore is an in-memory CredentialStore.
type fakeStore struct {
	mu    sync.Mutex
	creds map[string]scramcred.Credential // mechanism + "/" + user
}

func (f *fakeStore) ScramCredential(mechanism, user string) (scramcred.Credential, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.creds[mechanism+"/"+user]
	return c, ok
}

func (f *fakeStore) add(t testing.TB, mechanism, user, password string, iterations int) {
	t.Helper()
	c, err := scramcred.New(mechanism, password, iterations)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.creds == nil {
		f.creds = map[string]scramcred.Credential{}
	}
	f.creds[mechanism+"/"+user] = c
}

const (
	plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`
	oauthJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";`
)

// allProps enables every mechanism on listener SASL_SSL.
func allProps() map[string]string {
	return map[string]string{
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":                 "PLAIN, SCRAM-SHA-256,SCRAM-SHA-512 ,OAUTHBEARER",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":                  plainJAAS,
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":          scramJAAS,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":          scramJAAS,
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":            oauthJAAS,
		"sasl.enabled.mechanisms":                                        "GSSAPI", // overridden by the listener's key
		"listener.name.other.plain.sasl.jaas.config":                     "ignored required;",
		"listener.name.sasl_ssl.oauthbearer.sasl.login.class":            "", // unrelated keys are left alone
		"listener.name.sasl_ssl.scram-sha-256.connections.max.reauth.ms": "1000",
	}
}

func newTestServer(t testing.TB, props map[string]string, store CredentialStore, now func() time.Time) *Server {
	t.Helper()
	s, err := NewServer(Config{Props: props, Listener: "SASL_SSL", Credentials: store, Now: now})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	return s
}

// converse runs a franz-go client mechanism against a server session the way a Kafka
// client drives SaslAuthenticate: the client's message, the server's reply, until the
// server reports done or either side fails.
func converse(t testing.TB, srv *Server, mech kgosasl.Mechanism) (Session, error) {
	t.Helper()
	sess, err := srv.Start(mech.Name())
	if err != nil {
		t.Fatalf("Start(%s): %v", mech.Name(), err)
	}
	cs, msg, err := mech.Authenticate(context.Background(), "localhost:9092")
	if err != nil {
		t.Fatalf("client Authenticate: %v", err)
	}
	for i := 0; i < 10; i++ {
		reply, done, err := sess.Step(msg)
		if err != nil {
			return sess, err
		}
		cdone, next, cerr := cs.Challenge(reply)
		if cerr != nil {
			t.Fatalf("client rejected the server's reply %q: %v", reply, cerr)
		}
		if done {
			if !cdone {
				t.Fatalf("server done but client is not")
			}
			return sess, nil
		}
		if cdone {
			t.Fatalf("client done but server is not")
		}
		msg = next
	}
	t.Fatal("exchange did not finish")
	return nil, nil
}

func wantAuthError(t *testing.T, err error, mechanism, msg string) *AuthError {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *AuthError", err, err)
	}
	if ae.Mechanism != mechanism || err.Error() != msg {
		t.Fatalf("error = %q (mechanism %s), want %q", err.Error(), ae.Mechanism, msg)
	}
	return ae
}

func generic(mech string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
}

func TestNewServerMechanisms(t *testing.T) {
	s := newTestServer(t, allProps(), &fakeStore{}, nil)
	want := []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
	if got := s.Mechanisms(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Mechanisms() = %v, want %v", got, want)
	}
	if _, err := s.Start("GSSAPI"); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("Start(GSSAPI) = %v, want ErrUnsupportedMechanism", err)
	}
	if _, err := s.Start("plain"); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("Start(plain) = %v: mechanism names are case-sensitive", err)
	}

	// The unprefixed list applies when the listener has none.
	s = newTestServer(t, map[string]string{
		"sasl.enabled.mechanisms":                       "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": plainJAAS,
	}, nil, nil)
	if got := s.Mechanisms(); len(got) != 1 || got[0] != "PLAIN" {
		t.Fatalf("Mechanisms() = %v", got)
	}
}

func TestNewServerErrors(t *testing.T) {
	with := func(edit func(map[string]string)) map[string]string {
		p := allProps()
		edit(p)
		return p
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		store CredentialStore
		want  string
	}{
		{"default GSSAPI", map[string]string{}, nil, "GSSAPI, is not supported"},
		{"GSSAPI", map[string]string{"sasl.enabled.mechanisms": "PLAIN,GSSAPI"}, nil, "GSSAPI (Kerberos) is not supported"},
		{"unknown", map[string]string{"sasl.enabled.mechanisms": "DIGEST-MD5"}, nil, `unsupported SASL mechanism "DIGEST-MD5"`},
		{"lower case", map[string]string{"sasl.enabled.mechanisms": "plain"}, nil, `unsupported SASL mechanism "plain"`},
		{"empty", map[string]string{"sasl.enabled.mechanisms": " "}, nil, "is empty"},
		{"empty item", map[string]string{"sasl.enabled.mechanisms": "PLAIN,,OAUTHBEARER"}, nil, "empty mechanism name"},
		{"no JAAS", with(func(p map[string]string) { delete(p, "listener.name.sasl_ssl.plain.sasl.jaas.config") }),
			&fakeStore{}, "no JAAS configuration: set listener.name.sasl_ssl.plain.sasl.jaas.config"},
		{"global JAAS ignored", with(func(p map[string]string) {
			delete(p, "listener.name.sasl_ssl.plain.sasl.jaas.config")
			p["sasl.jaas.config"] = plainJAAS
		}), &fakeStore{}, "is ignored on a broker"},
		{"listener JAAS without mechanism ignored", with(func(p map[string]string) {
			delete(p, "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config")
			p["listener.name.sasl_ssl.sasl.jaas.config"] = oauthJAAS
		}), &fakeStore{}, "SASL mechanism OAUTHBEARER: no JAAS configuration"},
		{"bad JAAS", with(func(p map[string]string) { p["listener.name.sasl_ssl.plain.sasl.jaas.config"] = "x required a=1;" }),
			&fakeStore{}, "value not specified for key 'a'"},
		{"wrong module", with(func(p map[string]string) { p["listener.name.sasl_ssl.plain.sasl.jaas.config"] = scramJAAS }),
			&fakeStore{}, "login module org.apache.kafka.common.security.scram.ScramLoginModule is not supported for PLAIN"},
		{"no store", allProps(), nil, "SASL mechanism SCRAM-SHA-256: no SCRAM credential store"},
		{"callback handler", with(func(p map[string]string) {
			p["listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class"] = "com.example.Validator"
		}), &fakeStore{}, "custom callback handlers are not supported"},
		{"bad skew", with(func(p map[string]string) {
			p["listener.name.sasl_ssl.oauthbearer.sasl.jaas.config"] = OAuthBearerLoginModule + ` required unsecuredValidatorAllowableClockSkewMs="-5";`
		}), &fakeStore{}, "must not be negative"},
		{"bad scope", with(func(p map[string]string) {
			p["listener.name.sasl_ssl.oauthbearer.sasl.jaas.config"] = OAuthBearerLoginModule + ` required unsecuredValidatorRequiredScope="a \"b";`
		}), &fakeStore{}, "invalid scope value"},
	} {
		_, err := NewServer(Config{Props: tc.props, Listener: "SASL_SSL", Credentials: tc.store})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewServer error = %v, want one containing %q", tc.name, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "listener SASL_SSL") {
			t.Errorf("%s: error %q does not name the listener", tc.name, err)
		}
	}
}

func TestSessionsAreIndependent(t *testing.T) {
	s := newTestServer(t, allProps(), &fakeStore{}, nil)
	a, _ := s.Start(MechanismPlain)
	b, _ := s.Start(MechanismPlain)
	if _, _, err := a.Step([]byte("\x00alice\x00wrong")); err == nil {
		t.Fatal("wrong password accepted")
	}
	if _, done, err := b.Step([]byte("\x00alice\x00alice-secret")); err != nil || !done {
		t.Fatalf("second session: done=%v err=%v", done, err)
	}
	if b.Principal() != security.User("alice") {
		t.Fatalf("principal %v", b.Principal())
	}
}
