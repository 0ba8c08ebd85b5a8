package zkmeta

// quotas.go holds the client quota znodes: /config/clients/<client-id>,
// /config/users/<user>, /config/users/<user>/clients/<client-id> and /config/ips/<ip>, each a
// ConfigEntityZNode whose names are sanitized (Kafka's Sanitizer, SanitizeUser) and where
// <default> names the defaults. A user's znode also holds its SCRAM credentials (users.go):
// writers here get the whole config, change the quota keys and write it back, so the
// credentials stay. Writes follow AdminZkClient.changeEntityConfig: write the znode (or delete
// it when it became empty and has no children, tryCleanQuotaNodes), then queue the change
// notification "<type>/<path>" for every broker.

import (
	"errors"
	"fmt"
	"strings"
)

// UserClientPath is the entity path of a <user, client-id> quota below /config/users:
// "<sanitized user>/clients/<sanitized client-id>".
func UserClientPath(sanitizedUser, sanitizedClientID string) string {
	return sanitizedUser + "/" + ConfigTypeClient + "/" + sanitizedClientID
}

// GetAllQuotaEntityConfigs is AdminZkClient.fetchAllEntityConfigs: every child of
// /config/<entityType> with its config, keyed by znode (sanitized) name. An entity deleted
// between the listing and the read is left out.
func (c *Client) GetAllQuotaEntityConfigs(entityType string) (map[string]map[string]string, error) {
	return c.childConfigs(entityType, "")
}

// GetAllUserClientConfigs is AdminZkClient.fetchAllChildEntityConfigs(users, clients): every
// /config/users/<user>/clients/<client-id>, keyed by "<user>/clients/<client-id>".
func (c *Client) GetAllUserClientConfigs() (map[string]map[string]string, error) {
	users, err := c.Children(ConfigPath + "/" + ConfigTypeUser)
	if errors.Is(err, ErrNoNode) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list user configs: %w", err)
	}
	out := map[string]map[string]string{}
	for _, u := range users {
		m, err := c.childConfigs(ConfigTypeUser, u+"/"+ConfigTypeClient)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[u+"/"+ConfigTypeClient+"/"+k] = v
		}
	}
	return out, nil
}

// childConfigs reads every child of /config/<entityType>[/<below>] as a config entity.
func (c *Client) childConfigs(entityType, below string) (map[string]map[string]string, error) {
	root := ConfigPath + "/" + entityType
	if below != "" {
		root += "/" + below
	}
	names, err := c.Children(root)
	if errors.Is(err, ErrNoNode) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	out := make(map[string]map[string]string, len(names))
	for _, n := range names {
		data, _, err := c.Get(root + "/" + n)
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", root, n, err)
		}
		cfg, err := DecodeConfig(data)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", root, n, err)
		}
		out[n] = cfg
	}
	return out, nil
}

// ChangeQuotaEntityConfig is AdminZkClient.changeEntityConfig for clients, users and ips:
// cfg is the entity's complete new config (read it, change it, pass it back). An empty
// config removes the znode when it has no children; for a <user, client-id> entity the
// emptied clients node and then the user node go too when nothing else is left in them.
// The notification is queued in every case. Returns the notification's name.
func (c *Client) ChangeQuotaEntityConfig(entityType, sanitizedPath string, cfg map[string]string) (string, error) {
	path := ConfigEntityPath(entityType, sanitizedPath)
	write := true
	if len(cfg) == 0 {
		cleaned, err := c.tryCleanQuotaNode(entityType, sanitizedPath)
		if err != nil {
			return "", err
		}
		write = !cleaned
	}
	if write {
		if err := c.setOrCreate(path, EncodeConfig(cfg)); err != nil {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
	}
	n, err := c.CreateConfigChangeNotification(entityType + "/" + sanitizedPath)
	if err != nil {
		return "", fmt.Errorf("notify config change of %s/%s: %w", entityType, sanitizedPath, err)
	}
	return n, nil
}

// tryCleanQuotaNode is AdminZkClient.tryCleanQuotaNodes.
func (c *Client) tryCleanQuotaNode(entityType, sanitizedPath string) (bool, error) {
	path := ConfigEntityPath(entityType, sanitizedPath)
	children, err := c.Children(path)
	if errors.Is(err, ErrNoNode) {
		return true, nil // nothing to clean; Kafka's deletePath of a missing node succeeds
	}
	if err != nil {
		return false, fmt.Errorf("list children of %s: %w", path, err)
	}
	if len(children) > 0 {
		return false, nil
	}
	toDelete := []string{path}
	if user, client, ok := strings.Cut(sanitizedPath, "/"+ConfigTypeClient+"/"); ok && entityType == ConfigTypeUser {
		clientsPath := ConfigEntityPath(ConfigTypeUser, user+"/"+ConfigTypeClient)
		siblings, err := c.Children(clientsPath)
		if err != nil && !errors.Is(err, ErrNoNode) {
			return false, fmt.Errorf("list %s: %w", clientsPath, err)
		}
		if len(siblings) == 1 && siblings[0] == client {
			toDelete = append(toDelete, clientsPath)
			userPath := ConfigEntityPath(ConfigTypeUser, user)
			userCfg, err := c.GetEntityConfig(ConfigTypeUser, user)
			if err != nil {
				return false, fmt.Errorf("read %s: %w", userPath, err)
			}
			userChildren, err := c.Children(userPath)
			if err != nil && !errors.Is(err, ErrNoNode) {
				return false, fmt.Errorf("list %s: %w", userPath, err)
			}
			if len(userCfg) == 0 && len(userChildren) == 1 && userChildren[0] == ConfigTypeClient {
				toDelete = append(toDelete, userPath)
			}
		}
	}
	// Deepest first: a parent can only go once its children have.
	for _, p := range toDelete {
		if err := c.Delete(p, -1); err != nil && !errors.Is(err, ErrNoNode) {
			return false, fmt.Errorf("delete empty quota node %s: %w", p, err)
		}
	}
	return true, nil
}
