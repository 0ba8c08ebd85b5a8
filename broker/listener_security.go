package broker

// listener_security.go builds what KafkaServer hands its SocketServer and NetworkClients for
// security: each listener's TLS configuration, principal mapping and SASL server
// (ChannelBuilders.create for the server side), and the client side of the inter-broker
// listener every broker-to-broker connection dials with.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
)

// listenerSecurities builds each listener's security from the broker properties, as
// Kafka's ChannelBuilders.serverChannelBuilder does per listener: TLS from the
// listener-prefixed or plain ssl.* keys (tlsconf), the principal mapping rules on SSL
// listeners, and on SASL listeners the enabled mechanisms with their JAAS entries and the
// SCRAM credential cache. PLAINTEXT listeners get nil.
func (b *Broker) listenerSecurities() (map[string]*ListenerSecurity, error) {
	props := b.cfg.Props
	out := make(map[string]*ListenerSecurity, len(b.cfg.Listeners))
	reloaders := make(map[string]*serverTLSReloader)
	for _, l := range b.cfg.Listeners {
		proto := l.SecurityProtocol
		if proto == "" || proto == ProtocolPlaintext {
			continue
		}
		ls := &ListenerSecurity{
			Protocol:        proto,
			ReauthMax:       listenerMs(props, l.Name, "connections.max.reauth.ms", 0),
			FailedAuthDelay: listenerMs(props, l.Name, "connection.failed.authentication.delay.ms", 100),
		}
		if proto == ProtocolSSL || proto == ProtocolSASLSSL {
			cfg, err := tlsconf.ServerConfig(props, l.Name)
			if err != nil {
				return nil, listenerError(l, err)
			}
			// Served through GetConfigForClient so a dynamic key store update applies to
			// new handshakes while open connections keep theirs.
			r := newServerTLSReloader(l.Name, cfg, props)
			reloaders[l.Name] = r
			ls.TLS = r.serverConfig()
			if proto == ProtocolSSL {
				// The certificate names the principal only on SSL; on SASL_SSL SASL does.
				m, err := tlsconf.PrincipalMapperFor(props, l.Name)
				if err != nil {
					return nil, listenerError(l, err)
				}
				r.mapsPrincipals = true
				r.principals.Store(m)
				ls.livePrincipals = &r.principals
			}
		}
		if proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL {
			srv, err := b.saslServer(l.Name)
			if err != nil {
				return nil, listenerError(l, err)
			}
			// Held behind a pointer so a dynamic JAAS or mechanism change can swap it.
			ls.liveSASL = new(atomic.Pointer[sasl.Server])
			ls.liveSASL.Store(srv)
		}
		if err := ls.Validate(); err != nil {
			return nil, listenerError(l, err)
		}
		out[l.Name] = ls
	}
	b.tlsReloaders = reloaders
	return out, nil
}

// sslReconfigurableKeys are SslConfigs.RECONFIGURABLE_CONFIGS: the key and trust store
// settings a listener's SslFactory reloads.
var sslReconfigurableKeys = []string{
	tlsconf.KeyKeystoreType, tlsconf.KeyKeystoreLocation, tlsconf.KeyKeystorePassword, tlsconf.KeyKeyPassword,
	tlsconf.KeyTruststoreType, tlsconf.KeyTruststoreLocation, tlsconf.KeyTruststorePassword,
	tlsconf.KeyKeystoreCertificateChain, tlsconf.KeyKeystoreKey, tlsconf.KeyTruststoreCertificates,
}

// sslListenerKeys are the other ssl.* settings of a listener that apply live, by rebuilding
// its server configuration (and principal mapper) for new handshakes, as Kafka's
// DynamicListenerConfig rebuilds the listener's channel builder. Only the listener-prefixed
// form is dynamic: broker-wide security configs are ignored in dynamic updates.
var sslListenerKeys = []string{
	tlsconf.KeyClientAuth, tlsconf.KeyEnabledProtocols, tlsconf.KeyCipherSuites, tlsconf.KeyProtocol,
	tlsconf.KeyPrincipalMappingRules,
}

// serverTLSReloader is one TLS listener's SslFactory as a reconfigurable: the configuration
// new handshakes get, swapped whole when the key or trust store changes.
type serverTLSReloader struct {
	listener string
	cur      atomic.Pointer[tls.Config]

	mu       sync.Mutex // serializes reloads; guards hasTrust
	hasTrust bool       // a trust store is configured (one cannot be added later, as in Kafka)

	// On SSL listeners the certificate names the principal; principals is the mapper in
	// force, rebuilt with the configuration.
	mapsPrincipals bool
	principals     atomic.Pointer[tlsconf.PrincipalMapper]
}

func newServerTLSReloader(listener string, cfg *tls.Config, props map[string]string) *serverTLSReloader {
	r := &serverTLSReloader{listener: listener, hasTrust: hasTrustStore(props, listener)}
	r.cur.Store(cfg)
	return r
}

// serverConfig is the tls.Config the listener hands to tls.Server: each handshake takes
// the configuration in force when it starts.
func (r *serverTLSReloader) serverConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return r.cur.Load(), nil
	}}
}

func hasTrustStore(props map[string]string, listener string) bool {
	for _, k := range []string{tlsconf.KeyTruststoreLocation, tlsconf.KeyTruststoreCertificates} {
		if v, ok := config.ListenerValue(props, listener, k); ok && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// build is SslFactory.createNewSslEngineFactory's checks: the new stores must load; a trust
// store cannot be added to a listener that had none; unless ssl.allow.dn.changes the
// certificate's distinguished name must stay, and unless ssl.allow.san.changes its subject
// alternative names must all stay (CertificateEntries.ensureCompatible).
// The principal mapper (nil unless mapsPrincipals) must build from the new rules too.
func (r *serverTLSReloader) build(props map[string]string) (*tls.Config, *tlsconf.PrincipalMapper, error) {
	next, err := tlsconf.ServerConfig(props, r.listener)
	if err != nil {
		return nil, nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: %w", err)
	}
	var mapper *tlsconf.PrincipalMapper
	if r.mapsPrincipals {
		if mapper, err = tlsconf.PrincipalMapperFor(props, r.listener); err != nil {
			return nil, nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: %w", err)
		}
	}
	r.mu.Lock()
	hadTrust := r.hasTrust
	r.mu.Unlock()
	if !hadTrust && hasTrustStore(props, r.listener) {
		return nil, nil, errors.New("Validation of dynamic config update of SSLFactory failed: Cannot add SSL truststore to an existing listener for which no truststore was configured.")
	}
	oldLeaf, newLeaf := leafOf(r.cur.Load()), leafOf(next)
	if oldLeaf != nil && newLeaf != nil {
		if !listenerBool(props, r.listener, "ssl.allow.dn.changes") &&
			oldLeaf.Subject.String() != newLeaf.Subject.String() &&
			!strings.EqualFold(oldLeaf.Subject.String(), newLeaf.Subject.String()) {
			return nil, nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: Keystore DistinguishedName does not match:  existing={DN=%s}, new={DN=%s}",
				oldLeaf.Subject, newLeaf.Subject)
		}
		if !listenerBool(props, r.listener, "ssl.allow.san.changes") {
			if missing := missingSANs(oldLeaf, newLeaf); len(missing) > 0 {
				return nil, nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: Keystore SubjectAltNames do not match:  existing={SAN=%v}, new={SAN=%v}",
					sanList(oldLeaf), sanList(newLeaf))
			}
		}
	}
	return next, mapper, nil
}

// reload swaps in the configuration props give; open connections keep their session.
func (r *serverTLSReloader) reload(props map[string]string) error {
	next, mapper, err := r.build(props)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.hasTrust = hasTrustStore(props, r.listener)
	r.mu.Unlock()
	// The mapper goes first: a handshake on the new configuration maps with the new rules.
	if mapper != nil {
		r.principals.Store(mapper)
	}
	r.cur.Store(next)
	return nil
}

func leafOf(c *tls.Config) *x509.Certificate {
	if c == nil || len(c.Certificates) == 0 {
		return nil
	}
	if c.Certificates[0].Leaf != nil {
		return c.Certificates[0].Leaf
	}
	if len(c.Certificates[0].Certificate) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

func sanList(c *x509.Certificate) []string {
	out := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	out = append(out, c.EmailAddresses...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	return out
}

// missingSANs are the old certificate's alternative names the new one lacks.
func missingSANs(old, next *x509.Certificate) []string {
	have := map[string]bool{}
	for _, s := range sanList(next) {
		have[s] = true
	}
	var out []string
	for _, s := range sanList(old) {
		if !have[s] {
			out = append(out, s)
		}
	}
	return out
}

func listenerBool(props map[string]string, listener, key string) bool {
	v, _ := config.ListenerValue(props, listener, key)
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// listenerError names the listener in err unless tlsconf or sasl already did.
func listenerError(l config.Listener, err error) error {
	if strings.HasPrefix(err.Error(), "listener "+l.Name) {
		return err
	}
	return fmt.Errorf("listener %s (%s): %w", l.Name, l.SecurityProtocol, err)
}

// listenerMs reads a millisecond property as the listener sees it (listener prefix first).
func listenerMs(props map[string]string, listener, key string, def int64) time.Duration {
	v, ok := config.ListenerValue(props, listener, key)
	if !ok {
		return time.Duration(def) * time.Millisecond
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return time.Duration(def) * time.Millisecond
	}
	return time.Duration(n) * time.Millisecond
}

// interBrokerDialer is the client side of the inter-broker listener, as Kafka builds the
// NetworkClient of its replica fetchers and controller channel from
// security.inter.broker.protocol: TLS with that listener's ssl.* keys (trust store, and the
// key store when the peers ask for a client certificate), SASL with
// sasl.mechanism.inter.broker.protocol logging in with the username/password (or unsecured
// OAUTHBEARER claims) of the listener's JAAS entry for that mechanism.
func (b *Broker) interBrokerDialer() (*kclient.Dialer, error) {
	props := b.cfg.Props
	name := b.cfg.InterBrokerListenerName
	if name == "" {
		name = ProtocolPlaintext
	}
	proto := b.cfg.ListenerSecurityProtocolMap[name]
	d := &kclient.Dialer{Timeout: time.Duration(propInt(props, "socket.connection.setup.timeout.max.ms", 30000)) * time.Millisecond}
	var err error
	if proto == ProtocolSSL || proto == ProtocolSASLSSL {
		if d.TLS, err = tlsconf.ClientConfig(props, name); err != nil {
			return nil, fmt.Errorf("inter-broker listener %s (%s): %w", name, proto, err)
		}
	}
	if proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL {
		mech := strings.TrimSpace(props["sasl.mechanism.inter.broker.protocol"])
		entry, err := interBrokerJAAS(props, name, mech)
		if err != nil {
			return nil, fmt.Errorf("inter-broker listener %s (%s): %w", name, proto, err)
		}
		if d.SASL, err = kclient.MechanismFromJAAS(mech, entry.LoginModule, entry.Options, nil); err != nil {
			return nil, fmt.Errorf("inter-broker listener %s (%s): sasl.mechanism.inter.broker.protocol %s: %w", name, proto, mech, err)
		}
	}
	return d, nil
}

// interBrokerJAAS finds the JAAS entry the broker logs in to its peers with: the server
// context of the inter-broker listener for the mechanism, as Kafka's
// JaasContext.loadServerContext finds it (listener.name.<listener>.<mechanism>.sasl.jaas.config,
// with both names in lower case).
func interBrokerJAAS(props map[string]string, listener, mechanism string) (sasl.JAASEntry, error) {
	key := config.ListenerPrefix(listener) + strings.ToLower(mechanism) + ".sasl.jaas.config"
	v, ok := props[key]
	if !ok || strings.TrimSpace(v) == "" {
		return sasl.JAASEntry{}, fmt.Errorf("no JAAS configuration for %s: set %s (samsa reads no JAAS file)", mechanism, key)
	}
	e, err := sasl.ParseJAAS(v)
	if err != nil {
		return sasl.JAASEntry{}, fmt.Errorf("%s: %w", key, err)
	}
	return e, nil
}

// saslServer is the SASL server of one listener, with SCRAM credentials from the cache of
// /config/users.
func (b *Broker) saslServer(listener string) (*sasl.Server, error) {
	return b.saslServerFrom(b.cfg.Props, listener)
}

// saslServerFrom builds a listener's SASL server from props (start-up or a dynamic update).
func (b *Broker) saslServerFrom(props map[string]string, listener string) (*sasl.Server, error) {
	return sasl.NewServer(sasl.Config{Props: props, Listener: listener, Credentials: b.scram})
}
