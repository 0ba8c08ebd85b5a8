package sasl

import (
	"fmt"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

// Config is what a SASL listener's server is built from.
type Config struct {
	// Props are the broker's properties.
	Props map[string]string
	// Listener is the listener name, e.g. "SASL_SSL" or "INTERNAL"; per-listener keys are
	// `listener.name.<lower-case listener>.…`.
	Listener string
	// Credentials serves SCRAM credentials; required when a SCRAM mechanism is enabled.
	Credentials CredentialStore
	// Now is the clock for OAUTHBEARER token times; nil means time.Now.
	Now func() time.Time
}

// Server holds a listener's enabled mechanisms, each configured from its JAAS entry, and
// starts one Session per authentication exchange. It is safe for concurrent use.
type Server struct {
	mechanisms []string
	plain      plainUsers
	oauth      *oauthValidator
	creds      CredentialStore
	now        func() time.Time
}

const (
	keyEnabledMechanisms = "sasl.enabled.mechanisms"
	keyJAASConfig        = "sasl.jaas.config"
	keyServerCallback    = "sasl.server.callback.handler.class"
)

// NewServer reads `sasl.enabled.mechanisms` (the listener-prefixed key first; Kafka's default
// is GSSAPI) and, for each mechanism, the JAAS entry
// `listener.name.<listener>.<mechanism>.sasl.jaas.config` (both lower case). As in Kafka's
// JaasContext.loadServerContext, an unprefixed `sasl.jaas.config` is ignored on a broker;
// Kafka would then fall back to a JAAS file named by a JVM system property, which samsa has
// no equivalent of, so a mechanism without its listener entry is an error.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Listener == "" {
		return nil, fmt.Errorf("SASL server: listener name is empty")
	}
	prefix := "listener.name." + strings.ToLower(cfg.Listener) + "."
	mechs, err := enabledMechanisms(cfg.Props, prefix)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", cfg.Listener, err)
	}
	s := &Server{mechanisms: mechs, creds: cfg.Credentials, now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	for _, mech := range mechs {
		if err := s.configure(cfg, prefix, mech); err != nil {
			return nil, fmt.Errorf("listener %s, SASL mechanism %s: %w", cfg.Listener, mech, err)
		}
	}
	return s, nil
}

// enabledMechanisms parses the list as Kafka's ConfigDef LIST type (comma-separated,
// whitespace around commas ignored) and refuses what samsa cannot serve.
func enabledMechanisms(props map[string]string, prefix string) ([]string, error) {
	key := prefix + keyEnabledMechanisms
	v, ok := props[key]
	if !ok {
		key = keyEnabledMechanisms
		v, ok = props[key]
	}
	if !ok {
		return nil, fmt.Errorf("%s is not set and Kafka's default, GSSAPI, is not supported: "+
			"set it to some of %s", keyEnabledMechanisms, strings.Join(SupportedMechanisms(), ", "))
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, fmt.Errorf("%s is empty", key)
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range strings.Split(v, ",") {
		m = strings.TrimSpace(m)
		switch {
		case m == "":
			return nil, fmt.Errorf("%s=%q: empty mechanism name", key, v)
		case m == "GSSAPI":
			return nil, fmt.Errorf("%s: GSSAPI (Kerberos) is not supported; use %s", key, strings.Join(SupportedMechanisms(), ", "))
		case !isSupported(m):
			return nil, fmt.Errorf("%s: unsupported SASL mechanism %q (supported, case-sensitive: %s)",
				key, m, strings.Join(SupportedMechanisms(), ", "))
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// SupportedMechanisms lists the mechanisms samsa serves.
func SupportedMechanisms() []string {
	return []string{MechanismPlain, scramcred.SHA256, scramcred.SHA512, MechanismOAuthBearer}
}

func isSupported(m string) bool {
	for _, s := range SupportedMechanisms() {
		if s == m {
			return true
		}
	}
	return false
}

// expectedModule is the login module each mechanism is configured by.
func expectedModule(mech string) string {
	switch mech {
	case MechanismPlain:
		return PlainLoginModule
	case MechanismOAuthBearer:
		return OAuthBearerLoginModule
	}
	return ScramLoginModule
}

func (s *Server) configure(cfg Config, prefix, mech string) error {
	lower := strings.ToLower(mech)
	if h := cfg.Props[prefix+lower+"."+keyServerCallback]; h != "" {
		return fmt.Errorf("%s%s.%s=%s: custom callback handlers are not supported", prefix, lower, keyServerCallback, h)
	}
	key := prefix + lower + "." + keyJAASConfig
	v, ok := cfg.Props[key]
	if !ok {
		hint := ""
		if _, global := cfg.Props[keyJAASConfig]; global {
			hint = fmt.Sprintf(" (%s without the listener and mechanism prefix is ignored on a broker, as in Kafka)", keyJAASConfig)
		}
		return fmt.Errorf("no JAAS configuration: set %s%s", key, hint)
	}
	entry, err := ParseJAAS(v)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if want := expectedModule(mech); entry.LoginModule != want {
		return fmt.Errorf("%s: login module %s is not supported for %s; use %s", key, entry.LoginModule, mech, want)
	}
	switch mech {
	case MechanismPlain:
		s.plain = newPlainUsers(entry)
	case MechanismOAuthBearer:
		if s.oauth, err = newOAuthValidator(entry); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	default:
		if cfg.Credentials == nil {
			return fmt.Errorf("no SCRAM credential store")
		}
	}
	return nil
}

// Mechanisms lists the enabled mechanisms in configured order, as SaslHandshake reports them.
func (s *Server) Mechanisms() []string { return append([]string(nil), s.mechanisms...) }

// Enabled reports whether mechanism is enabled on this listener.
func (s *Server) Enabled(mechanism string) bool {
	for _, m := range s.mechanisms {
		if m == mechanism {
			return true
		}
	}
	return false
}

// Start begins one authentication exchange; ErrUnsupportedMechanism when the mechanism is
// not enabled here.
func (s *Server) Start(mechanism string) (Session, error) {
	if !s.Enabled(mechanism) {
		return nil, fmt.Errorf("%w: %q (enabled: %s)", ErrUnsupportedMechanism, mechanism, strings.Join(s.mechanisms, ", "))
	}
	switch mechanism {
	case MechanismPlain:
		return &plainSession{users: s.plain}, nil
	case MechanismOAuthBearer:
		return &oauthSession{v: s.oauth, now: s.now}, nil
	}
	h, err := scramcred.Hash(mechanism)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedMechanism, err)
	}
	return &scramSession{mechanism: mechanism, hash: h, store: s.creds, nonceGen: scramNonce}, nil
}
