package broker

// listener_security.go builds what KafkaServer hands its SocketServer and NetworkClients for
// security: each listener's TLS configuration, principal mapping and SASL server
// (ChannelBuilders.create for the server side), and the client side of the inter-broker
// listener every broker-to-broker connection dials with.

import (
	"fmt"
	"strconv"
	"strings"
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
		var err error
		if proto == ProtocolSSL || proto == ProtocolSASLSSL {
			if ls.TLS, err = tlsconf.ServerConfig(props, l.Name); err != nil {
				return nil, listenerError(l, err)
			}
		}
		if proto == ProtocolSSL {
			// The certificate names the principal only on SSL; on SASL_SSL SASL does.
			if ls.Principals, err = tlsconf.PrincipalMapperFor(props, l.Name); err != nil {
				return nil, listenerError(l, err)
			}
		}
		if proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL {
			srv, err := b.saslServer(l.Name)
			if err != nil {
				return nil, listenerError(l, err)
			}
			ls.SASL = srv
		}
		if err := ls.Validate(); err != nil {
			return nil, listenerError(l, err)
		}
		out[l.Name] = ls
	}
	return out, nil
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
	return sasl.NewServer(sasl.Config{Props: b.cfg.Props, Listener: listener, Credentials: b.scram})
}
