package config

import (
	"fmt"
	"sort"
	"strings"
)

// AclAuthorizerClass is the one authorizer.class.name samsa serves (Kafka's ZooKeeper-mode
// kafka.security.authorizer.AclAuthorizer).
const AclAuthorizerClass = "kafka.security.authorizer.AclAuthorizer"

// SASLMechanisms are the SASL mechanisms samsa serves and can log in with.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// refusedClassKeys plug Java classes into Kafka's security code. samsa cannot load them,
// and silently using the built-in behaviour instead would authenticate or name principals
// differently from what the operator asked for, so setting one fails start-up. They are
// refused under a listener prefix too (listener.name.<l>.[<mechanism>.]<key>).
var refusedClassKeys = []string{
	"principal.builder.class",
	"sasl.server.callback.handler.class",
	"sasl.client.callback.handler.class",
	"sasl.login.class",
	"sasl.login.callback.handler.class",
	"ssl.engine.factory.class",
	"security.providers",
}

// noEffectKeys are security keys samsa accepts but does not use: Java-specific knobs
// (key manager, secure random, provider), Kerberos, the login refresh thread (samsa makes
// a fresh OAUTHBEARER token per authentication), the secured OAUTHBEARER handlers and the
// dynamic key store checks.
var noEffectKeys = map[string]bool{
	"ssl.keymanager.algorithm":              true,
	"ssl.trustmanager.algorithm":            true,
	"ssl.secure.random.implementation":      true,
	"ssl.provider":                          true,
	"ssl.allow.dn.changes":                  true,
	"ssl.allow.san.changes":                 true,
	"sasl.login.refresh.window.factor":      true,
	"sasl.login.refresh.window.jitter":      true,
	"sasl.login.refresh.min.period.seconds": true,
	"sasl.login.refresh.buffer.seconds":     true,
	"sasl.login.connect.timeout.ms":         true,
	"sasl.login.read.timeout.ms":            true,
	"sasl.login.retry.backoff.max.ms":       true,
	"sasl.login.retry.backoff.ms":           true,
	// The SASL frame limit before authentication is fixed at Kafka\'s default (524288).
	"sasl.server.max.receive.size": true,
}

// checkSecurity refuses the security settings samsa cannot honour exactly: a SASL listener
// whose mechanisms include one samsa does not serve (GSSAPI: no Kerberos), an inter-broker
// mechanism samsa cannot log in with or that the inter-broker listener does not enable
// (Kafka's KafkaConfig.validateValues rule), an authorizer other than AclAuthorizer, and
// pluggable Java classes. A broker that quietly served something weaker than configured
// would let a user believe the cluster is locked when it is not.
func checkSecurity(c *Config, p map[string]string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, l := range c.Listeners {
		if seen[l.Name] || !isSASL(l.SecurityProtocol) {
			continue
		}
		seen[l.Name] = true
		mechs := EnabledSASLMechanisms(p, l.Name)
		if len(mechs) == 0 {
			errs = append(errs, fmt.Errorf("listener %s uses %s but no SASL mechanism is enabled; set sasl.enabled.mechanisms (or %s) to some of %s",
				l.Name, l.SecurityProtocol, ListenerPrefix(l.Name)+"sasl.enabled.mechanisms", strings.Join(SASLMechanisms, ", ")))
		}
		for _, m := range mechs {
			if err := checkMechanism(m); err != nil {
				errs = append(errs, fmt.Errorf("invalid value %q for configuration sasl.enabled.mechanisms of listener %s: %w", m, l.Name, err))
			}
		}
	}
	if ib := c.InterBrokerListenerName; ib != "" && isSASL(c.ListenerSecurityProtocolMap[ib]) {
		m := strings.TrimSpace(p["sasl.mechanism.inter.broker.protocol"])
		if err := checkMechanism(m); err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for configuration sasl.mechanism.inter.broker.protocol: %w", m, err))
		} else if !contains(EnabledSASLMechanisms(p, ib), m) {
			errs = append(errs, fmt.Errorf("sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication (%s is not enabled on listener %s)", m, ib))
		}
	}

	switch v := strings.TrimSpace(p["authorizer.class.name"]); v {
	case "", AclAuthorizerClass:
	case "kafka.security.auth.SimpleAclAuthorizer":
		errs = append(errs, fmt.Errorf("invalid value %q for configuration authorizer.class.name: SimpleAclAuthorizer was removed in Kafka 3.0; use %s", v, AclAuthorizerClass))
	default:
		errs = append(errs, fmt.Errorf("invalid value %q for configuration authorizer.class.name: samsa serves only %s (or no authorizer)", v, AclAuthorizerClass))
	}

	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.TrimSpace(p[k]) == "" {
			continue
		}
		if base := unprefixed(k); contains(refusedClassKeys, base) {
			errs = append(errs, fmt.Errorf("invalid value %q for configuration %s: samsa cannot load Java classes; remove it to use the built-in behaviour", p[k], k))
		}
	}

	return dedupErrors(errs)
}

func checkMechanism(m string) error {
	switch {
	case m == "GSSAPI":
		return fmt.Errorf("GSSAPI (Kerberos) is not supported; use one of %s", strings.Join(SASLMechanisms, ", "))
	case !contains(SASLMechanisms, m):
		return fmt.Errorf("unsupported SASL mechanism; use one of %s", strings.Join(SASLMechanisms, ", "))
	}
	return nil
}

// ListenerPrefix is Kafka's ListenerName.configPrefix: "listener.name.<lower-case name>.".
func ListenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// ListenerValue is a broker property as seen by one listener: the listener-prefixed key
// wins over the plain one (Kafka's valuesWithPrefixOverride). ok is false when neither is set.
func ListenerValue(p map[string]string, listener, key string) (string, bool) {
	if v, ok := p[ListenerPrefix(listener)+key]; ok {
		return v, true
	}
	v, ok := p[key]
	return v, ok
}

// EnabledSASLMechanisms is sasl.enabled.mechanisms for a listener (listener prefix first).
func EnabledSASLMechanisms(p map[string]string, listener string) []string {
	v, _ := ListenerValue(p, listener, "sasl.enabled.mechanisms")
	return splitList(v)
}

func isSASL(protocol string) bool { return protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" }

func isSSL(protocol string) bool { return protocol == "SSL" || protocol == "SASL_SSL" }

// unprefixed strips "listener.name.<l>." and, for SASL keys, a mechanism segment
// ("listener.name.<l>.<mechanism>."), returning the base key.
func unprefixed(k string) string {
	if !strings.HasPrefix(k, "listener.name.") {
		return k
	}
	rest := strings.TrimPrefix(k, "listener.name.")
	i := strings.IndexByte(rest, '.')
	if i < 0 {
		return k
	}
	rest = rest[i+1:]
	for _, m := range append([]string{"gssapi"}, SASLMechanisms...) {
		if p := strings.ToLower(m) + "."; strings.HasPrefix(rest, p) {
			return strings.TrimPrefix(rest, p)
		}
	}
	return rest
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// securityWarnings names the security keys that were set but have no effect: Java-only and
// Kerberos knobs, TLS keys when no listener uses TLS, SASL keys when no listener uses SASL,
// super.users without an authorizer.
func securityWarnings(static map[string]string) []string {
	var anySSL, anySASL bool
	if protoMap, err := ParseSecurityProtocolMap(valueOr(static, "listener.security.protocol.map", DefaultListenerSecurityProtocolMap)); err == nil {
		if ls, err := ParseListeners(valueOr(static, "listeners", "PLAINTEXT://:9092"), protoMap); err == nil {
			for _, l := range ls {
				anySSL = anySSL || isSSL(l.SecurityProtocol)
				anySASL = anySASL || isSASL(l.SecurityProtocol)
			}
		}
	}
	authorizer := strings.TrimSpace(static["authorizer.class.name"]) != ""
	keys := make([]string, 0, len(static))
	for k := range static {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		base := unprefixed(k)
		var why string
		switch {
		case contains(refusedClassKeys, base):
			continue // an error when set, see checkSecurity
		case noEffectKeys[base]:
			why = "samsa does not use it"
		case strings.HasPrefix(base, "sasl.kerberos."):
			why = "samsa does not serve GSSAPI (Kerberos)"
		case strings.HasPrefix(base, "sasl.oauthbearer."):
			why = "samsa validates OAUTHBEARER tokens as Kafka's unsecured validator does"
		case k == "sasl.jaas.config":
			why = "a broker reads only listener.name.<listener>.<mechanism>.sasl.jaas.config, as Kafka does"
		case base == "super.users" && !authorizer:
			why = "no authorizer.class.name is set"
		case strings.HasPrefix(base, "ssl.") && !anySSL:
			why = "no listener uses SSL or SASL_SSL"
		case (strings.HasPrefix(base, "sasl.") || base == "connections.max.reauth.ms") && !anySASL:
			why = "no listener uses SASL_PLAINTEXT or SASL_SSL"
		default:
			continue
		}
		out = append(out, fmt.Sprintf("The configuration '%s' has no effect: %s.", k, why))
	}
	return out
}

func valueOr(m map[string]string, k, def string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return def
}

func dedupErrors(errs []error) []error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}
