package testcerts_test

import (
	"crypto/x509"
	"os"
	"testing"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
)

func TestGenerate(t *testing.T) {
	b, err := testcerts.Generate(t.TempDir(), []string{"10.9.8.7", "kafka.example"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []testcerts.Identity{b.Broker, b.Alice, b.Bob} {
		for _, path := range []string{id.Cert, id.Key, id.KeyEncrypted, id.KeyStorePEM, id.PKCS12} {
			if st, err := os.Stat(path); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", path, err)
			}
		}
		// Subject is what a broker maps with the DEFAULT rule.
		if got, err := tlsconf.RFC2253Name(id.TLS.Leaf.RawSubject); err != nil || got != id.Subject {
			t.Errorf("subject %q, %v; Subject field %q", got, err, id.Subject)
		}
		if _, err := id.TLS.Leaf.Verify(x509Opts(b)); err != nil {
			t.Errorf("%s: %v", id.Subject, err)
		}
	}
	if err := b.Broker.TLS.Leaf.VerifyHostname("10.9.8.7"); err != nil {
		t.Error(err)
	}
	if err := b.Broker.TLS.Leaf.VerifyHostname("kafka.example"); err != nil {
		t.Error(err)
	}
	if err := b.Broker.TLS.Leaf.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	if err := b.Alice.TLS.Leaf.VerifyHostname("localhost"); err == nil {
		t.Error("a client certificate names localhost")
	}
}

func x509Opts(b *testcerts.Bundle) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: b.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
}
