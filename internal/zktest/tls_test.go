package zktest

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
)

// The TLS port serves a client that presents a certificate, names it by its subject in
// ACLs (x509 scheme), and refuses a client without one (ssl.clientAuth=need).
func TestTLSPort(t *testing.T) {
	b, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := StartWith(t, Options{TLS: &TLSOptions{
		KeyStore: b.Broker.KeyStorePEM, KeyStoreType: "PEM",
		TrustStore: b.Truststore, TrustStoreType: "PKCS12", TrustStorePassword: b.Password,
	}})
	if s.SecureAddr() == "" || s.SecureConnect("/x") != s.SecureAddr()+"/x" {
		t.Fatalf("SecureAddr %q, SecureConnect %q", s.SecureAddr(), s.SecureConnect("/x"))
	}
	dial := func(cfg *tls.Config) zk.Dialer {
		return func(network, addr string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
		}
	}
	conn, _, err := zk.Connect([]string{s.SecureAddr()}, 4*time.Second, zk.WithLogInfo(false),
		zk.WithDialer(dial(b.ClientConfig(&b.Alice))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/tls", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatalf("create with the certificate's identity: %v", err)
	}
	acl, _, err := conn.GetACL("/tls")
	if err != nil {
		t.Fatal(err)
	}
	if len(acl) != 1 || acl[0].Scheme != "x509" || acl[0].ID != "CN=alice" {
		t.Fatalf("ACL = %+v, want x509 CN=alice", acl)
	}

	// No client certificate: the handshake fails, no session.
	c, err := tls.Dial("tcp", s.SecureAddr(), b.ClientConfig(nil))
	if err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		// TLS 1.3 reports the server's refusal on the first read.
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("client without certificate: %v, want a certificate error", err)
	}
}
