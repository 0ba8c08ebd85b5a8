package main

// How every tool connects securely: a Java client's security properties (security.protocol,
// sasl.*, ssl.*), read from --command-config, --admin.config, --producer.config,
// --consumer.config, --producer-props or --consumer-property, turned into franz-go options.
// This mirrors what Kafka's ChannelBuilders, SaslClientAuthenticator and
// DefaultSslEngineFactory do for a Java client.
//
// Honoured: security.protocol PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; sasl.mechanism PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; sasl.jaas.config with PlainLoginModule or
// ScramLoginModule (username, password) or OAuthBearerLoginModule with the unsecured login
// options (unsecuredLogin*), built by kclient.MechanismFromJAAS as for brokers; the ssl.* trust
// store, key store, protocol and endpoint identification keys (tlsconf). Settings that change
// how the client authenticates but cannot be honoured (GSSAPI, login or callback handler
// classes, an OAuth token endpoint, security providers, a custom SSL engine) fail before
// connecting. Anything else is left to the tool, which warns about keys it ignores.

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-kafka/samsa/internal/kclient"
	ssasl "github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
)

// tlsClientKeys are the ssl.* keys tlsconf.ClientConfig reads for a client.
var tlsClientKeys = []string{
	tlsconf.KeyProtocol, tlsconf.KeyEnabledProtocols, tlsconf.KeyCipherSuites,
	tlsconf.KeyKeystoreType, tlsconf.KeyKeystoreLocation, tlsconf.KeyKeystorePassword, tlsconf.KeyKeyPassword,
	tlsconf.KeyKeystoreKey, tlsconf.KeyKeystoreCertificateChain,
	tlsconf.KeyTruststoreType, tlsconf.KeyTruststoreLocation, tlsconf.KeyTruststorePassword, tlsconf.KeyTruststoreCertificates,
	tlsconf.KeyEndpointIdentification,
}

// unsupportedSecurityKeys change how a Java client authenticates or sets up TLS and have no
// franz-go equivalent: set, they fail the tool rather than let it connect differently.
var unsupportedSecurityKeys = map[string]string{
	"sasl.login.class":                    "a custom login class",
	"sasl.client.callback.handler.class":  "a custom SASL client callback handler",
	"sasl.login.callback.handler.class":   "a custom SASL login callback handler",
	"sasl.oauthbearer.token.endpoint.url": "fetching OAUTHBEARER tokens from an OAuth server",
	"ssl.engine.factory.class":            "a custom SSL engine factory",
	"security.providers":                  "Java security providers",
	"ssl.provider":                        "a Java security provider for SSL",
}

// clientSecurity is what clientSecurityOpts makes of a property map.
type clientSecurity struct {
	opts []kgo.Opt
	// used holds the keys that took effect; a tool warns about (or ignores) the others.
	used map[string]bool
}

// clientSecurityOpts maps a Java client's security properties to kgo options. Error messages
// name keys, never their values, as these hold passwords.
func clientSecurityOpts(props map[string]string) (*clientSecurity, error) {
	cs := &clientSecurity{used: map[string]bool{}}
	protocol := "PLAINTEXT"
	if v, ok := props["security.protocol"]; ok {
		cs.used["security.protocol"] = true
		protocol = strings.ToUpper(strings.TrimSpace(v)) // SecurityProtocol.forName
	}
	var useTLS, useSASL bool
	switch protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", strings.TrimSpace(props["security.protocol"]))
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		what, bad := unsupportedSecurityKeys[k]
		if !bad {
			continue
		}
		// Only where they would act: SASL keys on SASL connections, SSL keys on TLS ones.
		if (strings.HasPrefix(k, "sasl.") && !useSASL) || (strings.HasPrefix(k, "ssl.") && !useTLS) {
			continue
		}
		return nil, fmt.Errorf("%s is set: %s is not supported by samsa's tools", k, what)
	}
	if useTLS {
		cfg, err := tlsconf.ClientConfig(props, "")
		if err != nil {
			return nil, fmt.Errorf("TLS client configuration: %w", err)
		}
		for _, k := range tlsClientKeys {
			if _, ok := props[k]; ok {
				cs.used[k] = true
			}
		}
		cs.opts = append(cs.opts, kgo.DialTLSConfig(cfg))
	}
	if useSASL {
		mech, err := saslMechanism(props)
		if err != nil {
			return nil, err
		}
		cs.used["sasl.mechanism"], cs.used["sasl.jaas.config"] = true, true
		cs.opts = append(cs.opts, kgo.SASL(mech))
	}
	for k := range cs.used {
		if _, ok := props[k]; !ok {
			delete(cs.used, k)
		}
	}
	return cs, nil
}

// saslMechanism builds the client side of sasl.mechanism from the sasl.jaas.config login
// module's options.
func saslMechanism(props map[string]string) (sasl.Mechanism, error) {
	mechanism := "GSSAPI" // SaslConfigs.DEFAULT_SASL_MECHANISM
	if v, ok := props["sasl.mechanism"]; ok {
		mechanism = strings.TrimSpace(v)
	}
	switch mechanism {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER":
	case "GSSAPI":
		return nil, errors.New("sasl.mechanism GSSAPI (Kerberos, the default when sasl.mechanism is unset) is not supported by samsa's tools; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	default:
		return nil, fmt.Errorf("sasl.mechanism %s is not supported by samsa's tools; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", mechanism)
	}
	text, ok := props["sasl.jaas.config"]
	if !ok || strings.TrimSpace(text) == "" {
		// A Java client would read the KafkaClient section of the file named by the
		// java.security.auth.login.config system property; samsa has no such file.
		return nil, fmt.Errorf("sasl.jaas.config is required for sasl.mechanism %s", mechanism)
	}
	e, err := ssasl.ParseJAAS(text)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	mech, err := kclient.MechanismFromJAAS(mechanism, e.LoginModule, e.Options, nil)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	return mech, nil
}

// adminClientSecurity reads the client property file an admin tool was given (--command-config,
// or --admin.config for leader-election) and returns the options its security settings make.
// A missing or unreadable file, or a setting that cannot be honoured, prints the error and
// returns false: the tool exits 1 before connecting. Keys that take no effect are listed in one
// warning line.
func adminClientSecurity(tool, flagName string, file optString, stderr io.Writer) ([]kgo.Opt, bool) {
	if !file.set {
		return nil, true
	}
	props, err := loadPropsFile(file.v)
	if err != nil {
		fmt.Fprintf(stderr, "samsa %s: --%s: %v\n", tool, flagName, err)
		return nil, false
	}
	cs, err := clientSecurityOpts(props)
	if err != nil {
		fmt.Fprintf(stderr, "samsa %s: --%s: %v\n", tool, flagName, err)
		return nil, false
	}
	if ignored := cs.ignored(props); len(ignored) > 0 {
		fmt.Fprintf(stderr, "samsa %s: ignoring --%s keys: %s\n", tool, flagName, strings.Join(ignored, ", "))
	}
	return cs.opts, true
}

// ignored lists the keys of props that took no effect, sorted.
func (cs *clientSecurity) ignored(props map[string]string) []string {
	var out []string
	for k := range props {
		if !cs.used[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
