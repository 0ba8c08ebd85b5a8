package tlsconf

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
)

func certs(t *testing.T) *testcerts.Bundle {
	t.Helper()
	b, err := testcerts.Generate(t.TempDir(), []string{"broker1.example"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pemServerProps(b *testcerts.Bundle) map[string]string {
	return map[string]string{
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.certificate.chain": b.Broker.CertPEM,
		"ssl.keystore.key":               b.Broker.KeyPEM,
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        b.CA,
	}
}

func clientProps(b *testcerts.Bundle) map[string]string {
	return map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": b.CAPEM}
}

func mustServer(t *testing.T, props map[string]string, listener string) *tls.Config {
	t.Helper()
	cfg, err := ServerConfig(props, listener)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustClient(t *testing.T, props map[string]string) *tls.Config {
	t.Helper()
	cfg, err := ClientConfig(props, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type result struct {
	server    tls.ConnectionState
	serverErr error
	clientErr error
}

// handshake runs both sides over a loopback TCP connection; serverName "" means "localhost".
func handshake(t *testing.T, server, client *tls.Config, serverName string) result {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{serverErr: err}
			return
		}
		defer c.Close()
		s := tls.Server(c, server)
		err = s.Handshake()
		if err == nil {
			// Under TLS 1.3 the client finishes first; a reply lets it see a late refusal.
			_, err = s.Write([]byte{1})
		}
		done <- result{server: s.ConnectionState(), serverErr: err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client = client.Clone()
	if serverName == "" {
		serverName = "localhost"
	}
	client.ServerName = serverName
	tc := tls.Client(c, client)
	cerr := tc.Handshake()
	if cerr == nil {
		_, cerr = tc.Read(make([]byte, 1))
	}
	if cerr != nil {
		c.Close()
	}
	r := <-done
	r.clientErr = cerr
	return r
}

func (r result) ok(t *testing.T) {
	t.Helper()
	if r.serverErr != nil || r.clientErr != nil {
		t.Fatalf("handshake failed: server %v, client %v", r.serverErr, r.clientErr)
	}
}

func (r result) failed(t *testing.T) {
	t.Helper()
	if r.serverErr == nil && r.clientErr == nil {
		t.Fatal("handshake succeeded, want a failure")
	}
}

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", substr)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not contain %q", err, substr)
	}
}

func merge(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "<unset>" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

func TestKeyStoreForms(t *testing.T) {
	b := certs(t)
	client := mustClient(t, clientProps(b))
	for name, props := range map[string]map[string]string{
		"PEM inline": pemServerProps(b),
		"PEM file":   {"ssl.keystore.type": "PEM", "ssl.keystore.location": b.Broker.KeyStorePEM},
		"PEM inline encrypted key": {
			"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": b.Broker.CertPEM,
			"ssl.keystore.key": readFile(t, b.Broker.KeyEncrypted), "ssl.key.password": testcerts.Password,
		},
		"PEM one line, as a continued properties value": {
			"ssl.keystore.type":              "PEM",
			"ssl.keystore.certificate.chain": strings.ReplaceAll(b.Broker.CertPEM[:strings.Index(b.Broker.CertPEM, "-----END")+25], "\n", " "),
			"ssl.keystore.key":               strings.ReplaceAll(b.Broker.KeyPEM, "\n", " "),
		},
		"PKCS12": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": b.Broker.PKCS12, "ssl.keystore.password": testcerts.Password},
		"PKCS12 file under the default type JKS": {
			"ssl.keystore.location": b.Broker.PKCS12, "ssl.keystore.password": testcerts.Password,
			"ssl.key.password": testcerts.Password,
		},
		// Go's PKCS12 reader opens the key with the store password, whatever ssl.key.password says.
		"PKCS12 with another key password": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": b.Broker.PKCS12,
			"ssl.keystore.password": testcerts.Password, "ssl.key.password": "other"},
		"lower-case type": {"ssl.keystore.type": "pkcs12", "ssl.keystore.location": b.Broker.PKCS12, "ssl.keystore.password": testcerts.Password},
	} {
		t.Run(name, func(t *testing.T) {
			server := mustServer(t, props, "")
			if len(server.Certificates) != 1 || server.Certificates[0].Leaf.Subject.CommonName != "broker" {
				t.Fatalf("want the broker certificate, got %+v", server.Certificates)
			}
			handshake(t, server, client, "").ok(t)
			handshake(t, server, client, "broker1.example").ok(t)
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestKeyStoreErrors(t *testing.T) {
	b := certs(t)
	jks := filepath.Join(t.TempDir(), "broker.jks")
	if err := os.WriteFile(jks, append([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2}, make([]byte, 64)...), 0o600); err != nil {
		t.Fatal(err)
	}
	pem := pemServerProps(b)
	p12 := map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": b.Broker.PKCS12, "ssl.keystore.password": testcerts.Password}
	encrypted := merge(pem, "ssl.keystore.key", readFile(t, b.Broker.KeyEncrypted))
	for name, c := range map[string]struct {
		props map[string]string
		want  string
	}{
		"no key store":                {map[string]string{}, "no SSL key store configured"},
		"JKS file":                    {map[string]string{"ssl.keystore.location": jks, "ssl.keystore.password": "x"}, "JKS key stores are not supported; convert with keytool -importkeystore -deststoretype PKCS12"},
		"JKS file declared PKCS12":    {merge(p12, "ssl.keystore.location", jks), "JKS key stores are not supported"},
		"JCEKS type":                  {merge(p12, "ssl.keystore.type", "JCEKS"), "JCEKS key stores are not supported"},
		"other type":                  {merge(p12, "ssl.keystore.type", "BCFKS"), "unsupported key store type BCFKS"},
		"PKCS12 wrong password":       {merge(p12, "ssl.keystore.password", "nope"), "failed to load SSL key store"},
		"PKCS12 without password":     {merge(p12, "ssl.keystore.password", "<unset>"), "key store password (ssl.keystore.password) is not"},
		"PKCS12 other key password":   {merge(p12, "ssl.key.password", "other", "ssl.keystore.password", "nope"), "ssl.key.password different from ssl.keystore.password is not supported"},
		"PKCS12 missing file":         {merge(p12, "ssl.keystore.location", filepath.Join(t.TempDir(), "none.p12")), "no such file"},
		"password without location":   {map[string]string{"ssl.keystore.password": "x"}, "SSL key store is not specified, but key store password"},
		"inline key, type PKCS12":     {merge(pem, "ssl.keystore.type", "PKCS12"), "can be specified only for PEM, but key store type is PKCS12"},
		"inline key, default type":    {merge(pem, "ssl.keystore.type", "<unset>"), "key store type is JKS"},
		"inline key without chain":    {merge(pem, "ssl.keystore.certificate.chain", "<unset>"), "certificate chain (ssl.keystore.certificate.chain) is not"},
		"inline chain without key":    {merge(pem, "ssl.keystore.key", "<unset>"), "private key (ssl.keystore.key) is not"},
		"inline key and location":     {merge(pem, "ssl.keystore.location", b.Broker.KeyStorePEM), "both SSL key store location"},
		"inline key and store pass":   {merge(pem, "ssl.keystore.password", "x"), "only key password (ssl.key.password) may be specified"},
		"PEM file and store password": {map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": b.Broker.KeyStorePEM, "ssl.keystore.password": "x"}, "cannot be specified with PEM format"},
		"encrypted key, no password":  {encrypted, "the private key is encrypted, but no key password"},
		"encrypted key, bad password": {merge(encrypted, "ssl.key.password", "wrong"), "decrypting the private key"},
		"key of another certificate":  {merge(pem, "ssl.keystore.key", b.Alice.KeyPEM), "does not match the certificate"},
		"two keys":                    {merge(pem, "ssl.keystore.key", b.Alice.KeyPEM+b.Bob.KeyPEM), "expected one private key, but found 2"},
		"no key in the text":          {merge(pem, "ssl.keystore.key", "garbage"), "no matching PRIVATE KEY entries"},
		"no certificate in the text":  {merge(pem, "ssl.keystore.certificate.chain", "garbage"), "at least one certificate expected"},
		"legacy encrypted key": {merge(pem, "ssl.keystore.key", "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n\nAAAA\n-----END EC PRIVATE KEY-----\n"),
			"legacy OpenSSL format"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ServerConfig(c.props, "")
			wantErr(t, err, c.want)
			if name == "JKS file" && !errors.Is(err, ErrJKS) {
				t.Fatalf("%v does not wrap ErrJKS", err)
			}
		})
	}
}

func TestListenerPrefix(t *testing.T) {
	b := certs(t)
	props := map[string]string{
		"ssl.keystore.location":                            filepath.Join(t.TempDir(), "missing.p12"),
		"ssl.keystore.password":                            "x",
		"listener.name.secure.ssl.keystore.type":           "PKCS12",
		"listener.name.secure.ssl.keystore.location":       b.Broker.PKCS12,
		"listener.name.secure.ssl.keystore.password":       testcerts.Password,
		"listener.name.secure.ssl.client.auth":             "required",
		"listener.name.secure.ssl.truststore.type":         "PEM",
		"listener.name.secure.ssl.truststore.location":     b.CA,
		"listener.name.secure.ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/",
	}
	server := mustServer(t, props, "SECURE")
	if server.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("client auth %v", server.ClientAuth)
	}
	_, err := ServerConfig(props, "OTHER")
	wantErr(t, err, "listener OTHER")
	wantErr(t, err, "missing.p12")

	m, err := PrincipalMapperFor(props, "SECURE")
	if err != nil {
		t.Fatal(err)
	}
	client := b.ClientConfig(&b.Alice)
	r := handshake(t, server, client, "")
	r.ok(t)
	if p, err := m.Principal(r.server); err != nil || p != security.User("alice") {
		t.Fatalf("principal %v, %v", p, err)
	}
	def, err := PrincipalMapperFor(props, "OTHER")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := def.Principal(r.server); err != nil || p != security.User("CN=alice") {
		t.Fatalf("DEFAULT rule: principal %v, %v", p, err)
	}
	_, err = PrincipalMapperFor(map[string]string{"ssl.principal.mapping.rules": "DEFAULT/L"}, "x")
	wantErr(t, err, "invalid rule")
}

func TestClientAuth(t *testing.T) {
	b := certs(t)
	base := pemServerProps(b)
	anonymous := b.ClientConfig(nil)
	alice := b.ClientConfig(&b.Alice)
	mapper, err := NewPrincipalMapper("DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	principal := func(r result) security.Principal {
		t.Helper()
		p, err := mapper.Principal(r.server)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	required := mustServer(t, merge(base, "ssl.client.auth", "required"), "")
	handshake(t, required, anonymous, "").failed(t)
	r := handshake(t, required, alice, "")
	r.ok(t)
	if p := principal(r); p != security.User("CN=alice") {
		t.Fatalf("required: %v", p)
	}
	// A certificate from another CA is refused.
	other := certs(t)
	stranger := b.ClientConfig(&other.Bob)
	handshake(t, required, stranger, "").failed(t)

	requested := mustServer(t, merge(base, "ssl.client.auth", "REQUESTED"), "")
	r = handshake(t, requested, anonymous, "")
	r.ok(t)
	if p := principal(r); p != security.Anonymous {
		t.Fatalf("requested without certificate: %v", p)
	}
	r = handshake(t, requested, b.ClientConfig(&b.Bob), "")
	r.ok(t)
	if p := principal(r); p != security.User("CN=bob") {
		t.Fatalf("requested with certificate: %v", p)
	}
	handshake(t, requested, stranger, "").failed(t)

	none := mustServer(t, merge(base, "ssl.client.auth", "none"), "")
	r = handshake(t, none, alice, "")
	r.ok(t)
	if p := principal(r); p != security.Anonymous {
		t.Fatalf("none: %v", p)
	}
	_, err = ServerConfig(merge(base, "ssl.client.auth", "sometimes"), "")
	wantErr(t, err, "invalid ssl.client.auth")

	// SASL_SSL listeners take only the listener's own ssl.client.auth (Kafka's ChannelBuilders).
	sasl := merge(base, "ssl.client.auth", "required", "listener.security.protocol.map", "INTERNAL:SASL_SSL,EXTERNAL:SSL")
	if c := mustServer(t, sasl, "INTERNAL"); c.ClientAuth != tls.NoClientCert {
		t.Fatalf("SASL_SSL with broker-wide required: %v", c.ClientAuth)
	}
	if c := mustServer(t, sasl, "EXTERNAL"); c.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("SSL with broker-wide required: %v", c.ClientAuth)
	}
	if c := mustServer(t, merge(sasl, "listener.name.internal.ssl.client.auth", "requested"), "INTERNAL"); c.ClientAuth != tls.VerifyClientCertIfGiven {
		t.Fatalf("SASL_SSL with listener requested: %v", c.ClientAuth)
	}
	if c := mustServer(t, merge(base, "ssl.client.auth", "required"), "SASL_SSL"); c.ClientAuth != tls.NoClientCert {
		t.Fatalf("listener SASL_SSL under the default map: %v", c.ClientAuth)
	}
}

func TestTrustStores(t *testing.T) {
	b := certs(t)
	server := mustServer(t, pemServerProps(b), "")
	for name, props := range map[string]map[string]string{
		"PEM inline":      clientProps(b),
		"PEM file":        {"ssl.truststore.type": "PEM", "ssl.truststore.location": b.CA},
		"PKCS12":          {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": b.Truststore, "ssl.truststore.password": testcerts.Password},
		"PKCS12 as JKS":   {"ssl.truststore.location": b.Truststore, "ssl.truststore.password": testcerts.Password},
		"PKCS12 keystore": {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": b.Alice.PKCS12, "ssl.truststore.password": testcerts.Password},
	} {
		t.Run(name, func(t *testing.T) {
			handshake(t, server, mustClient(t, props), "").ok(t)
		})
	}
	t.Run("system roots", func(t *testing.T) {
		handshake(t, server, mustClient(t, map[string]string{}), "").failed(t)
	})
	for name, c := range map[string]struct {
		props map[string]string
		want  string
	}{
		"PEM certs, type PKCS12":    {merge(clientProps(b), "ssl.truststore.type", "PKCS12"), "can be specified only for PEM, but trust store type is PKCS12"},
		"PEM certs and location":    {merge(clientProps(b), "ssl.truststore.location", b.CA), "both SSL trust store location"},
		"PEM certs and password":    {merge(clientProps(b), "ssl.truststore.password", "x"), "cannot be specified for PEM format"},
		"PEM file and password":     {map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": b.CA, "ssl.truststore.password": "x"}, "cannot be specified for PEM format"},
		"password without location": {map[string]string{"ssl.truststore.password": "x"}, "SSL trust store is not specified, but trust store password"},
		"PKCS12 wrong password":     {map[string]string{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": b.Truststore, "ssl.truststore.password": "bad"}, "failed to load SSL trust store"},
		"PEM without certificates":  {map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": "nothing"}, "at least one certificate expected"},
		"PEM file is a key":         {map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": b.Alice.Key}, "at least one certificate expected"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ClientConfig(c.props, "")
			wantErr(t, err, c.want)
		})
	}
}

func TestEndpointIdentification(t *testing.T) {
	b := certs(t)
	server := mustServer(t, pemServerProps(b), "")
	https := mustClient(t, clientProps(b))
	handshake(t, server, https, "127.0.0.1").ok(t)
	handshake(t, server, https, "wrong.example").failed(t)

	chainOnly := mustClient(t, merge(clientProps(b), "ssl.endpoint.identification.algorithm", ""))
	handshake(t, server, chainOnly, "wrong.example").ok(t)
	// Without host name checks the chain is still verified.
	other := certs(t)
	handshake(t, mustServer(t, pemServerProps(other), ""), chainOnly, "").failed(t)

	_, err := ClientConfig(merge(clientProps(b), "ssl.endpoint.identification.algorithm", "ldaps"), "")
	wantErr(t, err, "unsupported ssl.endpoint.identification.algorithm")
}

func TestMutualTLSClientKeyStore(t *testing.T) {
	b := certs(t)
	server := mustServer(t, merge(pemServerProps(b), "ssl.client.auth", "required"), "")
	props := merge(clientProps(b), "ssl.keystore.type", "PKCS12", "ssl.keystore.location", b.Alice.PKCS12,
		"ssl.keystore.password", testcerts.Password)
	handshake(t, server, mustClient(t, props), "").ok(t)
	handshake(t, server, mustClient(t, clientProps(b)), "").failed(t)

	// Inter-broker side: the listener's prefixed key store is the broker's.
	inter := map[string]string{
		"listener.name.replication.ssl.keystore.type":           "PEM",
		"listener.name.replication.ssl.keystore.location":       b.Broker.KeyStorePEM,
		"listener.name.replication.ssl.truststore.type":         "PEM",
		"listener.name.replication.ssl.truststore.certificates": b.CAPEM,
	}
	cfg, err := ClientConfig(inter, "REPLICATION")
	if err != nil {
		t.Fatal(err)
	}
	r := handshake(t, server, cfg, "")
	r.ok(t)
	if len(r.server.PeerCertificates) == 0 || r.server.PeerCertificates[0].Subject.CommonName != "broker" {
		t.Fatalf("server saw %v", r.server.PeerCertificates)
	}
}

func TestProtocolsAndCipherSuites(t *testing.T) {
	b := certs(t)
	base := pemServerProps(b)
	client := mustClient(t, clientProps(b))

	def := mustServer(t, base, "")
	if def.MinVersion != tls.VersionTLS12 || def.MaxVersion != tls.VersionTLS13 {
		t.Fatalf("default versions %x-%x", def.MinVersion, def.MaxVersion)
	}
	r := handshake(t, def, client, "")
	r.ok(t)
	if r.server.Version != tls.VersionTLS13 {
		t.Fatalf("negotiated %x", r.server.Version)
	}

	only12 := mustServer(t, merge(base, "ssl.enabled.protocols", " TLSv1.2 "), "")
	r = handshake(t, only12, client, "")
	r.ok(t)
	if r.server.Version != tls.VersionTLS12 {
		t.Fatalf("TLSv1.2 only: negotiated %x", r.server.Version)
	}
	only13 := mustClient(t, merge(clientProps(b), "ssl.enabled.protocols", "TLSv1.3"))
	handshake(t, only12, only13, "").failed(t)

	// A Java client on an SSLContext of TLSv1.2 offers no TLSv1.3.
	c12 := mustClient(t, merge(clientProps(b), "ssl.protocol", "TLSv1.2"))
	if c12.MaxVersion != tls.VersionTLS12 {
		t.Fatalf("ssl.protocol=TLSv1.2 client max %x", c12.MaxVersion)
	}
	for _, p := range []string{"TLS", "SSL", "TLSv1.3"} {
		if c := mustClient(t, merge(clientProps(b), "ssl.protocol", p)); c.MaxVersion != tls.VersionTLS13 || c.MinVersion != tls.VersionTLS12 {
			t.Fatalf("ssl.protocol=%s client versions %x-%x", p, c.MinVersion, c.MaxVersion)
		}
	}
	_, err := ClientConfig(merge(clientProps(b), "ssl.protocol", "TLSv1.2", "ssl.enabled.protocols", "TLSv1.3"), "")
	wantErr(t, err, "leaves none")

	suite := mustServer(t, merge(base, "ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_EMPTY_RENEGOTIATION_INFO_SCSV"), "")
	if suite.MaxVersion != tls.VersionTLS12 || len(suite.CipherSuites) != 1 {
		t.Fatalf("TLS 1.2 suite only: max %x suites %v", suite.MaxVersion, suite.CipherSuites)
	}
	r = handshake(t, suite, client, "")
	r.ok(t)
	if r.server.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Fatalf("negotiated suite %x", r.server.CipherSuite)
	}
	if s := mustServer(t, merge(base, "ssl.cipher.suites", "TLS_AES_256_GCM_SHA384"), ""); s.MinVersion != tls.VersionTLS13 {
		t.Fatalf("TLS 1.3 suite only: min %x", s.MinVersion)
	}
	clientSuite := mustClient(t, merge(clientProps(b), "ssl.cipher.suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"))
	handshake(t, suite, clientSuite, "").failed(t) // no common suite for an ECDSA certificate

	for props, want := range map[string]string{
		"ssl.enabled.protocols=TLSv1.1":                                     "TLSv1.1 is not supported",
		"ssl.enabled.protocols=TLSv1.2,SSLv3":                               "SSLv3 is not supported",
		"ssl.enabled.protocols=TLSv9":                                       "unknown protocol",
		"ssl.protocol=SSLv3":                                                "ssl.protocol SSLv3 is not supported",
		"ssl.protocol=TLSv1.1":                                              "ssl.protocol TLSv1.1 is not supported",
		"ssl.protocol=DTLS":                                                 "unknown ssl.protocol",
		"ssl.cipher.suites=TLS_FANCY_NEW_CIPHER":                            "unsupported cipher suites TLS_FANCY_NEW_CIPHER",
		"ssl.cipher.suites=SSL_RSA_WITH_RC4_128_MD5,TLS_AES_128_GCM_SHA256": "SSL_RSA_WITH_RC4_128_MD5",
	} {
		k, v, _ := strings.Cut(props, "=")
		_, err := ServerConfig(merge(base, k, v), "")
		wantErr(t, err, want)
	}
	_, err = ServerConfig(merge(base, "ssl.enabled.protocols", "TLSv1.2", "ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"), "")
	wantErr(t, err, "names no suite usable")
}

// Keys encrypted by the openssl command line decrypt too (skipped without openssl).
func TestOpenSSLEncryptedKeys(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	b := certs(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-v2", "aes-256-cbc"},
		{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"},
		{"-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA512"},
		{"-v2", "des3"},
	} {
		out := filepath.Join(dir, strings.Join(args, "_")+".key")
		cmd := exec.Command(openssl, append([]string{"pkcs8", "-topk8", "-in", b.Broker.Key, "-out", out, "-passout", "pass:" + testcerts.Password}, args...)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Logf("openssl %v: %v %s (skipped)", args, err, msg)
			continue
		}
		props := merge(pemServerProps(b), "ssl.keystore.key", readFile(t, out), "ssl.key.password", testcerts.Password)
		if _, err := ServerConfig(props, ""); err != nil {
			t.Errorf("openssl %v: %v", args, err)
		}
	}
}

// The files scripts/gen-certs.sh writes with openssl (and keytool) load in every form.
func TestGenCertsScript(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "../../../scripts/gen-certs.sh", "-d", dir, "-p", "secret", "broker1.example")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-certs.sh: %v\n%s", err, out)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	trust := map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": f("ca.pem")}
	if _, err := os.Stat(f("truststore.p12")); err == nil {
		trust = map[string]string{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": f("truststore.p12"), "ssl.truststore.password": "secret"}
	}
	client := mustClient(t, merge(trust, "ssl.keystore.type", "PKCS12", "ssl.keystore.location", f("alice.p12"), "ssl.keystore.password", "secret"))
	mapper, err := NewPrincipalMapper("DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for name, props := range map[string]map[string]string{
		"PKCS12":        {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f("broker.p12"), "ssl.keystore.password": "secret"},
		"PEM file":      {"ssl.keystore.type": "PEM", "ssl.keystore.location": f("broker-keystore.pem")},
		"encrypted key": {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": readFile(t, f("broker.pem")), "ssl.keystore.key": readFile(t, f("broker-encrypted.key")), "ssl.key.password": "secret"},
	} {
		t.Run(name, func(t *testing.T) {
			server := mustServer(t, merge(props, "ssl.client.auth", "required", "ssl.truststore.type", "PEM", "ssl.truststore.location", f("ca.pem")), "")
			r := handshake(t, server, client, "broker1.example")
			r.ok(t)
			if p, err := mapper.Principal(r.server); err != nil || p != security.User("CN=alice") {
				t.Fatalf("principal %v, %v", p, err)
			}
		})
	}
}
