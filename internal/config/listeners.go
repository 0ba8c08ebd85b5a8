package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// listenerRE is Kafka's CoreUtils listener pattern: NAME://host:port, host may be empty or a
// bracketed IPv6 address.
var listenerRE = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// String formats l as Kafka writes an endpoint: NAME://host:port (IPv6 hosts bracketed).
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
}

// ParseSecurityProtocolMap parses listener.security.protocol.map ("NAME:PROTOCOL,...").
// Listener names are upper-cased as Kafka's ListenerName.normalised does.
func ParseSecurityProtocolMap(v string) (map[string]string, error) {
	m := make(map[string]string)
	for _, entry := range splitList(v) {
		name, proto, ok := strings.Cut(entry, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("map entry %q is not of the form LISTENER:PROTOCOL", entry)
		}
		if oneOf(securityProtocols...)(proto) != "" {
			return nil, fmt.Errorf("unknown security protocol %s for listener %s", proto, name)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener %s appears twice", name)
		}
		m[name] = proto
	}
	return m, nil
}

// ParseListeners parses a `listeners`-style value (comma-separated NAME://host:port) and looks
// each name's protocol up in protoMap. Names must be unique; port 0 is allowed (bind a free
// port); ports must be in [0, 65535].
func ParseListeners(v string, protoMap map[string]string) ([]Listener, error) {
	var out []Listener
	seen := make(map[string]bool)
	for _, entry := range splitList(v) {
		m := listenerRE.FindStringSubmatch(entry)
		if m == nil {
			return nil, fmt.Errorf("unable to parse %s to a broker endpoint", entry)
		}
		name := strings.ToUpper(m[1])
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("port %s of listener %s is out of range", m[3], name)
		}
		proto, ok := protoMap[name]
		if !ok {
			return nil, fmt.Errorf("no security protocol defined for listener %s", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("each listener must have a different name, listeners: %s", v)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: m[2], Port: int32(port), SecurityProtocol: proto})
	}
	return out, nil
}

// Listener returns the advertised listener named name.
func (c *Config) Listener(name string) (Listener, bool) {
	for _, l := range c.AdvertisedListeners {
		if l.Name == name {
			return l, true
		}
	}
	return Listener{}, false
}

// validateListeners applies KafkaConfig.validateValues' listener rules (ZK mode).
func validateListeners(listeners, advertised []Listener, interBroker string) []error {
	var errs []error
	// Each listener needs its own port, except that one IPv4 and one IPv6 listener may share
	// one (KIP-797). Port 0 binds a free port, so it never clashes.
	byPort := make(map[int32][]Listener)
	var order []int32
	for _, l := range listeners {
		if l.Port != 0 {
			if byPort[l.Port] == nil {
				order = append(order, l.Port)
			}
			byPort[l.Port] = append(byPort[l.Port], l)
		}
	}
	for _, port := range order {
		ls := byPort[port]
		if len(ls) < 2 {
			continue
		}
		if len(ls) == 2 && ipFamily(ls[0].Host) != 0 && ipFamily(ls[1].Host) != 0 && ipFamily(ls[0].Host) != ipFamily(ls[1].Host) {
			continue
		}
		errs = append(errs, fmt.Errorf("invalid value for configuration listeners: each listener must have a different port unless exactly one listener has an IPv4 address and the other an IPv6 address; %s and %s both use %d", ls[0].Name, ls[1].Name, port))
	}
	names := make(map[string]bool)
	for _, l := range listeners {
		names[l.Name] = true
	}
	for _, l := range advertised {
		if !names[l.Name] {
			errs = append(errs, fmt.Errorf("invalid value for configuration advertised.listeners: listener %s is not in listeners; advertised.listeners listener names must be equal to or a subset of the ones defined in listeners", l.Name))
		}
		if l.Host == "0.0.0.0" {
			errs = append(errs, fmt.Errorf("invalid value %q for configuration advertised.listeners: cannot use the nonroutable meta-address 0.0.0.0, use a routable IP address", l.String()))
		}
	}
	found := false
	for _, l := range advertised {
		found = found || l.Name == interBroker
	}
	if !found {
		errs = append(errs, fmt.Errorf("invalid value for configuration inter.broker.listener.name: %s must be a listener name defined in advertised.listeners", interBroker))
	}
	return errs
}

// ipFamily is 4 or 6 for an IP literal, 0 for a hostname or an empty host.
func ipFamily(host string) int {
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return 0
	case ip.To4() != nil:
		return 4
	}
	return 6
}
