package sasl

import (
	"crypto/hmac"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdg "github.com/xdg-go/scram"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

func TestScramWithFranzGo(t *testing.T) {
	store := &fakeStore{}
	store.add(t, scramcred.SHA256, "alice", "alice-secret", 4096)
	store.add(t, scramcred.SHA512, "alice", "alice-512", 8192)
	store.add(t, scramcred.SHA256, "we,ird=name", "pw", 4096)
	s := newTestServer(t, allProps(), store, nil)

	sess, err := converse(t, s, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	if err != nil {
		t.Fatalf("SCRAM-SHA-256: %v", err)
	}
	if sess.Principal() != security.User("alice") || !sess.Expiry().IsZero() {
		t.Fatalf("principal %v expiry %v", sess.Principal(), sess.Expiry())
	}
	if _, err := converse(t, s, scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("SCRAM-SHA-512: %v", err)
	}
	sess, err = converse(t, s, scram.Auth{User: "we,ird=name", Pass: "pw"}.AsSha256Mechanism())
	if err != nil || sess.Principal().Name != "we,ird=name" {
		t.Fatalf("escaped user name: %v %v", err, sess.Principal())
	}
	if _, err := converse(t, s, scram.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()); err != nil {
		t.Fatalf("authzid equal to user: %v", err)
	}

	// Failures that could reveal whether a user exists get Kafka's generic text.
	_, err = converse(t, s, scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())
	ae := wantAuthError(t, err, "SCRAM-SHA-256", generic("SCRAM-SHA-256"))
	if ae.Msg != "Invalid client credentials" || ae.ClientMessage(true) != strings.Replace(generic("SCRAM-SHA-256"), "during authentication", "during re-authentication", 1) {
		t.Fatalf("detail %q, reauth text %q", ae.Msg, ae.ClientMessage(true))
	}
	_, err = converse(t, s, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	wantAuthError(t, err, "SCRAM-SHA-512", generic("SCRAM-SHA-512"))
	_, err = converse(t, s, scram.Auth{User: "nobody", Pass: "x"}.AsSha256Mechanism())
	ae = wantAuthError(t, err, "SCRAM-SHA-256", generic("SCRAM-SHA-256"))
	if ae.Msg != "Authentication failed: Invalid user credentials" {
		t.Fatalf("detail %q", ae.Msg)
	}
	// Delegation tokens are not served.
	_, err = converse(t, s, scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}.AsSha256Mechanism())
	ae = wantAuthError(t, err, "SCRAM-SHA-256", generic("SCRAM-SHA-256"))
	if !strings.HasPrefix(ae.Msg, "Token Authentication failed") {
		t.Fatalf("detail %q", ae.Msg)
	}
	// A different authorization id is said plainly.
	_, err = converse(t, s, scram.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	wantAuthError(t, err, "SCRAM-SHA-256", "Authentication failed: Client requested an authorization id that is different from username")
}

func TestScramWithXdgClient(t *testing.T) {
	store := &fakeStore{}
	store.add(t, scramcred.SHA512, "bob", "bob-secret", 4096)
	s := newTestServer(t, allProps(), store, nil)

	run := func(password string) error {
		client, err := xdg.SHA512.NewClient("bob", password, "")
		if err != nil {
			t.Fatal(err)
		}
		conv := client.NewConversation()
		sess, _ := s.Start(scramcred.SHA512)
		msg, err := conv.Step("")
		if err != nil {
			t.Fatal(err)
		}
		for {
			reply, done, err := sess.Step([]byte(msg))
			if err != nil {
				return err
			}
			next, cerr := conv.Step(string(reply))
			if cerr != nil {
				t.Fatalf("xdg client rejected %q: %v", reply, cerr)
			}
			if done {
				if !conv.Valid() {
					t.Fatal("xdg client did not validate the server signature")
				}
				return nil
			}
			msg = next
		}
	}
	if err := run("bob-secret"); err != nil {
		t.Fatalf("xdg client: %v", err)
	}
	if err := run("bob-wrong"); err == nil {
		t.Fatal("wrong password accepted")
	}
}

// TestScramRFC7677 replays RFC 7677's example exchange byte for byte.
func TestScramRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := scramcred.NewWithSalt(scramcred.SHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{creds: map[string]scramcred.Credential{scramcred.SHA256 + "/user": cred}}
	s := newTestServer(t, allProps(), store, nil)
	start := func() *scramSession {
		sess, err := s.Start(scramcred.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		ss := sess.(*scramSession)
		ss.nonceGen = func() (string, error) { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", nil }
		return ss
	}
	ss := start()
	reply, done, err := ss.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done || string(reply) != "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096" {
		t.Fatalf("server first = %q done=%v err=%v", reply, done, err)
	}
	reply, done, err = ss.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done || string(reply) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server final = %q done=%v err=%v", reply, done, err)
	}
	if _, _, err := ss.Step([]byte("c=biws")); err == nil {
		t.Fatal("a message after completion was accepted")
	}

	// A reserved m= extension is ignored and left out of the auth message, as Kafka does.
	ss = start()
	if _, _, err := ss.Step([]byte("n,,m=ext,n=user,r=rOprNGfwEbeRWgbNEkqO")); err != nil {
		t.Fatal(err)
	}
	if _, done, err := ss.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")); err != nil || !done {
		t.Fatalf("with m=: done=%v err=%v", done, err)
	}

	// Flipping the proof, the nonce or the channel binding fails.
	for _, final := range []string{
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVA=",
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzb",
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	} {
		ss = start()
		if _, _, err := ss.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")); err != nil {
			t.Fatal(err)
		}
		_, done, err := ss.Step([]byte(final))
		if err == nil || done {
			t.Errorf("final %q accepted", final)
			continue
		}
		wantAuthError(t, err, "SCRAM-SHA-256", generic("SCRAM-SHA-256"))
	}
}

func TestScramClientFirstMessages(t *testing.T) {
	store := &fakeStore{}
	store.add(t, scramcred.SHA256, "user", "pw", 4096)
	store.add(t, scramcred.SHA256, "a,b=c", "pw", 4096)
	weak, _ := scramcred.NewWithSalt(scramcred.SHA256, "pw", []byte("salt"), 4096)
	weak.Iterations = 4095
	store.creds[scramcred.SHA256+"/weak"] = weak
	s := newTestServer(t, allProps(), store, nil)
	for _, tc := range []struct {
		msg    string
		ok     bool
		public bool // the failure's text goes to the client
		detail string
	}{
		{"n,,n=user,r=abc", true, false, ""},
		{"n,,n=user,r=abc,tokenauth=false", true, false, ""},
		{"n,,n=user,r=abc,foo=bar,baz=x=y", true, false, ""},
		{"n,a=user,n=user,r=abc", true, false, ""},
		{"n,,n=a=2Cb=3Dc,r=abc", true, false, ""},
		{"n,,n=user,r=abc,tokenauth=TRUE", false, false, "Token Authentication failed: Invalid tokenId : user"},
		{"y,,n=user,r=abc", false, false, "invalid SCRAM client first message format"},
		{"p=tls-unique,,n=user,r=abc", false, false, "invalid SCRAM client first message format"},
		{"n,,n=user", false, false, "invalid SCRAM client first message format"},
		{"n,,n=,r=abc", false, false, "invalid SCRAM client first message format"},
		{"n,,n=us=er,r=abc", false, false, "invalid SCRAM client first message format"},
		{"n,,n=user,r=a,b", false, false, "invalid SCRAM client first message format"},
		{"n,,n=us\u00e9r,r=abc", false, false, "invalid SCRAM client first message format"},
		{"n,,n=user,r=abc,1=2", false, false, "invalid SCRAM client first message format"},
		{"n,,n=nobody,r=abc", false, false, "Authentication failed: Invalid user credentials"},
		{"n,,n=weak,r=abc", false, false, "Iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256"},
		{"n,a=other,n=user,r=abc", false, true, "Authentication failed: Client requested an authorization id that is different from username"},
		// Kafka compares the authorization id as sent, still escaped.
		{"n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=abc", false, true, "Authentication failed: Client requested an authorization id that is different from username"},
	} {
		sess, _ := s.Start(scramcred.SHA256)
		reply, done, err := sess.Step([]byte(tc.msg))
		if tc.ok {
			if err != nil || done || !strings.HasPrefix(string(reply), "r=abc") {
				t.Errorf("%q: reply=%q done=%v err=%v", tc.msg, reply, done, err)
			}
			continue
		}
		ae, isAuth := err.(*AuthError)
		if !isAuth || ae.Public != tc.public || ae.Msg != tc.detail || done {
			t.Errorf("%q: err=%#v, want public=%v detail %q", tc.msg, err, tc.public, tc.detail)
		}
		if _, _, err := sess.Step([]byte("c=biws,r=abc,p=AAAA")); err == nil {
			t.Errorf("%q: the session continued after failing", tc.msg)
		}
	}
}

func TestScramUsername(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "plain", "a=2Cb": "a,b", "a=3Db": "a=b", "=3D2C": "=2C", "=2C=3D": ",=",
	} {
		if got, err := scramUsername(in); err != nil || got != want {
			t.Errorf("scramUsername(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"a=b", "=2", "a=3d"} {
		if got, err := scramUsername(in); err == nil {
			t.Errorf("scramUsername(%q) = %q, want an error", in, got)
		}
	}
}

// TestScramFinalNonceSuffix: the final nonce must end with the server's nonce (Kafka 3.7.2's
// CVE-2024-56128 check), and librdkafka 2.0's doubled client nonce is accepted.
func TestScramFinalNonceSuffix(t *testing.T) {
	salt := []byte("0123456789abcdef")
	cred, err := scramcred.NewWithSalt(scramcred.SHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := scramcred.SaltedPassword(scramcred.SHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	newHash, _ := scramcred.Hash(scramcred.SHA256)
	hm := func(key []byte, msg string) []byte {
		m := hmac.New(newHash, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	store := &fakeStore{creds: map[string]scramcred.Credential{scramcred.SHA256 + "/user": cred}}
	s := newTestServer(t, allProps(), store, nil)
	for _, tc := range []struct {
		name  string
		nonce func(client, server string) string
		ok    bool
	}{
		{"exact", func(c, s string) string { return s }, true},
		{"client nonce twice", func(c, s string) string { return c + s }, true},
		{"server nonce not last", func(c, s string) string { return s + "x" }, false},
		{"another server nonce", func(c, s string) string { return c + "other" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := s.Start(scramcred.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			const clientNonce = "fyko+d2lbbFgONRv9qkxdawL"
			first := "n=user,r=" + clientNonce
			serverFirst, _, err := sess.Step([]byte("n,," + first))
			if err != nil {
				t.Fatal(err)
			}
			serverNonce := strings.TrimPrefix(strings.Split(string(serverFirst), ",")[0], "r=")
			withoutProof := "c=biws,r=" + tc.nonce(clientNonce, serverNonce)
			clientKey := hm(salted, "Client Key")
			sig := hm(cred.StoredKey, first+","+string(serverFirst)+","+withoutProof)
			proof := make([]byte, len(clientKey))
			for i := range proof {
				proof[i] = clientKey[i] ^ sig[i]
			}
			_, done, err := sess.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
			if tc.ok && (err != nil || !done) {
				t.Fatalf("refused: done=%v err=%v", done, err)
			}
			if !tc.ok && (err == nil || done) {
				t.Fatalf("accepted a final nonce that does not end with the server's")
			}
		})
	}
}
