package sasl

import (
	"bytes"
	"errors"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

// Seed corpora live in testdata/fuzz/<FuzzName>; the f.Add seeds below cover the shapes
// the unit tests use, so `go test` alone runs them all.

func fuzzServer(t testing.TB) *Server {
	store := &fakeStore{}
	cred, err := scramcred.NewWithSalt(scramcred.SHA256, "pw", []byte("salt"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	store.creds = map[string]scramcred.Credential{
		scramcred.SHA256 + "/user":  cred,
		scramcred.SHA256 + "/a,b=c": cred,
	}
	p := allProps()
	p["listener.name.sasl_ssl.oauthbearer.sasl.jaas.config"] = OAuthBearerLoginModule +
		` required unsecuredValidatorRequiredScope="s" unsecuredValidatorAllowableClockSkewMs="10";`
	return newTestServer(t, p, store, fixedNow)
}

func checkAuthError(t *testing.T, err error) {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *AuthError", err, err)
	}
	if ae.Error() == "" || ae.Mechanism == "" {
		t.Fatalf("empty error text or mechanism: %#v", ae)
	}
}

var serverFirstRE = regexp.MustCompile(`^r=([\x21-\x2B\x2D-\x7E]+),s=([A-Za-z0-9+/=]+),i=4096$`)

func FuzzScramClientFirst(f *testing.F) {
	for _, s := range []string{
		"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
		"n,a=user,n=user,r=abc",
		"n,,m=ext,n=user,r=abc,tokenauth=false,x=y=z",
		"n,,n=a=2Cb=3Dc,r=abc",
		"n,,n=user,r=abc,tokenauth=true",
		"y,,n=user,r=abc",
		"n,,n=us=er,r=abc",
		"n,,n=nobody,r=abc",
	} {
		f.Add([]byte(s))
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		sess, err := s.Start(scramcred.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		reply, done, err := sess.Step(msg)
		if done {
			t.Fatal("SCRAM completed after the first message")
		}
		if err != nil {
			checkAuthError(t, err)
			if reply != nil {
				t.Fatalf("reply %q alongside an error", reply)
			}
			return
		}
		first, perr := parseScramClientFirst(msg)
		if perr != nil {
			t.Fatalf("accepted %q that does not parse: %v", msg, perr)
		}
		m := serverFirstRE.FindSubmatch(reply)
		if m == nil || !bytes.HasPrefix(m[1], []byte(first.nonce)) || len(m[1]) <= len(first.nonce) {
			t.Fatalf("server first %q for client nonce %q", reply, first.nonce)
		}
		// Only users the store knows get this far, and only without a token request.
		user, uerr := scramUsername(first.saslName)
		if uerr != nil || (user != "user" && user != "a,b=c") || first.tokenAuth() {
			t.Fatalf("accepted %q for user %q (%v)", msg, user, uerr)
		}
		// The accepted grammar is ASCII without control characters in names and nonce.
		if !strings.HasPrefix(string(msg), "n,") || strings.ContainsAny(first.nonce, ", \x00") {
			t.Fatalf("accepted malformed %q", msg)
		}
		// A garbage final message must fail cleanly.
		if _, done, err := sess.Step(msg); err == nil || done {
			t.Fatalf("client first %q replayed as final was accepted", msg)
		}
	})
}

func FuzzPlainMessage(f *testing.F) {
	for _, s := range []string{
		"\x00alice\x00alice-secret",
		"alice\x00alice\x00alice-secret",
		"admin\x00alice\x00alice-secret",
		"\x00alice\x00",
		"\x00\x00x",
		"\x00alice\x00alice-secret\x00",
		"alice",
		"",
	} {
		f.Add([]byte(s))
	}
	s := fuzzServer(f)
	users := map[string]string{"admin": "admin-secret", "alice": "alice-secret"}
	f.Fuzz(func(t *testing.T, msg []byte) {
		sess, err := s.Start(MechanismPlain)
		if err != nil {
			t.Fatal(err)
		}
		reply, done, err := sess.Step(msg)
		parts := strings.Split(string(msg), "\x00")
		want := len(parts) == 3 && parts[1] != "" && users[parts[1]] == parts[2] && parts[2] != "" &&
			(parts[0] == "" || parts[0] == parts[1])
		if want != (err == nil && done) {
			t.Fatalf("%q: done=%v err=%v, want accepted=%v", msg, done, err, want)
		}
		if err != nil {
			checkAuthError(t, err)
			if !err.(*AuthError).Public {
				t.Fatalf("PLAIN failure %q is not public", err)
			}
			return
		}
		if len(reply) != 0 || sess.Principal().Name != parts[1] {
			t.Fatalf("reply %q principal %v", reply, sess.Principal())
		}
	})
}

func FuzzOAuthBearerMessage(f *testing.F) {
	now := nowSec()
	for _, s := range []string{
		"n,,\x01auth=Bearer " + unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": now + 60, "scope": "s"}) + "\x01\x01",
		"n,a=alice,\x01auth=Bearer " + unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": now + 60, "scope": []string{"s", "t"}}) + "\x01k=v\x01\x01",
		"n,,\x01auth=Bearer " + unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": now - 60}) + "\x01\x01",
		"n,,\x01auth=Bearer " + unsecuredJWS(`{"alg":"none"}`, map[string]any{"sub": "alice", "exp": now + 60}) + "\x01\x01",
		"n,,\x01auth=Bearer " + unsecuredJWS(`{"alg":"HS256"}`, map[string]any{"sub": "alice", "exp": now + 60}) + "\x01\x01",
		"n,,\x01auth=Bearer e30.e30.\x01\x01",
		"n,,\x01\x01",
		"\x01",
	} {
		f.Add([]byte(s))
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		sess, err := s.Start(MechanismOAuthBearer)
		if err != nil {
			t.Fatal(err)
		}
		reply, done, err := sess.Step(msg)
		switch {
		case err != nil:
			checkAuthError(t, err)
		case done:
			if len(reply) != 0 || strings.TrimSpace(sess.Principal().Name) == "" {
				t.Fatalf("accepted %q: reply %q principal %v", msg, reply, sess.Principal())
			}
			if !sess.Expiry().After(testNow.Add(-10 * 1e6)) {
				t.Fatalf("accepted %q with expiry %v", msg, sess.Expiry())
			}
		default:
			if string(reply) != `{"status":"invalid_token"}` && string(reply) != `{"status":"insufficient_scope", "scope":"[s]"}` {
				t.Fatalf("challenge %q for %q", reply, msg)
			}
			_, done, err := sess.Step([]byte{0x01})
			if done || err == nil || err.Error() != string(reply) {
				t.Fatalf("after %%x01: done=%v err=%v, want %q", done, err, reply)
			}
		}
	})
}

// quoteJAAS writes s as a double-quoted StreamTokenizer string.
func quoteJAAS(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

func formatJAAS(es []JAASEntry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(quoteJAAS(e.LoginModule) + " " + e.Flag)
		keys := make([]string, 0, len(e.Options))
		for k := range e.Options {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(" " + quoteJAAS(k) + "=" + quoteJAAS(e.Options[k]))
		}
		b.WriteString(";\n")
	}
	return b.String()
}

func FuzzJAAS(f *testing.F) {
	for _, s := range []string{
		plainJAAS, scramJAAS, oauthJAAS,
		`test.m required propName="prop value" propName2="value1 = 1, value2 = 2";`,
		`m required "prop name"=propValue;`,
		"m required a='x\\\"y' b=\"t\\tab\\101\\n\" /* c=d */ e=f // g=h\n i=\"j\";",
		"m required a=b /c=d\n e=f;",
		"a required; b optional x=y;",
		"m required option1=3;",
		"m required a=\"b\n;",
		"m { option1=3;",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		es, err := ParseJAASEntries(s)
		if err != nil {
			if len(es) != 0 {
				t.Fatalf("entries alongside error %v", err)
			}
			return
		}
		if len(es) == 0 {
			t.Fatal("no entries and no error")
		}
		for _, e := range es {
			switch e.Flag {
			case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
			default:
				t.Fatalf("flag %q", e.Flag)
			}
			if e.LoginModule == "" || e.Options == nil {
				t.Fatalf("entry %+v", e)
			}
		}
		// What was parsed, written back quoted, parses to the same entries.
		again, err := ParseJAASEntries(formatJAAS(es))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", formatJAAS(es), err)
		}
		if !reflect.DeepEqual(es, again) {
			t.Fatalf("round trip changed %+v into %+v", es, again)
		}
		if one, err := ParseJAAS(s); (err == nil) != (len(es) == 1) || (err == nil && !reflect.DeepEqual(one, es[0])) {
			t.Fatalf("ParseJAAS disagrees with ParseJAASEntries: %+v %v", one, err)
		}
	})
}
