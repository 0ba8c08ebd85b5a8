package broker

// dynamic_config.go mirrors kafka.server.DynamicBrokerConfig: the broker's configuration as
// the static file, /config/brokers/<default> and /config/brokers/<id> make it together
// (DYNAMIC_BROKER_CONFIG > DYNAMIC_DEFAULT_BROKER_CONFIG > STATIC_BROKER_CONFIG >
// DEFAULT_CONFIG), and the components that apply a change live (Reconfigurable).

import (
	"sync"
	"sync/atomic"

	"github.com/samsa-kafka/samsa/internal/config"
)

// Reconfigurable is Kafka's BrokerReconfigurable: a component that applies changes of some
// dynamic keys without a restart.
type Reconfigurable interface {
	// ReconfigurableConfigs are the keys whose change this component applies.
	ReconfigurableConfigs() []string
	// ValidateReconfiguration checks the new configuration before anything is applied; an
	// error refuses the whole update, as Kafka does.
	ValidateReconfiguration(newCfg *config.Config) error
	// Reconfigure applies the new configuration; called only when one of
	// ReconfigurableConfigs changed.
	Reconfigure(oldCfg, newCfg *config.Config)
}

// DynamicBrokerConfig holds the broker's current configuration and its reconfigurables.
type DynamicBrokerConfig struct {
	current atomic.Pointer[config.Config]

	mu              sync.Mutex // serializes updates; guards the fields below
	reconfigurables []Reconfigurable
}

// NewDynamicBrokerConfig starts from the static configuration.
func NewDynamicBrokerConfig(static *config.Config) *DynamicBrokerConfig {
	d := &DynamicBrokerConfig{}
	d.current.Store(static)
	return d
}

// Current is the configuration in force now; never nil once built.
func (d *DynamicBrokerConfig) Current() *config.Config { return d.current.Load() }

// AddReconfigurable registers r for the keys it names.
func (d *DynamicBrokerConfig) AddReconfigurable(r Reconfigurable) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reconfigurables = append(d.reconfigurables, r)
}
