package scramcred

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

func TestStringParseRoundTrip(t *testing.T) {
	for _, mech := range Mechanisms() {
		c, err := New(mech, "alice-secret", 8192)
		if err != nil {
			t.Fatalf("%s: New: %v", mech, err)
		}
		s := c.String()
		if !strings.HasPrefix(s, "salt=") || !strings.HasSuffix(s, ",iterations=8192") ||
			!strings.Contains(s, ",stored_key=") || !strings.Contains(s, ",server_key=") {
			t.Fatalf("%s: String() = %q, not Kafka's layout", mech, s)
		}
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("%s: Parse(%q): %v", mech, s, err)
		}
		if !bytes.Equal(got.Salt, c.Salt) || !bytes.Equal(got.StoredKey, c.StoredKey) ||
			!bytes.Equal(got.ServerKey, c.ServerKey) || got.Iterations != c.Iterations {
			t.Fatalf("%s: round trip changed the credential: %+v != %+v", mech, got, c)
		}
	}
}

// TestExactString pins the byte layout ScramCredentialUtils.credentialToString writes.
func TestExactString(t *testing.T) {
	c := Credential{Salt: []byte("salt"), StoredKey: []byte{1, 2, 3}, ServerKey: []byte{0xff, 0xfe}, Iterations: 4096}
	want := "salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=4096"
	if got := c.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestParseAcceptsKafkaVariants(t *testing.T) {
	for _, s := range []string{
		"salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=4096",
		"iterations=4096,server_key=//4=,stored_key=AQID,salt=c2FsdA==",  // any order
		"salt=c2FsdA,stored_key=AQID,server_key=//4,iterations=4096",     // padding optional
		"salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=4096,", // trailing empty token dropped
		"salt=eA==,salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=4096",
	} {
		c, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if string(c.Salt) != "salt" || c.Iterations != 4096 || !bytes.Equal(c.ServerKey, []byte{0xff, 0xfe}) {
			t.Errorf("Parse(%q) = %+v", s, c)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"salt=c2FsdA==,stored_key=AQID,server_key=//4=",                        // missing iterations
		"salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=4096,x=1",    // extra key
		"salt=c2FsdA==,stored_key=AQID,server_key=//4=,iters=4096",             // wrong key
		"salt=c2FsdA==,,stored_key=AQID,server_key=//4=,iterations=4096",       // empty token
		"=x,salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=4096",     // empty key
		"salt=c2Fs!A==,stored_key=AQID,server_key=//4=,iterations=4096",        // bad base64
		"salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=many",        // bad number
		"salt=c2FsdA==,stored_key=AQID,server_key=//4=,iterations=99999999999", // beyond int
		"salt=c2Fs\ndA==,stored_key=AQID,server_key=//4=,iterations=4096",      // Java refuses line breaks
	} {
		if c, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", s, c)
		}
	}
}

// TestDerivationMatchesRFC7677 checks the key derivation against an independent SCRAM
// implementation with RFC 7677's example salt and password.
func TestDerivationMatchesRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	for mech, fn := range map[string]scram.HashGeneratorFcn{SHA256: scram.SHA256, SHA512: scram.SHA512} {
		c, err := NewWithSalt(mech, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		client, err := fn.NewClient("user", "pencil", "")
		if err != nil {
			t.Fatal(err)
		}
		want := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: 4096})
		if !bytes.Equal(c.StoredKey, want.StoredKey) || !bytes.Equal(c.ServerKey, want.ServerKey) {
			t.Fatalf("%s: derived keys differ from xdg-go's", mech)
		}
	}
}

func TestNewIterationBoundsAndSalt(t *testing.T) {
	if _, err := New(SHA256, "pw", MinIterations-1); err == nil {
		t.Error("New accepted iterations below the minimum")
	}
	if _, err := New(SHA512, "pw", MaxIterations+1); err == nil {
		t.Error("New accepted iterations above the maximum")
	}
	if _, err := New("SCRAM-SHA-1", "pw", 4096); err == nil {
		t.Error("New accepted SCRAM-SHA-1")
	}
	a, err := New(SHA256, "pw", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(SHA256, "pw", MinIterations)
	if bytes.Equal(a.Salt, b.Salt) {
		t.Error("two credentials share a salt")
	}
	// Kafka's salt is a base-36 number written out in ASCII.
	for _, ch := range a.Salt {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z') {
			t.Fatalf("salt %q is not base 36", a.Salt)
		}
	}
}

func TestFromSaltedPasswordAgreesWithNew(t *testing.T) {
	salt := []byte("0123456789")
	c, err := NewWithSalt(SHA512, "secret", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := SaltedPassword(SHA512, "secret", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	d, err := FromSaltedPassword(SHA512, salt, sp, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != c.String() {
		t.Fatalf("FromSaltedPassword %q != NewWithSalt %q", d, c)
	}
}
