package sasl

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-kafka/samsa/internal/security"
)

func TestPlainWithFranzGo(t *testing.T) {
	s := newTestServer(t, allProps(), &fakeStore{}, nil)

	sess, err := converse(t, s, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	if sess.Principal() != security.User("alice") || !sess.Expiry().IsZero() {
		t.Fatalf("principal %v expiry %v", sess.Principal(), sess.Expiry())
	}

	// An authorization id equal to the user is allowed.
	if _, err := converse(t, s, plain.Auth{Zid: "admin", User: "admin", Pass: "admin-secret"}.AsMechanism()); err != nil {
		t.Fatalf("admin with zid: %v", err)
	}

	_, err = converse(t, s, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())
	wantAuthError(t, err, "PLAIN", "Authentication failed: Invalid username or password")
	_, err = converse(t, s, plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism())
	wantAuthError(t, err, "PLAIN", "Authentication failed: Invalid username or password")
	// The JAAS login credentials (username/password options) are not a server-side user.
	_, err = converse(t, s, plain.Auth{User: "admin", Pass: "x"}.AsMechanism())
	wantAuthError(t, err, "PLAIN", "Authentication failed: Invalid username or password")
	_, err = converse(t, s, plain.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}.AsMechanism())
	wantAuthError(t, err, "PLAIN", "Authentication failed: Client requested an authorization id that is different from username")
}

func TestPlainMessages(t *testing.T) {
	s := newTestServer(t, allProps(), &fakeStore{}, nil)
	for _, tc := range []struct {
		msg  string
		want string // "" = success
	}{
		{"\x00alice\x00alice-secret", ""},
		{"alice\x00alice\x00alice-secret", ""},
		{"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
		{"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
		{"\x00alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"},
		{"\x00alice\x00alice-secret\x00", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"\x00alice\x00alice\x00secret\x00more", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"\x00\x00alice-secret", "Authentication failed: username not specified"},
		{"\x00alice\x00", "Authentication failed: password not specified"},
		{"\x00alice\x00alice-secreT", "Authentication failed: Invalid username or password"},
		{"bob\x00alice\x00alice-secret", "Authentication failed: Client requested an authorization id that is different from username"},
	} {
		sess, err := s.Start(MechanismPlain)
		if err != nil {
			t.Fatal(err)
		}
		reply, done, err := sess.Step([]byte(tc.msg))
		if tc.want == "" {
			if err != nil || !done || len(reply) != 0 {
				t.Errorf("%q: reply=%q done=%v err=%v", tc.msg, reply, done, err)
			}
			if _, _, err := sess.Step([]byte(tc.msg)); err == nil {
				t.Errorf("%q: a second message after completion was accepted", tc.msg)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || done {
			t.Errorf("%q: done=%v err=%v, want %q", tc.msg, done, err, tc.want)
		}
	}
}

func TestPlainPasswordsAreExact(t *testing.T) {
	props := map[string]string{
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.internal.plain.sasl.jaas.config": PlainLoginModule +
			` required user_bob="päss \"w\"" user_eve="" "user_with space"="x";`,
	}
	s, err := NewServer(Config{Props: props, Listener: "INTERNAL", Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(msg string) bool {
		sess, _ := s.Start(MechanismPlain)
		_, done, err := sess.Step([]byte(msg))
		return err == nil && done
	}
	if !ok("\x00bob\x00p\u00e4ss \"w\"") {
		t.Error("bob's exact password refused")
	}
	if ok("\x00bob\x00p\u00e4ss") || ok("\x00eve\x00x") || ok("\x00eve\x00") {
		t.Error("a wrong password was accepted")
	}
	if !ok("\x00with space\x00x") {
		t.Error("a user whose name holds a space was refused")
	}
}
