package zkmeta

// users.go holds the /config/users/<user> znodes: a user's dynamic configs, which for samsa
// are its SCRAM credentials ({"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,
// server_key=...,iterations=4096"}}, ConfigEntityZNode). The znode name is the user name
// URL-encoded as Kafka's Sanitizer writes it, so any principal name is a valid znode name.
// Writers follow AdminZkClient.changeEntityConfig: write (or, for an emptied user, delete)
// the znode, then queue the change notification users/<sanitized user> for every broker.

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ConfigEntityDefault is ConfigEntityName.Default: the entity name of the defaults
// (quotas); it never carries credentials.
const ConfigEntityDefault = "<default>"

// SanitizeUser is Kafka's Sanitizer.sanitize: Java's URLEncoder (UTF-8) followed by "*" →
// "%2A" and "+" → "%20". Letters, digits, '.', '-' and '_' stay; every other byte is %XX
// with upper-case hex.
func SanitizeUser(name string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// DesanitizeUser is Sanitizer.desanitize (Java's URLDecoder: "+" is a space, %XX a byte).
func DesanitizeUser(sanitized string) (string, error) {
	s, err := url.QueryUnescape(sanitized)
	if err != nil {
		return "", fmt.Errorf("desanitize user znode name %q: %w", sanitized, err)
	}
	return s, nil
}

// UserConfigPath is /config/users/<sanitized user>.
func UserConfigPath(user string) string {
	return ConfigEntityPath(ConfigTypeUser, SanitizeUser(user))
}

// GetUserConfig reads the configs of user (a missing znode is an empty config).
func (c *Client) GetUserConfig(user string) (map[string]string, error) {
	cfg, err := c.GetEntityConfig(ConfigTypeUser, SanitizeUser(user))
	if err != nil {
		return nil, fmt.Errorf("read config of user %q: %w", user, err)
	}
	return cfg, nil
}

// GetAllUserConfigs is AdminZkClient.fetchAllEntityConfigs(users): every child of
// /config/users with its config, keyed by the sanitized (znode) name. A user deleted between
// the listing and the read is left out.
func (c *Client) GetAllUserConfigs() (map[string]map[string]string, error) {
	names, err := c.Children(ConfigPath + "/" + ConfigTypeUser)
	if errors.Is(err, ErrNoNode) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list user configs: %w", err)
	}
	out := make(map[string]map[string]string, len(names))
	for _, n := range names {
		data, _, err := c.Get(ConfigEntityPath(ConfigTypeUser, n))
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read config of user znode %q: %w", n, err)
		}
		cfg, err := DecodeConfig(data)
		if err != nil {
			return nil, fmt.Errorf("user znode %q: %w", n, err)
		}
		out[n] = cfg
	}
	return out, nil
}

// SetUserConfig is AdminZkClient.changeUserOrUserClientIdConfig for a user entity: it
// replaces the user's configs and queues the notification users/<sanitized user>. An empty
// config deletes the znode when it has no children (<user>/clients/... quota nodes), as
// tryCleanQuotaNodes does, so removing a user's last credential leaves no trace. Returns the
// notification's name.
func (c *Client) SetUserConfig(user string, cfg map[string]string) (string, error) {
	sanitized := SanitizeUser(user)
	path := ConfigEntityPath(ConfigTypeUser, sanitized)
	write := true
	if len(cfg) == 0 {
		children, err := c.Children(path)
		switch {
		case errors.Is(err, ErrNoNode):
			write = false // nothing to clean
		case err != nil:
			return "", fmt.Errorf("list children of %s: %w", path, err)
		case len(children) == 0:
			if err := c.Delete(path, -1); err != nil && !errors.Is(err, ErrNoNode) {
				return "", fmt.Errorf("delete empty user config %s: %w", path, err)
			}
			write = false
		}
	}
	if write {
		if err := c.setOrCreate(path, EncodeConfig(cfg)); err != nil {
			return "", fmt.Errorf("write config of user %q: %w", user, err)
		}
	}
	n, err := c.CreateConfigChangeNotification(ConfigTypeUser + "/" + sanitized)
	if err != nil {
		return "", fmt.Errorf("notify config change of user %q: %w", user, err)
	}
	return n, nil
}
