package sasl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/samsa-kafka/samsa/internal/security"
)

// unsecuredJWS builds a token as OAuthBearerUnsecuredLoginCallbackHandler does.
func unsecuredJWS(header string, claims map[string]any) string {
	b, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString(b) + "."
}

var testNow = time.UnixMilli(1_700_000_000_000)

func fixedNow() time.Time { return testNow }

func nowSec() float64 { return float64(testNow.UnixMilli()) / 1000 }

func oauthServer(t *testing.T, jaasOptions string) *Server {
	t.Helper()
	p := allProps()
	p["listener.name.sasl_ssl.oauthbearer.sasl.jaas.config"] = OAuthBearerLoginModule + " required " + jaasOptions + ";"
	return newTestServer(t, p, &fakeStore{}, fixedNow)
}

func TestOAuthBearerWithFranzGo(t *testing.T) {
	s := oauthServer(t, `unsecuredLoginStringClaim_sub="admin"`)
	exp := nowSec() + 3600.5
	tok := unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": exp, "iat": nowSec(), "scope": "x"})
	sess, err := converse(t, s, oauth.Auth{Token: tok, Extensions: map[string]string{"traceId": "abc 123"}}.AsMechanism())
	if err != nil {
		t.Fatalf("valid token: %v", err)
	}
	if sess.Principal() != security.User("alice") {
		t.Fatalf("principal %v", sess.Principal())
	}
	if got, want := sess.Expiry().UnixMilli(), testNow.UnixMilli()+3600500; got != want {
		t.Fatalf("expiry %d ms, want %d", got, want)
	}
	if _, err := converse(t, s, oauth.Auth{Zid: "alice", Token: tok}.AsMechanism()); err != nil {
		t.Fatalf("authzid equal to principal: %v", err)
	}
	_, err = converse(t, s, oauth.Auth{Zid: "bob", Token: tok}.AsMechanism())
	wantAuthError(t, err, "OAUTHBEARER",
		"Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)")

	// An expired token: the server answers the JSON error, the client %x01, then it fails.
	expired := unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": nowSec()})
	_, err = converse(t, s, oauth.Auth{Token: expired}.AsMechanism())
	ae := wantAuthError(t, err, "OAUTHBEARER", `{"status":"invalid_token"}`)
	if ae.Err == nil || !strings.Contains(ae.Err.Error(), "was on or after the Expiration Time") {
		t.Fatalf("cause %v", ae.Err)
	}
}

func TestOAuthBearerValidation(t *testing.T) {
	now := nowSec()
	good := map[string]any{"sub": "alice", "exp": now + 60}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	none := `{"alg":"none"}`
	for _, tc := range []struct {
		name    string
		options string
		token   string
		want    string // "" = accepted; otherwise part of the failure cause
		scope   string // the scope an insufficient_scope reply names
	}{
		{"good", "", unsecuredJWS(none, good), "", ""},
		{"padded base64", "", strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(none)), "=") + "." +
			base64.RawStdEncoding.EncodeToString([]byte(`{"sub":"alice","exp":`+fmt.Sprint(now+60)+`}`)) + ".", "", ""},
		{"no exp", "", unsecuredJWS(none, with("exp", nil)), "No expiration time in JWT", ""},
		{"string exp", "", unsecuredJWS(none, with("exp", "soon")), "The 'exp' claim was not of type Number", ""},
		{"expired", "", unsecuredJWS(none, with("exp", now)), "was on or after the Expiration Time", ""},
		{"skew saves expired", `unsecuredValidatorAllowableClockSkewMs="1000"`, unsecuredJWS(none, with("exp", now+0.5)), "", ""},
		{"skew too small", `unsecuredValidatorAllowableClockSkewMs="1000"`, unsecuredJWS(none, with("exp", now-1)), "Expiration Time", ""},
		{"iat in future", "", unsecuredJWS(none, with("iat", now+1)), "The Issued At value", ""},
		{"iat skew", `unsecuredValidatorAllowableClockSkewMs="2000"`, unsecuredJWS(none, with("iat", now+1)), "", ""},
		{"iat after exp", `unsecuredValidatorAllowableClockSkewMs="100000"`, unsecuredJWS(none, with("iat", now+61)), "was not after the Issued At time", ""},
		{"iat not number", "", unsecuredJWS(none, with("iat", "x")), "The 'iat' claim was not of type Number", ""},
		{"no sub", "", unsecuredJWS(none, with("sub", nil)), "No principal name in JWT claim: sub", ""},
		{"blank sub", "", unsecuredJWS(none, with("sub", "  ")), "No principal name", ""},
		{"numeric sub", "", unsecuredJWS(none, with("sub", 5)), "The 'sub' claim was not of type String", ""},
		{"other principal claim", `unsecuredValidatorPrincipalClaimName="client_id"`, unsecuredJWS(none, with("client_id", "svc")), "", ""},
		{"other principal claim missing", `unsecuredValidatorPrincipalClaimName="client_id"`, unsecuredJWS(none, good), "No principal name in JWT claim: client_id", ""},
		{"alg HS256", "", unsecuredJWS(`{"alg":"HS256"}`, good), "must have 'none' for an algorithm", ""},
		{"no alg", "", unsecuredJWS(`{"typ":"JWT"}`, good), "Algorithm value", ""},
		{"signature", "", unsecuredJWS(none, good) + "c2ln", "must not contain a digital signature", ""},
		{"two parts", "", strings.TrimSuffix(unsecuredJWS(none, good), "."), "3 dot-separated", ""},
		{"four parts", "", unsecuredJWS(none, good) + ".x", "..", ""},
		{"bad base64", "", "e3000.e30.", "malformed Base64", ""},
		{"bad json", "", base64.RawURLEncoding.EncodeToString([]byte("{")) + ".e30.", "malformed JSON", ""},
		{"scope ok", `unsecuredValidatorRequiredScope="a b"`, unsecuredJWS(none, with("scope", []string{" a", "b", "c"})), "", ""},
		{"scope string", `unsecuredValidatorRequiredScope="a"`, unsecuredJWS(none, with("scope", " a ")), "", ""},
		{"scope missing", `unsecuredValidatorRequiredScope="a b"`, unsecuredJWS(none, with("scope", []string{"a"})), "was missing a required scope (b)", "[a, b]"},
		{"custom scope claim", `unsecuredValidatorScopeClaimName="scp" unsecuredValidatorRequiredScope="a"`, unsecuredJWS(none, with("scp", []string{"a"})), "", ""},
		{"scope number", "", unsecuredJWS(none, with("scope", 3)), "The 'scope' claim was not of type List", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := oauthServer(t, tc.options)
			sess, err := s.Start(MechanismOAuthBearer)
			if err != nil {
				t.Fatal(err)
			}
			msg := []byte("n,,\x01auth=Bearer " + tc.token + "\x01\x01")
			reply, done, err := sess.Step(msg)
			if tc.want == "" {
				if err != nil || !done || len(reply) != 0 {
					t.Fatalf("reply=%q done=%v err=%v", reply, done, err)
				}
				return
			}
			if err != nil || done {
				t.Fatalf("done=%v err=%v, want a JSON challenge", done, err)
			}
			wantJSON := `{"status":"invalid_token"}`
			if tc.scope != "" {
				wantJSON = `{"status":"insufficient_scope", "scope":"` + tc.scope + `"}`
			}
			if string(reply) != wantJSON {
				t.Fatalf("reply %q, want %q", reply, wantJSON)
			}
			_, done, err = sess.Step([]byte{0x01})
			ae := wantAuthError(t, err, "OAUTHBEARER", wantJSON)
			if done || ae.Err == nil || !strings.Contains(ae.Err.Error(), tc.want) {
				t.Fatalf("cause %v, want %q", ae.Err, tc.want)
			}
		})
	}
}

func TestOAuthBearerMessages(t *testing.T) {
	s := oauthServer(t, "")
	tok := unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": nowSec() + 60})
	for _, tc := range []struct {
		msg string
		ok  bool
	}{
		{"n,,\x01auth=Bearer " + tok + "\x01\x01", true},
		{"n,,\x01auth=bearer   " + tok + "\x01\x01", true},
		{"n,a=alice,\x01auth=Bearer " + tok + "\x01\x01", true},
		{"n,,\x01k=v\x01auth=Bearer " + tok + "\x01x=a b\tc\x01\x01", true},
		{"n,,\x01auth=Basic " + tok + "\x01\x01", false},
		{"n,,\x01auth=Bearer" + tok + "\x01\x01", false},
		{"n,,\x01auth=Bearer " + tok + "\x01", false},
		{"n,,\x01\x01", false},
		{"n,,\x01k=v\x01\x01", false},
		{"y,,\x01auth=Bearer " + tok + "\x01\x01", false},
		{"n,,\x01auth=Bearer " + tok + "+\x01\x01", false},
		{"n,,\x01k1=v\x01auth=Bearer " + tok + "\x01\x01", false},
		{"\x01", false},
		{"", false},
	} {
		sess, _ := s.Start(MechanismOAuthBearer)
		_, done, err := sess.Step([]byte(tc.msg))
		if tc.ok != (err == nil && done) {
			t.Errorf("%q: done=%v err=%v, want ok=%v", tc.msg, done, err, tc.ok)
		}
		if !tc.ok && err != nil {
			wantAuthError(t, err, "OAUTHBEARER", generic("OAUTHBEARER"))
		}
	}
}

// TestOAuthBearerRetryInExchange: after an error challenge the client may send a new
// initial response instead of %x01, and Kafka evaluates it afresh.
func TestOAuthBearerRetryInExchange(t *testing.T) {
	s := oauthServer(t, "")
	bad := unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": nowSec() - 1})
	good := unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "bob", "exp": nowSec() + 1})
	sess, _ := s.Start(MechanismOAuthBearer)
	if reply, done, err := sess.Step([]byte("n,,\x01auth=Bearer " + bad + "\x01\x01")); err != nil || done || len(reply) == 0 {
		t.Fatalf("bad token: reply=%q done=%v err=%v", reply, done, err)
	}
	if _, done, err := sess.Step([]byte("n,,\x01auth=Bearer " + good + "\x01\x01")); err != nil || !done {
		t.Fatalf("good token after a bad one: done=%v err=%v", done, err)
	}
	if sess.Principal().Name != "bob" {
		t.Fatalf("principal %v", sess.Principal())
	}
	// %x01 without a pending error is just a malformed message.
	sess, _ = s.Start(MechanismOAuthBearer)
	_, _, err := sess.Step([]byte{0x01})
	wantAuthError(t, err, "OAUTHBEARER", generic("OAUTHBEARER"))
}
