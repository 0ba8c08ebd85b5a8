// Package testcerts writes a throw-away certificate authority with a broker certificate and
// two client certificates (CN=alice, CN=bob) for tests of TLS listeners: PEM files, PKCS12
// key stores and a PKCS12 trust store, all protected by Password where a password applies.
// scripts/gen-certs.sh makes the same set with openssl for a secured example cluster.
package testcerts

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// Password protects every PKCS12 file and the encrypted PEM keys.
const Password = "test-pass"

// Identity is one certificate with its key in every form the stores accept.
type Identity struct {
	Subject      string // RFC 2253 form, as a broker maps it with the DEFAULT rule
	Cert         string // PEM file: the certificate followed by the CA certificate
	Key          string // PEM file: unencrypted PKCS#8 key
	KeyEncrypted string // PEM file: PKCS#8 key encrypted (PBES2, AES-256-CBC) with Password
	KeyStorePEM  string // PEM file: key and chain together (ssl.keystore.type=PEM with a location)
	PKCS12       string // PKCS12 key store, password Password
	CertPEM      string // contents of Cert
	KeyPEM       string // contents of Key
	TLS          tls.Certificate
}

// Bundle lists what Generate wrote.
type Bundle struct {
	Dir        string
	Password   string
	CA         string // PEM file with the CA certificate (a PEM trust store)
	CAPEM      string // contents of CA
	Truststore string // PKCS12 trust store (trusted-certificate entry, as keytool writes), password Password
	Pool       *x509.CertPool
	Broker     Identity // SAN 127.0.0.1, ::1, localhost and the hosts given
	Alice      Identity // CN=alice
	Bob        Identity // CN=bob
}

// Generate writes the set to dir. The broker's certificate names 127.0.0.1, ::1, localhost
// and hosts (IP addresses or DNS names).
func Generate(dir string, hosts []string) (*Bundle, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testcerts: %w", err)
	}
	b := &Bundle{Dir: dir, Password: Password, Pool: x509.NewCertPool()}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testcerts: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "samsa-test-ca", Organization: []string{"samsa"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("testcerts: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("testcerts: %w", err)
	}
	b.Pool.AddCert(ca)
	b.CAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	b.CA = filepath.Join(dir, "ca.pem")
	if err := write(b.CA, b.CAPEM); err != nil {
		return nil, err
	}
	if err := write(filepath.Join(dir, "ca.key"), pemKey(caKey)); err != nil {
		return nil, err
	}
	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca}, Password)
	if err != nil {
		return nil, fmt.Errorf("testcerts: trust store: %w", err)
	}
	b.Truststore = filepath.Join(dir, "truststore.p12")
	if err := write(b.Truststore, string(trust)); err != nil {
		return nil, err
	}

	brokerTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "broker", OrganizationalUnit: []string{"samsa"}},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			brokerTmpl.IPAddresses = append(brokerTmpl.IPAddresses, ip)
		} else if h != "" {
			brokerTmpl.DNSNames = append(brokerTmpl.DNSNames, h)
		}
	}
	if b.Broker, err = issue(dir, "broker", brokerTmpl, ca, caKey, now); err != nil {
		return nil, err
	}
	b.Broker.Subject = "CN=broker,OU=samsa"
	for i, name := range []string{"alice", "bob"} {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(3 + i)),
			Subject:      pkix.Name{CommonName: name},
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		id, err := issue(dir, name, tmpl, ca, caKey, now)
		if err != nil {
			return nil, err
		}
		id.Subject = "CN=" + name
		if name == "alice" {
			b.Alice = id
		} else {
			b.Bob = id
		}
	}
	return b, nil
}

// ClientConfig is a client tls.Config trusting the CA, presenting id's certificate when id
// is not nil.
func (b *Bundle) ClientConfig(id *Identity) *tls.Config {
	cfg := &tls.Config{RootCAs: b.Pool, MinVersion: tls.VersionTLS12}
	if id != nil {
		cfg.Certificates = []tls.Certificate{id.TLS}
	}
	return cfg
}

func issue(dir, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) (Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Identity{}, fmt.Errorf("testcerts: %s key: %w", name, err)
	}
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return Identity{}, fmt.Errorf("testcerts: %s certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Identity{}, fmt.Errorf("testcerts: %w", err)
	}
	id := Identity{
		Cert:         filepath.Join(dir, name+".pem"),
		Key:          filepath.Join(dir, name+".key"),
		KeyEncrypted: filepath.Join(dir, name+"-encrypted.key"),
		KeyStorePEM:  filepath.Join(dir, name+"-keystore.pem"),
		PKCS12:       filepath.Join(dir, name+".p12"),
		TLS:          tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key, Leaf: cert},
	}
	id.CertPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	id.KeyPEM = pemKey(key)
	encrypted, err := encryptedPEMKey(key, Password)
	if err != nil {
		return Identity{}, err
	}
	p12, err := pkcs12.Modern.Encode(key, cert, []*x509.Certificate{ca}, Password)
	if err != nil {
		return Identity{}, fmt.Errorf("testcerts: %s PKCS12: %w", name, err)
	}
	for path, data := range map[string]string{
		id.Cert:         id.CertPEM,
		id.Key:          id.KeyPEM,
		id.KeyEncrypted: encrypted,
		id.KeyStorePEM:  id.KeyPEM + id.CertPEM,
		id.PKCS12:       string(p12),
	} {
		if err := write(path, data); err != nil {
			return Identity{}, err
		}
	}
	return id, nil
}

func pemKey(key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err) // an ECDSA P-256 key always marshals
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// encryptedPEMKey writes the key as `openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256`
// does: an EncryptedPrivateKeyInfo with PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC).
func encryptedPEMKey(key *ecdsa.PrivateKey, password string) (string, error) {
	plain, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	salt := make([]byte, 16)
	iv := make([]byte, aes.BlockSize)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	if _, err := rand.Read(iv); err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	const iterations = 2048
	k, err := pbkdf2.Key(sha256.New, password, salt, iterations, 32)
	if err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	for i := 0; i < pad; i++ {
		plain = append(plain, byte(pad))
	}
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)

	type algorithm struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.RawValue
	}
	raw := func(v any) (asn1.RawValue, error) {
		der, err := asn1.Marshal(v)
		if err != nil {
			return asn1.RawValue{}, err
		}
		return asn1.RawValue{FullBytes: der}, nil
	}
	kdfParams, err := raw(struct {
		Salt       []byte
		Iterations int
		PRF        algorithm
	}{salt, iterations, algorithm{asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, asn1.NullRawValue}})
	if err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	ivParam, err := raw(iv)
	if err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	pbes2, err := raw(struct {
		KDF    algorithm
		Scheme algorithm
	}{
		algorithm{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}, kdfParams},
		algorithm{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, ivParam},
	})
	if err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	der, err := asn1.Marshal(struct {
		Algorithm algorithm
		Data      []byte
	}{algorithm{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}, pbes2}, enc})
	if err != nil {
		return "", fmt.Errorf("testcerts: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})), nil
}

func write(path, data string) error {
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return fmt.Errorf("testcerts: %w", err)
	}
	return nil
}
