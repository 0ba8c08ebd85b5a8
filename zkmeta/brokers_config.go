package zkmeta

// brokers_config.go holds /config/brokers/<id> and /config/brokers/<default>: dynamic broker
// configs (ConfigEntityZNode, {"version":1,"config":{...}}), written as
// AdminZkClient.changeBrokerConfig does (the znode, then the brokers/<name> notification
// every broker's config handler follows).

import (
	"fmt"
	"strconv"
)

// BrokerConfigEntity is the entity name of a broker's dynamic configs: its id, or
// <default> (ConfigEntityDefault) for the cluster-wide defaults when id is nil.
func BrokerConfigEntity(id *int32) string {
	if id == nil {
		return ConfigEntityDefault
	}
	return strconv.Itoa(int(*id))
}

// GetBrokerConfig reads /config/brokers/<entity> (empty map if missing).
func (c *Client) GetBrokerConfig(entity string) (map[string]string, error) {
	cfg, err := c.GetEntityConfig(ConfigTypeBroker, entity)
	if err != nil {
		return nil, fmt.Errorf("read dynamic config of broker %s: %w", entity, err)
	}
	return cfg, nil
}

// SetBrokerConfig replaces /config/brokers/<entity> with cfg (already in its stored form:
// passwords encrypted) and queues the brokers/<entity> change notification.
func (c *Client) SetBrokerConfig(entity string, cfg map[string]string) error {
	if _, err := c.SetEntityConfig(ConfigTypeBroker, entity, cfg); err != nil {
		return fmt.Errorf("write dynamic config of broker %s: %w", entity, err)
	}
	return nil
}
