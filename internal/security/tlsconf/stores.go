package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

const (
	storePEM    = "PEM"
	storePKCS12 = "PKCS12"
	storeJKS    = "JKS"
)

// ErrJKS is returned for Java KeyStore files, which Go cannot read.
var ErrJKS = errors.New("JKS key stores are not supported; convert with keytool -importkeystore -deststoretype PKCS12")

// loadKeyStore builds the certificate (chain and private key) from ssl.keystore.*, with
// the same combinations allowed and refused as DefaultSslEngineFactory.createKeystore.
// It returns nil, nil when no key store is configured.
func loadKeyStore(v view) (*tls.Certificate, error) {
	typ := storeType(v, KeyKeystoreType)
	location := v.value(KeyKeystoreLocation)
	password, hasPassword := v.secret(KeyKeystorePassword)
	keyPassword, hasKeyPassword := v.secret(KeyKeyPassword)
	inlineKey, hasInlineKey := v.secret(KeyKeystoreKey)
	inlineChain, hasInlineChain := v.secret(KeyKeystoreCertificateChain)

	switch {
	case hasInlineKey:
		switch {
		case typ != storePEM:
			return nil, fmt.Errorf("SSL private key (%s) can be specified only for PEM, but key store type is %s", KeyKeystoreKey, typ)
		case !hasInlineChain:
			return nil, fmt.Errorf("SSL private key (%s) is specified, but certificate chain (%s) is not", KeyKeystoreKey, KeyKeystoreCertificateChain)
		case location != "":
			return nil, fmt.Errorf("both SSL key store location (%s) and separate private key (%s) are specified", KeyKeystoreLocation, KeyKeystoreKey)
		case hasPassword:
			return nil, fmt.Errorf("SSL key store password (%s) cannot be specified with PEM format, only key password (%s) may be specified", KeyKeystorePassword, KeyKeyPassword)
		}
		cert, err := pemKeyStore(inlineChain, inlineKey, keyPassword, hasKeyPassword)
		if err != nil {
			return nil, fmt.Errorf("invalid PEM key store configs: %w", err)
		}
		return cert, nil
	case hasInlineChain:
		return nil, fmt.Errorf("SSL certificate chain (%s) is specified, but private key (%s) is not", KeyKeystoreCertificateChain, KeyKeystoreKey)
	case typ == storePEM && location != "":
		if hasPassword {
			return nil, fmt.Errorf("SSL key store password (%s) cannot be specified with PEM format, only key password (%s) may be specified", KeyKeystorePassword, KeyKeyPassword)
		}
		data, err := os.ReadFile(location)
		if err != nil {
			return nil, fmt.Errorf("failed to load PEM SSL key store %s: %w", location, err)
		}
		cert, err := pemKeyStore(string(data), string(data), keyPassword, hasKeyPassword)
		if err != nil {
			return nil, fmt.Errorf("failed to load PEM SSL key store %s: %w", location, err)
		}
		return cert, nil
	case location == "" && hasPassword:
		return nil, fmt.Errorf("SSL key store is not specified, but key store password (%s) is specified", KeyKeystorePassword)
	case location != "" && !hasPassword:
		return nil, fmt.Errorf("SSL key store %s is specified, but key store password (%s) is not", location, KeyKeystorePassword)
	case location != "":
		data, err := readStore(typ, location)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", KeyKeystoreType, KeyKeystoreLocation, err)
		}
		key, leaf, chain, err := pkcs12.DecodeChain(data, password)
		if err != nil && hasKeyPassword && keyPassword != password {
			// Go's PKCS12 reader uses one password for the store and the key.
			return nil, fmt.Errorf("failed to load SSL key store %s of type %s: %w (a %s different from %s is not supported for PKCS12 key stores)",
				location, typ, err, KeyKeyPassword, KeyKeystorePassword)
		}
		if err != nil {
			return nil, fmt.Errorf("failed to load SSL key store %s of type %s: %w", location, typ, err)
		}
		return buildCertificate(key, append([]*x509.Certificate{leaf}, chain...))
	}
	return nil, nil
}

// loadTrustStore builds the pool of trusted certificates from ssl.truststore.*, as
// DefaultSslEngineFactory.createTruststore. It returns nil, nil when none is configured, which
// means the system's roots (Java: the JVM's cacerts).
func loadTrustStore(v view) (*x509.CertPool, error) {
	typ := storeType(v, KeyTruststoreType)
	location := v.value(KeyTruststoreLocation)
	password, hasPassword := v.secret(KeyTruststorePassword)
	inline, hasInline := v.secret(KeyTruststoreCertificates)

	var certs []*x509.Certificate
	switch {
	case hasInline:
		switch {
		case typ != storePEM:
			return nil, fmt.Errorf("SSL trust store certs (%s) can be specified only for PEM, but trust store type is %s", KeyTruststoreCertificates, typ)
		case location != "":
			return nil, fmt.Errorf("both SSL trust store location (%s) and separate trust certificates (%s) are specified", KeyTruststoreLocation, KeyTruststoreCertificates)
		case hasPassword:
			return nil, fmt.Errorf("SSL trust store password (%s) cannot be specified for PEM format", KeyTruststorePassword)
		}
		var err error
		if certs, err = pemCertificates(inline); err != nil {
			return nil, fmt.Errorf("invalid PEM trust store configs: %w", err)
		}
	case typ == storePEM && location != "":
		if hasPassword {
			return nil, fmt.Errorf("SSL trust store password (%s) cannot be specified for PEM format", KeyTruststorePassword)
		}
		data, err := os.ReadFile(location)
		if err != nil {
			return nil, fmt.Errorf("failed to load PEM SSL trust store %s: %w", location, err)
		}
		if certs, err = pemCertificates(string(data)); err != nil {
			return nil, fmt.Errorf("failed to load PEM SSL trust store %s: %w", location, err)
		}
	case location == "" && hasPassword:
		return nil, fmt.Errorf("SSL trust store is not specified, but trust store password (%s) is specified", KeyTruststorePassword)
	case location != "":
		data, err := readStore(typ, location)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", KeyTruststoreType, KeyTruststoreLocation, err)
		}
		if certs, err = pkcs12TrustedCerts(data, password); err != nil {
			return nil, fmt.Errorf("failed to load SSL trust store %s of type %s: %w", location, typ, err)
		}
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pkcs12TrustedCerts reads the certificates a Java trust manager would trust in a PKCS12
// file: trusted-certificate entries (keytool's), or, for a store holding a key entry, its
// certificates.
func pkcs12TrustedCerts(data []byte, password string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err == nil {
		if len(certs) == 0 {
			return nil, errors.New("the trust store holds no certificates")
		}
		return certs, nil
	}
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, err
	}
	_, leaf, chain, err2 := pkcs12.DecodeChain(data, password)
	if err2 != nil {
		return nil, err
	}
	return append([]*x509.Certificate{leaf}, chain...), nil
}

// storeType reads a store type; Kafka's default is JKS. Java's KeyStore types are
// case-insensitive.
func storeType(v view, key string) string {
	t := strings.ToUpper(v.value(key))
	if t == "" {
		return defaultStoreType
	}
	return t
}

var (
	jksMagic   = []byte{0xfe, 0xed, 0xfe, 0xed}
	jceksMagic = []byte{0xce, 0xce, 0xce, 0xce}
)

// readStore reads a PKCS12 store file. A store declared JKS (Kafka's default type) is read
// as PKCS12 when the file is one, as Java's JKS key store type does in its compatibility
// mode; a real JKS or JCEKS file is refused with a way out.
func readStore(typ, location string) ([]byte, error) {
	switch typ {
	case storePKCS12, storeJKS:
	case "JCEKS":
		return nil, fmt.Errorf("key store %s: JCEKS key stores are not supported; convert with keytool -importkeystore -deststoretype PKCS12", location)
	default:
		return nil, fmt.Errorf("key store %s: unsupported key store type %s: samsa reads PEM and PKCS12", location, typ)
	}
	data, err := os.ReadFile(location)
	if err != nil {
		return nil, fmt.Errorf("failed to load SSL key store %s of type %s: %w", location, typ, err)
	}
	switch {
	case bytes.HasPrefix(data, jksMagic):
		return nil, fmt.Errorf("key store %s: %w", location, ErrJKS)
	case bytes.HasPrefix(data, jceksMagic):
		return nil, fmt.Errorf("key store %s: JCEKS key stores are not supported; convert with keytool -importkeystore -deststoretype PKCS12", location)
	case typ == storeJKS && (len(data) == 0 || data[0] != 0x30):
		return nil, fmt.Errorf("key store %s (type JKS, Kafka's default): %w", location, ErrJKS)
	}
	return data, nil
}

// pemEntry is one PEM entry found the way Kafka's PemParser finds it.
type pemEntry struct {
	label   string // words before the name, e.g. "ENCRYPTED " or "RSA "
	headers string
	der     []byte
}

// pemPattern mirrors DefaultSslEngineFactory.PemParser: it tolerates text around entries,
// and PEM written on one line (as a properties value continued with backslashes reads).
func pemPattern(name string) *regexp.Regexp {
	nameRe := strings.ReplaceAll(name, " ", `\s+`)
	return regexp.MustCompile(`-+BEGIN\s*(.*)` + nameRe + `[^-]*-+\s+` +
		`((?:\s*[^\r\n]*:[^\r\n]*[\r\n]+)*)` +
		`([a-zA-Z0-9/+=\s]*)` +
		`-+END\s*.*` + nameRe + `[^-]*-+\s+`)
}

var (
	certificatePattern = pemPattern("CERTIFICATE")
	privateKeyPattern  = pemPattern("PRIVATE KEY")
	spaces             = regexp.MustCompile(`\s`)
)

func pemEntries(re *regexp.Regexp, name, text string) ([]pemEntry, error) {
	var out []pemEntry
	for _, m := range re.FindAllStringSubmatch(text+"\n", -1) {
		der, err := base64.StdEncoding.DecodeString(spaces.ReplaceAllString(m[3], ""))
		if err != nil {
			return nil, fmt.Errorf("invalid base64 in a PEM %s entry: %w", name, err)
		}
		out = append(out, pemEntry{label: strings.TrimSpace(m[1]), headers: m[2], der: der})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no matching %s entries in PEM", name)
	}
	return out, nil
}

func pemCertificates(text string) ([]*x509.Certificate, error) {
	entries, err := pemEntries(certificatePattern, "CERTIFICATE", text)
	if err != nil {
		return nil, fmt.Errorf("at least one certificate expected: %w", err)
	}
	certs := make([]*x509.Certificate, 0, len(entries))
	for i, e := range entries {
		c, err := x509.ParseCertificate(e.der)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i+1, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// pemKeyStore reads a certificate chain and one private key (PKCS#8, encrypted PKCS#8 with
// the key password; unencrypted PKCS#1 and SEC 1 keys are accepted too).
func pemKeyStore(chainText, keyText, keyPassword string, hasKeyPassword bool) (*tls.Certificate, error) {
	keys, err := pemEntries(privateKeyPattern, "PRIVATE KEY", keyText)
	if err != nil {
		return nil, fmt.Errorf("private key not provided: %w", err)
	}
	if len(keys) != 1 {
		return nil, fmt.Errorf("expected one private key, but found %d", len(keys))
	}
	key, err := parsePrivateKey(keys[0], keyPassword, hasKeyPassword)
	if err != nil {
		return nil, err
	}
	chain, err := pemCertificates(chainText)
	if err != nil {
		return nil, err
	}
	return buildCertificate(key, chain)
}

func parsePrivateKey(e pemEntry, password string, hasPassword bool) (crypto.PrivateKey, error) {
	if strings.Contains(e.headers, "DEK-Info") {
		return nil, fmt.Errorf("the private key is encrypted in the legacy OpenSSL format, which Kafka does not read either; convert it with openssl pkcs8 -topk8 -v2 aes-256-cbc")
	}
	encrypted := strings.Contains(strings.ToUpper(e.label), "ENCRYPTED")
	if encrypted && !hasPassword {
		return nil, fmt.Errorf("the private key is encrypted, but no key password (%s) is set", KeyKeyPassword)
	}
	der := e.der
	if encrypted || hasPassword {
		plain, err := decryptPKCS8(der, password)
		switch {
		case err == nil:
			der = plain
		case encrypted:
			return nil, fmt.Errorf("decrypting the private key: %w", err)
		}
	}
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	} else if k1, err1 := x509.ParsePKCS1PrivateKey(der); err1 == nil {
		return k1, nil
	} else if k2, err2 := x509.ParseECPrivateKey(der); err2 == nil {
		return k2, nil
	} else {
		return nil, fmt.Errorf("private key could not be loaded: %w", err)
	}
}

// buildCertificate checks that the key belongs to the first certificate of the chain.
func buildCertificate(key crypto.PrivateKey, chain []*x509.Certificate) (*tls.Certificate, error) {
	if len(chain) == 0 || chain[0] == nil {
		return nil, errors.New("the key store holds no certificate")
	}
	leaf := chain[0]
	type publicKeyer interface{ Public() crypto.PublicKey }
	pk, ok := key.(publicKeyer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	same := false
	switch pub := pk.Public().(type) {
	case *rsa.PublicKey:
		same = pub.Equal(leaf.PublicKey)
	case *ecdsa.PublicKey:
		same = pub.Equal(leaf.PublicKey)
	case ed25519.PublicKey:
		same = pub.Equal(leaf.PublicKey)
	default:
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	if !same {
		return nil, fmt.Errorf("the private key does not match the certificate of %s", leaf.Subject)
	}
	cert := &tls.Certificate{PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}
