package config

import (
	"fmt"
	"sort"
	"strings"
)

// checkSecurity refuses the security settings samsa does not serve yet. A listener that
// is registered as SSL or SASL but serves plain, unauthenticated TCP would let a user
// believe the cluster is encrypted and locked when it is not, so start-up fails instead.
func checkSecurity(c *Config, p map[string]string) []error {
	var errs []error
	for _, l := range append(append([]Listener(nil), c.Listeners...), c.AdvertisedListeners...) {
		if l.SecurityProtocol != "PLAINTEXT" {
			errs = append(errs, fmt.Errorf("listener %s uses security protocol %s, which samsa does not serve yet; use PLAINTEXT", l.Name, l.SecurityProtocol))
		}
	}
	if v := strings.TrimSpace(p["authorizer.class.name"]); v != "" {
		errs = append(errs, fmt.Errorf("invalid value %q for configuration authorizer.class.name: samsa has no authorizer yet; leave it empty", v))
	}
	for _, k := range []string{"zookeeper.ssl.client.enable", "zookeeper.set.acl"} {
		if p[k] == "true" {
			errs = append(errs, fmt.Errorf("invalid value true for configuration %s: samsa does not support it yet", k))
		}
	}
	return dedupErrors(errs)
}

// securityWarnings names the security keys that were set but have no effect.
func securityWarnings(static map[string]string) []string {
	var keys []string
	for k := range static {
		if strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.") || k == "super.users" ||
			(strings.HasPrefix(k, "listener.name.") && (strings.Contains(k, ".ssl.") || strings.Contains(k, ".sasl."))) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("The configuration '%s' has no effect: samsa serves PLAINTEXT listeners only and has no authorizer.", k))
	}
	return out
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
