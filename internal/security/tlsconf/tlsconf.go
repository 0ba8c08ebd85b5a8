// Package tlsconf builds crypto/tls configurations from Kafka's ssl.* properties, as Kafka's
// DefaultSslEngineFactory builds SSLEngines from them: key stores and trust stores in PEM or
// PKCS12 form, the enabled protocols and cipher suites, client authentication on a broker
// listener and host name verification on the client side. It also maps a verified client
// certificate to a principal (SslPrincipalMapper).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// Property names, as Kafka's SslConfigs and BrokerSecurityConfigs spell them.
const (
	KeyProtocol                     = "ssl.protocol"
	KeyEnabledProtocols             = "ssl.enabled.protocols"
	KeyCipherSuites                 = "ssl.cipher.suites"
	KeyKeystoreType                 = "ssl.keystore.type"
	KeyKeystoreLocation             = "ssl.keystore.location"
	KeyKeystorePassword             = "ssl.keystore.password"
	KeyKeyPassword                  = "ssl.key.password"
	KeyKeystoreKey                  = "ssl.keystore.key"
	KeyKeystoreCertificateChain     = "ssl.keystore.certificate.chain"
	KeyTruststoreType               = "ssl.truststore.type"
	KeyTruststoreLocation           = "ssl.truststore.location"
	KeyTruststorePassword           = "ssl.truststore.password"
	KeyTruststoreCertificates       = "ssl.truststore.certificates"
	KeyEndpointIdentification       = "ssl.endpoint.identification.algorithm"
	KeyClientAuth                   = "ssl.client.auth"
	KeyPrincipalMappingRules        = "ssl.principal.mapping.rules"
	KeyListenerSecurityProtocolMap  = "listener.security.protocol.map"
	defaultProtocol                 = "TLSv1.3"
	defaultStoreType                = "JKS"
	defaultEndpointIdentification   = "https"
	defaultPrincipalMappingRules    = "DEFAULT"
	listenerPrefixFormat            = "listener.name.%s."
	protocolSASLSSL                 = "SASL_SSL"
	defaultSecurityProtocolMapValue = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)

// ListenerPrefix is the prefix of a listener's own settings: "listener.name.<lower-case name>.".
func ListenerPrefix(listenerName string) string {
	if listenerName == "" {
		return ""
	}
	return fmt.Sprintf(listenerPrefixFormat, strings.ToLower(listenerName))
}

// view reads a property with the listener's prefixed key winning over the plain one, as
// Kafka's KafkaConfig.valuesWithPrefixOverride does.
type view struct {
	props    map[string]string
	prefix   string
	listener string
}

func newView(props map[string]string, listenerName string) view {
	return view{props: props, prefix: ListenerPrefix(listenerName), listener: listenerName}
}

// get returns the value and whether the key is set at all.
func (v view) get(key string) (string, bool) {
	if v.prefix != "" {
		if s, ok := v.props[v.prefix+key]; ok {
			return s, true
		}
	}
	s, ok := v.props[key]
	return s, ok
}

// value returns the value with surrounding blanks removed, "" when unset.
func (v view) value(key string) string {
	s, _ := v.get(key)
	return strings.TrimSpace(s)
}

// secret returns a password or inline PEM value; an empty value counts as unset.
func (v view) secret(key string) (string, bool) {
	s, ok := v.get(key)
	if !ok || s == "" {
		return "", false
	}
	return s, true
}

// prefixedOnly reports whether the listener sets key under its own prefix.
func (v view) prefixedOnly(key string) bool {
	if v.prefix == "" {
		return false
	}
	_, ok := v.props[v.prefix+key]
	return ok
}

func (v view) errorf(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if v.listener != "" {
		return fmt.Errorf("listener %s: %s", v.listener, msg)
	}
	return errors.New(msg)
}

func (v view) wrap(err error) error {
	if v.listener != "" {
		return fmt.Errorf("listener %s: %w", v.listener, err)
	}
	return err
}

// ServerConfig builds a broker listener's tls.Config. Per-listener keys
// `listener.name.<lower-case listener>.ssl.*` override `ssl.*`. The listener needs a key store;
// the trust store (system roots when unset) verifies client certificates when ssl.client.auth
// asks for them. On a SASL_SSL listener only the listener-prefixed ssl.client.auth counts, as in
// Kafka's ChannelBuilders (the broker-wide value applies to SSL listeners only).
func ServerConfig(props map[string]string, listenerName string) (*tls.Config, error) {
	v := newView(props, listenerName)
	cfg := &tls.Config{}
	if err := applyProtocols(v, cfg, false); err != nil {
		return nil, err
	}
	cert, err := loadKeyStore(v)
	if err != nil {
		return nil, v.wrap(err)
	}
	if cert == nil {
		return nil, v.errorf("no SSL key store configured: set %s (with %s and %s) or %s and %s, optionally prefixed by %s",
			KeyKeystoreLocation, KeyKeystoreType, KeyKeystorePassword, KeyKeystoreCertificateChain, KeyKeystoreKey,
			ListenerPrefix(listenerNameOr(listenerName)))
	}
	cfg.Certificates = []tls.Certificate{*cert}
	pool, err := loadTrustStore(v)
	if err != nil {
		return nil, v.wrap(err)
	}
	cfg.ClientCAs = pool
	auth, err := clientAuth(v, props, listenerName)
	if err != nil {
		return nil, err
	}
	cfg.ClientAuth = auth
	return cfg, nil
}

func listenerNameOr(name string) string {
	if name == "" {
		return "<listener>"
	}
	return name
}

// ClientConfig builds the client side: inter-broker connections (listenerName = the
// inter-broker listener, so its prefixed keys count) and tools (listenerName ""). The trust
// store verifies the server (system roots when unset), the optional key store answers a
// server asking for a client certificate, and ssl.endpoint.identification.algorithm "https"
// (the default) checks the server's host name while "" checks only the certificate chain.
// ServerName is left empty: the dialer sets it per broker address.
func ClientConfig(props map[string]string, listenerName string) (*tls.Config, error) {
	v := newView(props, listenerName)
	cfg := &tls.Config{}
	if err := applyProtocols(v, cfg, true); err != nil {
		return nil, err
	}
	cert, err := loadKeyStore(v)
	if err != nil {
		return nil, v.wrap(err)
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	pool, err := loadTrustStore(v)
	if err != nil {
		return nil, v.wrap(err)
	}
	cfg.RootCAs = pool
	alg := defaultEndpointIdentification
	if s, ok := v.get(KeyEndpointIdentification); ok {
		alg = strings.TrimSpace(s)
	}
	switch strings.ToLower(alg) {
	case "https":
	case "":
		// Verify the chain against the trust store but not the host name, as a Java
		// client does with endpoint identification switched off.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChainOnly(cs, pool)
		}
	default:
		return nil, v.errorf("unsupported %s %q: only \"https\" and \"\" are supported", KeyEndpointIdentification, alg)
	}
	return cfg, nil
}

func verifyChainOnly(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tls: verifying the server certificate chain: %w", err)
	}
	return nil
}

// clientAuth reads ssl.client.auth (none, requested, required; Kafka's SslClientAuth).
func clientAuth(v view, props map[string]string, listenerName string) (tls.ClientAuthType, error) {
	if listenerProtocol(props, listenerName) == protocolSASLSSL && !v.prefixedOnly(KeyClientAuth) {
		return tls.NoClientCert, nil
	}
	s := v.value(KeyClientAuth)
	switch strings.ToLower(s) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, v.errorf("invalid %s %q: expected none, requested or required", KeyClientAuth, s)
}

// listenerProtocol finds a listener's security protocol in listener.security.protocol.map
// (Kafka's default map names each protocol after itself).
func listenerProtocol(props map[string]string, listenerName string) string {
	if listenerName == "" {
		return ""
	}
	m, ok := props[KeyListenerSecurityProtocolMap]
	if !ok || strings.TrimSpace(m) == "" {
		m = defaultSecurityProtocolMapValue
	}
	for _, entry := range strings.Split(m, ",") {
		name, proto, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), listenerName) {
			return strings.ToUpper(strings.TrimSpace(proto))
		}
	}
	return ""
}

// PrincipalMapperFor builds the mapper of a listener from ssl.principal.mapping.rules
// (listener-prefixed first; Kafka's default "DEFAULT" when unset).
func PrincipalMapperFor(props map[string]string, listenerName string) (*PrincipalMapper, error) {
	v := newView(props, listenerName)
	rules, ok := v.get(KeyPrincipalMappingRules)
	if !ok {
		rules = defaultPrincipalMappingRules
	}
	m, err := NewPrincipalMapper(rules)
	if err != nil {
		return nil, v.wrap(fmt.Errorf("%s: %w", KeyPrincipalMappingRules, err))
	}
	return m, nil
}

var protocolVersions = map[string]uint16{
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// olderProtocols are names Java knows but samsa refuses: Go's crypto/tls (and current JDKs)
// no longer negotiate them safely.
var olderProtocols = map[string]bool{"SSLv2": true, "SSLv3": true, "TLSv1": true, "TLSv1.1": true, "SSLv2Hello": true}

// applyProtocols reads ssl.protocol, ssl.enabled.protocols and ssl.cipher.suites.
func applyProtocols(v view, cfg *tls.Config, client bool) error {
	proto := defaultProtocol
	if s, ok := v.get(KeyProtocol); ok && strings.TrimSpace(s) != "" {
		proto = strings.TrimSpace(s)
	}
	protoMax := uint16(tls.VersionTLS13)
	switch {
	case proto == "TLS" || proto == "SSL" || proto == "TLSv1.3":
		// Java's "TLS" and "SSL" contexts both speak every TLS version the JDK enables.
	case proto == "TLSv1.2":
		protoMax = tls.VersionTLS12
	case olderProtocols[proto]:
		return v.errorf("%s %s is not supported: samsa speaks TLSv1.2 and TLSv1.3 only", KeyProtocol, proto)
	default:
		return v.errorf("unknown %s %q: expected TLSv1.2, TLSv1.3 or TLS", KeyProtocol, proto)
	}

	minV, maxV := uint16(tls.VersionTLS12), uint16(tls.VersionTLS13)
	if list := splitList(v.value(KeyEnabledProtocols)); len(list) > 0 {
		minV, maxV = 0, 0
		for _, p := range list {
			ver, ok := protocolVersions[p]
			if !ok {
				if olderProtocols[p] {
					return v.errorf("%s: %s is not supported: samsa speaks TLSv1.2 and TLSv1.3 only", KeyEnabledProtocols, p)
				}
				return v.errorf("%s: unknown protocol %q: expected TLSv1.2 or TLSv1.3", KeyEnabledProtocols, p)
			}
			if minV == 0 || ver < minV {
				minV = ver
			}
			if ver > maxV {
				maxV = ver
			}
		}
	}
	// A Java client whose SSLContext is TLSv1.2 never offers TLSv1.3, whatever the enabled list.
	if client && maxV > protoMax {
		maxV = protoMax
		if minV > maxV {
			return v.errorf("%s %s leaves none of %s enabled", KeyProtocol, proto, KeyEnabledProtocols)
		}
	}

	if list := splitList(v.value(KeyCipherSuites)); len(list) > 0 {
		suites, has12, has13, err := cipherSuites(list)
		if err != nil {
			return v.wrap(err)
		}
		// Go always enables all TLS 1.3 suites; a list naming none of them means TLS 1.3
		// cannot be negotiated (as in Java), one naming only TLS 1.3 suites rules out TLS 1.2.
		if !has13 && maxV == tls.VersionTLS13 {
			maxV = tls.VersionTLS12
		}
		if !has12 && minV == tls.VersionTLS12 {
			minV = tls.VersionTLS13
		}
		if minV > maxV {
			return v.errorf("%s names no suite usable with %s", KeyCipherSuites, KeyEnabledProtocols)
		}
		cfg.CipherSuites = suites
	}
	cfg.MinVersion, cfg.MaxVersion = minV, maxV
	return nil
}

var tls13Suites = map[string]bool{
	"TLS_AES_128_GCM_SHA256":       true,
	"TLS_AES_256_GCM_SHA384":       true,
	"TLS_CHACHA20_POLY1305_SHA256": true,
}

// cipherSuites maps Java's cipher suite names (the IANA names) to Go's suite IDs.
func cipherSuites(names []string) (ids []uint16, has12, has13 bool, err error) {
	byName := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		byName[s.Name] = s.ID
	}
	for _, s := range tls.InsecureCipherSuites() {
		byName[s.Name] = s.ID
	}
	var unknown []string
	for _, n := range names {
		switch {
		case tls13Suites[n]:
			has13 = true
		case n == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV":
			// A signalling value, not a suite; Go always sends the renegotiation extension.
		default:
			id, ok := byName[n]
			if !ok {
				unknown = append(unknown, n)
				continue
			}
			if tls13OnlyID(id) {
				has13 = true
				continue
			}
			has12 = true
			ids = append(ids, id)
		}
	}
	if len(unknown) > 0 {
		return nil, false, false, fmt.Errorf("%s: unsupported cipher suites %s", KeyCipherSuites, strings.Join(unknown, ", "))
	}
	return ids, has12, has13, nil
}

func tls13OnlyID(id uint16) bool {
	return id == tls.TLS_AES_128_GCM_SHA256 || id == tls.TLS_AES_256_GCM_SHA384 || id == tls.TLS_CHACHA20_POLY1305_SHA256
}

// splitList splits a Kafka LIST value: comma-separated, blanks trimmed, empty items dropped.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
