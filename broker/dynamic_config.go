package broker

// dynamic_config.go mirrors kafka.server.DynamicBrokerConfig: the broker's configuration as
// the static file, /config/brokers/<default> and /config/brokers/<id> make it together
// (DYNAMIC_BROKER_CONFIG > DYNAMIC_DEFAULT_BROKER_CONFIG > STATIC_BROKER_CONFIG >
// DEFAULT_CONFIG), and the components that apply a change live (Reconfigurable).
//
// The effective configuration is always config.FromMap over static ∪ default ∪ per-broker
// (a dynamic key replacing its synonyms, as overrideProps does), so every derived field and
// every rule across keys is the one the static file gets. An update is all or nothing: the
// new configuration is built, every Reconfigurable whose keys changed validates it, and only
// then is it swapped in and the Reconfigurables applied. Stored values Kafka would ignore
// (non-dynamic keys, bad values, per-broker keys at the default, passwords that do not
// decode) are logged and dropped, never fatal.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"

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
	// ReconfigurableConfigs changed. It may call Layers and Current (the new values).
	Reconfigure(oldCfg, newCfg *config.Config)
}

// brokerConfigStore is where dynamic broker configs live (zkmeta.Client: /config/brokers).
type brokerConfigStore interface {
	GetBrokerConfig(entity string) (map[string]string, error)
	SetBrokerConfig(entity string, cfg map[string]string) error
}

// configLayers is one consistent view of the three layers (decoded: plain passwords).
type configLayers struct {
	static, dynDefault, dynBroker map[string]string
}

// DynamicBrokerConfig holds the broker's current configuration and its reconfigurables.
type DynamicBrokerConfig struct {
	current atomic.Pointer[config.Config]
	layers  atomic.Pointer[configLayers] // swapped with current, before Reconfigure runs

	mu              sync.Mutex // serializes updates; guards the fields below
	reconfigurables []Reconfigurable
	brokerID        int32
	encoder         *config.PasswordEncoder // password.encoder.secret; nil: none configured
	oldEncoder      *config.PasswordEncoder // password.encoder.old.secret; nil: none
	log             *logrus.Entry
}

// NewDynamicBrokerConfig starts from the static configuration.
func NewDynamicBrokerConfig(static *config.Config) *DynamicBrokerConfig {
	d := &DynamicBrokerConfig{
		brokerID: static.BrokerID,
		log:      logrus.NewEntry(logrus.StandardLogger()).WithField("component", "kafka.server.DynamicBrokerConfig"),
	}
	if static.Props != nil {
		d.encoder = config.PasswordEncoderFromProps(static.Props, "password.encoder.secret")
		d.oldEncoder = config.PasswordEncoderFromProps(static.Props, "password.encoder.old.secret")
	}
	d.current.Store(static)
	d.layers.Store(&configLayers{static: copyProps(static.Static), dynDefault: map[string]string{}, dynBroker: map[string]string{}})
	return d
}

// Current is the configuration in force now; never nil once built.
func (d *DynamicBrokerConfig) Current() *config.Config { return d.current.Load() }

// Layers returns copies of the static keys (as given in the file or by --override,
// normalized), the cluster default (/config/brokers/<default>) and this broker's
// (/config/brokers/<id>) dynamic keys in force, passwords decoded. DescribeConfigs reads
// the sources from these.
func (d *DynamicBrokerConfig) Layers() (static, dynDefault, dynBroker map[string]string) {
	l := d.layers.Load()
	return copyProps(l.static), copyProps(l.dynDefault), copyProps(l.dynBroker)
}

// AddReconfigurable registers r for the keys it names. Kafka refuses a reconfigurable
// naming non-dynamic keys (a programming error); those keys never change at runtime, so
// they are logged and r is registered for the rest.
func (d *DynamicBrokerConfig) AddReconfigurable(r Reconfigurable) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var nonDynamic []string
	for _, k := range r.ReconfigurableConfigs() {
		if config.IsNonDynamicConfig(k) {
			nonDynamic = append(nonDynamic, k)
		}
	}
	if len(nonDynamic) > 0 {
		d.log.WithFields(logrus.Fields{"reconfigurable": fmt.Sprintf("%T", r), "keys": nonDynamic}).
			Error("reconfigurable names non-dynamic configs; they never change at runtime")
	}
	d.reconfigurables = append(d.reconfigurables, r)
}

// Initialize is DynamicBrokerConfig.initialize: with the broker id known and before the log
// manager and listeners start, read /config/brokers/<default> and /config/brokers/<id> and
// make them part of the current configuration. Passwords stored with
// password.encoder.old.secret are re-encoded with the current secret and written back.
// Only a failure to read ZooKeeper is an error; stored values Kafka ignores are logged.
func (d *DynamicBrokerConfig) Initialize(store brokerConfigStore, brokerID int32, log *logrus.Entry) error {
	d.mu.Lock()
	d.brokerID = brokerID
	if log != nil {
		d.log = log.WithField("component", "kafka.server.DynamicBrokerConfig")
	}
	if cur := d.current.Load(); cur.BrokerID != brokerID {
		c := *cur
		c.BrokerID = brokerID
		d.current.Store(&c)
	}
	d.mu.Unlock()
	def, err := store.GetBrokerConfig(config.DynamicBrokerDefault)
	if err != nil {
		return err
	}
	entity := strconv.Itoa(int(brokerID))
	per, err := store.GetBrokerConfig(entity)
	if err != nil {
		return err
	}
	d.UpdateDefaultConfig(def)
	d.UpdateBrokerConfig(d.maybeReEncodePasswords(store, entity, per))
	return nil
}

// maybeReEncodePasswords is DynamicBrokerConfig.maybeReEncodePasswords.
func (d *DynamicBrokerConfig) maybeReEncodePasswords(store brokerConfigStore, entity string, persistent map[string]string) map[string]string {
	if d.oldEncoder == nil {
		return persistent
	}
	out := copyProps(persistent)
	changed := false
	for k, v := range persistent {
		if !config.IsDynamicPasswordConfig(k) {
			continue
		}
		plain, err := d.oldEncoder.Decode(v)
		if err != nil {
			d.log.WithField("config", k).Debug("dynamic password config could not be decoded using the old secret; the new secret will be used")
			continue
		}
		if d.encoder == nil {
			d.log.WithField("config", k).Error("password.encoder.old.secret is set without password.encoder.secret; dynamic password not re-encoded")
			continue
		}
		enc, err := d.encoder.Encode(plain)
		if err != nil {
			d.log.WithError(err).WithField("config", k).Error("could not re-encode dynamic password config")
			continue
		}
		out[k], changed = enc, true
	}
	if changed {
		if err := store.SetBrokerConfig(entity, out); err != nil {
			d.log.WithError(err).Error("could not store dynamic passwords re-encoded with the new secret")
		} else {
			d.log.Info("re-encoded dynamic password configs with the current password.encoder.secret")
		}
	}
	return out
}

// UpdateDefaultConfig is updateDefaultConfig: persistent is the stored
// /config/brokers/<default>; it replaces the default layer.
func (d *DynamicBrokerConfig) UpdateDefaultConfig(persistent map[string]string) {
	d.update(persistent, false)
}

// UpdateBrokerConfig is updateBrokerConfig: persistent is the stored /config/brokers/<id>;
// it replaces this broker's layer.
func (d *DynamicBrokerConfig) UpdateBrokerConfig(persistent map[string]string) {
	d.update(persistent, true)
}

func (d *DynamicBrokerConfig) update(persistent map[string]string, perBroker bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	props := d.fromPersistentProps(persistent, perBroker)
	old := d.layers.Load()
	if len(props) == 0 && (perBroker && len(old.dynBroker) == 0 || !perBroker && len(old.dynDefault) == 0) {
		return // nothing stored, nothing was: the configuration stays as built
	}
	next := &configLayers{static: old.static, dynDefault: old.dynDefault, dynBroker: old.dynBroker}
	if perBroker {
		next.dynBroker = props
	} else {
		next.dynDefault = props
	}
	if err := d.updateCurrentConfig(next); err != nil {
		what := "Cluster default configs"
		if perBroker {
			what = fmt.Sprintf("Per-broker configs of %d", d.brokerID)
		}
		d.log.WithError(err).WithField("keys", sortedKeys(persistent)).Error(what + " could not be applied")
	}
}

// HandleConfigChange is BrokerConfigHandler.processConfigChanges for a brokers/<entity>
// notification: the default and this broker's own entity are re-read and applied; other
// brokers' entities are not ours.
func (d *DynamicBrokerConfig) HandleConfigChange(store brokerConfigStore, entity string) error {
	if entity == config.DynamicBrokerDefault {
		props, err := store.GetBrokerConfig(entity)
		if err != nil {
			return err
		}
		d.UpdateDefaultConfig(props)
		return nil
	}
	id, err := strconv.ParseInt(strings.TrimSpace(entity), 10, 32)
	if err != nil {
		return fmt.Errorf("broker config change for %q: not a broker id", entity)
	}
	d.mu.Lock()
	mine := int32(id) == d.brokerID
	d.mu.Unlock()
	if !mine {
		return nil
	}
	props, err := store.GetBrokerConfig(entity)
	if err != nil {
		return err
	}
	d.UpdateBrokerConfig(props)
	return nil
}

// Validate is DynamicBrokerConfig.validate: props would be the new content of
// /config/brokers/<id> (perBroker) or /config/brokers/<default>, passwords in clear. The
// key checks come first (Kafka's messages), then the whole configuration is built and every
// Reconfigurable concerned validates it. Nothing changes.
func (d *DynamicBrokerConfig) Validate(props map[string]string, perBroker bool) error {
	if err := config.ValidateDynamicConfigs(props, perBroker); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.layers.Load()
	next := &configLayers{static: l.static, dynDefault: l.dynDefault, dynBroker: l.dynBroker}
	if perBroker {
		next.dynBroker = props
	} else {
		next.dynDefault = props
	}
	if _, _, err := d.processReconfiguration(next, true); err != nil {
		return err
	}
	current := l.dynDefault
	if perBroker {
		current = l.dynBroker
	}
	return d.checkAppliedLive(props, current)
}

// readLiveConfigs are dynamic keys that code reads from Current() at the moment of use, so
// a change applies without a Reconfigurable.
var readLiveConfigs = map[string]bool{
	"transaction.partition.verification.enable": true,
}

// checkAppliedLive refuses the keys an update sets or changes that Kafka updates at runtime
// but samsa cannot yet (no Reconfigurable applies them and nothing reads them live: adding
// listeners, SASL settings, metric reporters...). Accepting them would leave the stored value
// and the broker's behaviour out of step until a restart. Keys Kafka does not define are
// custom configs and pass, as in Kafka; removing a key is always allowed. Called with d.mu held.
func (d *DynamicBrokerConfig) checkAppliedLive(props, current map[string]string) error {
	live := map[string]bool{}
	for _, r := range d.reconfigurables {
		for _, k := range r.ReconfigurableConfigs() {
			live[k] = true
		}
	}
	var refused []string
	for k, v := range props {
		if cv, ok := current[k]; ok && cv == v {
			continue // unchanged: stored before, perhaps by Kafka itself
		}
		if live[k] || readLiveConfigs[k] {
			continue
		}
		base, prefixed := config.ListenerConfigBase(k)
		if !prefixed {
			base = k
		} else if !d.hasListener(k) {
			continue // for a listener this broker does not have: inert here, as in Kafka
		}
		_, known := config.Lookup(base)
		if _, mechKey, ok := strings.Cut(base, "."); !known && ok {
			_, known = config.Lookup(mechKey) // listener.name.<l>.<mechanism>.sasl.jaas.config
		}
		_, dynOnly := config.LookupDynamicOnly(base)
		if !known && !dynOnly {
			continue
		}
		refused = append(refused, k)
	}
	if len(refused) > 0 {
		return fmt.Errorf("samsa cannot apply these configs without a restart yet; set them in the broker's config file: %s", config.ScalaSet(refused))
	}
	return nil
}

// hasListener reports whether the listener a listener.name.<l>.* key names is one of this
// broker's listeners.
func (d *DynamicBrokerConfig) hasListener(key string) bool {
	rest := strings.TrimPrefix(key, "listener.name.")
	name, _, _ := strings.Cut(rest, ".")
	for _, l := range d.current.Load().Listeners {
		if strings.EqualFold(l.Name, name) {
			return true
		}
	}
	return false
}

// FromPersistentProps is fromPersistentProps: the stored form of a layer as it applies,
// ignored keys dropped (and logged) and passwords decoded.
func (d *DynamicBrokerConfig) FromPersistentProps(persistent map[string]string, perBroker bool) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fromPersistentProps(persistent, perBroker)
}

func (d *DynamicBrokerConfig) fromPersistentProps(persistent map[string]string, perBroker bool) map[string]string {
	props := copyProps(persistent)
	// removeInvalidConfigs: each key checked on its own.
	var invalid []string
	for k, v := range props {
		if config.ValidateDynamicValue(k, v) != nil {
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 {
		source := "default cluster"
		if perBroker {
			source = "broker"
		}
		for _, k := range invalid {
			delete(props, k)
		}
		d.log.Errorf("Dynamic %s config contains invalid values in: %s, these configs will be ignored", source, config.ScalaSet(invalid))
	}
	remove := func(match func(string) bool, msg string) {
		var names []string
		for k := range props {
			if match(k) {
				names = append(names, k)
			}
		}
		if len(names) > 0 {
			for _, k := range names {
				delete(props, k)
			}
			d.log.Errorf("%s: %s", msg, config.ScalaSet(names))
		}
	}
	remove(config.IsNonDynamicConfig, "Non-dynamic configs configured in ZooKeeper will be ignored")
	remove(config.IsUnprefixedSecurityConfig, "Security configs can be dynamically updated only using listener prefix, base configs will be ignored")
	if !perBroker {
		remove(config.IsPerBrokerConfig, "Per-broker configs defined at default cluster level will be ignored")
	}
	for k, v := range props {
		if !config.IsDynamicPasswordConfig(k) {
			continue
		}
		if d.encoder == nil {
			d.log.WithField("config", k).Error("Dynamic password config could not be decoded, ignoring: Password encoder secret not configured")
			delete(props, k)
			continue
		}
		plain, err := d.encoder.Decode(v)
		if err != nil {
			d.log.WithError(err).WithField("config", k).Error("Dynamic password config could not be decoded, ignoring.")
			delete(props, k)
			continue
		}
		props[k] = plain
	}
	return props
}

// errPasswordEncoderSecret is Kafka's ConfigException when a password must be stored and
// password.encoder.secret is not set.
var errPasswordEncoderSecret = errors.New("Password encoder secret not configured")

// ToPersistentProps is toPersistentProps: props as they are written to ZooKeeper, each
// password encrypted with password.encoder.secret. Passwords are per-broker only.
func (d *DynamicBrokerConfig) ToPersistentProps(props map[string]string, perBroker bool) (map[string]string, error) {
	out := copyProps(props)
	for k, v := range props {
		if !config.IsDynamicPasswordConfig(k) {
			continue
		}
		if !perBroker {
			return nil, errors.New("Password config can be defined only at broker level")
		}
		if d.encoder == nil {
			return nil, errPasswordEncoderSecret
		}
		enc, err := d.encoder.Encode(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", k, err)
		}
		out[k] = enc
	}
	return out, nil
}

// FileReloader is implemented by Reconfigurables that read files named by their keys (TLS
// key and trust stores): Kafka reloads them when an alter request repeats the same per-broker
// values, so a store replaced in place is picked up (reloadUpdatedFilesWithoutConfigChange).
type FileReloader interface {
	// ReloadFiles re-reads the files of newCfg; called only when none of the
	// Reconfigurable's keys changed.
	ReloadFiles(newCfg *config.Config) error
}

// ReloadUpdatedFilesWithoutConfigChange is reloadUpdatedFilesWithoutConfigChange: props is
// the validated new content of this broker's entity. Each FileReloader whose keys the
// update leaves unchanged reloads its files now; a changed one is reconfigured when the
// notification is applied. Failures are logged (the update itself goes on, as in Kafka).
func (d *DynamicBrokerConfig) ReloadUpdatedFilesWithoutConfigChange(props map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.layers.Load()
	next := &configLayers{static: l.static, dynDefault: l.dynDefault, dynBroker: props}
	cur := d.current.Load()
	newCfg, err := d.build(next.effectiveProps())
	if err != nil {
		return
	}
	for _, r := range d.reconfigurables {
		fr, ok := r.(FileReloader)
		if !ok || len(changedKeys(cur.Props, newCfg.Props, r.ReconfigurableConfigs())) > 0 {
			continue
		}
		if err := fr.ReloadFiles(newCfg); err != nil {
			d.log.WithError(err).WithField("reconfigurable", fmt.Sprintf("%T", r)).Error("could not reload files")
		}
	}
}

// dynamicConfigError is Kafka's ConfigException("Invalid dynamic configuration", cause):
// clients see only that text; the cause is logged and kept for errors.Is/As.
type dynamicConfigError struct{ cause error }

func (e *dynamicConfigError) Error() string { return "Invalid dynamic configuration" }
func (e *dynamicConfigError) Unwrap() error { return e.cause }

// effectiveProps merges the layers in precedence order.
func (l *configLayers) effectiveProps() map[string]string {
	props := copyProps(l.static)
	config.OverrideProps(props, l.dynDefault)
	config.OverrideProps(props, l.dynBroker)
	return props
}

// updateCurrentConfig is updateCurrentConfig: build, validate with every Reconfigurable
// concerned, swap, then reconfigure. On error nothing changes. Called with d.mu held.
func (d *DynamicBrokerConfig) updateCurrentConfig(next *configLayers) error {
	old := d.current.Load()
	newCfg, toUpdate, err := d.processReconfiguration(next, false)
	if err != nil {
		return err
	}
	d.layers.Store(next)
	if newCfg == old {
		return nil
	}
	d.current.Store(newCfg)
	for _, r := range toUpdate {
		d.reconfigure(r, old, newCfg)
	}
	return nil
}

func (d *DynamicBrokerConfig) reconfigure(r Reconfigurable, oldCfg, newCfg *config.Config) {
	defer func() {
		if p := recover(); p != nil {
			d.log.WithFields(logrus.Fields{"reconfigurable": fmt.Sprintf("%T", r), "panic": p}).Error("reconfiguration failed")
		}
	}()
	d.log.WithFields(logrus.Fields{"reconfigurable": fmt.Sprintf("%T", r),
		"updated_configs": changedKeys(oldCfg.Props, newCfg.Props, r.ReconfigurableConfigs())}).Info("reconfiguring")
	r.Reconfigure(oldCfg, newCfg)
}

// processReconfiguration is processReconfiguration: the configuration next makes, and the
// Reconfigurables whose keys it changes, all of which accepted it. The current config is
// returned unchanged when no effective value differs.
func (d *DynamicBrokerConfig) processReconfiguration(next *configLayers, validateOnly bool) (*config.Config, []Reconfigurable, error) {
	cur := d.current.Load()
	newCfg, err := d.build(next.effectiveProps())
	if err != nil {
		return nil, nil, err
	}
	changed := changedKeys(cur.Props, newCfg.Props, nil)
	if len(changed) == 0 {
		return cur, nil, nil
	}
	var toUpdate []Reconfigurable
	for _, r := range d.reconfigurables {
		if len(changedKeys(cur.Props, newCfg.Props, r.ReconfigurableConfigs())) == 0 {
			continue
		}
		if err := r.ValidateReconfiguration(newCfg); err != nil {
			if !validateOnly {
				d.log.WithError(err).WithField("reconfigurable", fmt.Sprintf("%T", r)).Error("Failed to update broker configuration")
			}
			return nil, nil, &dynamicConfigError{cause: err}
		}
		toUpdate = append(toUpdate, r)
	}
	return newCfg, toUpdate, nil
}

// build is new KafkaConfig(props): the static file's rules over the merged layers, with the
// broker id start-up settled on (broker.id may be -1 in the file).
func (d *DynamicBrokerConfig) build(props map[string]string) (*config.Config, error) {
	cfg, warnings, err := config.FromMap(props)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		d.log.Debug(w)
	}
	cfg.BrokerID = d.brokerID
	return cfg, nil
}

// changedKeys lists the keys whose effective value differs between old and new, restricted
// to only when not nil, sorted.
func changedKeys(old, new map[string]string, only []string) []string {
	var out []string
	if only != nil {
		for _, k := range only {
			ov, ook := old[k]
			nv, nok := new[k]
			if ov != nv || ook != nok {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	for k, nv := range new {
		if ov, ok := old[k]; !ok || ov != nv {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func copyProps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
