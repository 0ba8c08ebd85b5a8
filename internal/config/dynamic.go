package config

// dynamic.go holds Kafka's sets of dynamically updatable broker keys (DynamicBrokerConfig's
// AllDynamicConfigs, PerBrokerConfigs, DynamicPasswordConfigs and DynamicConfig.Broker) and
// the checks ZkAdminManager runs before a key may be written to /config/brokers, with
// Kafka's messages: clients and tools match on them.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// DynamicBrokerDefault is the entity name of the cluster-wide defaults (ConfigEntityName.Default).
const DynamicBrokerDefault = "<default>"

// Keys of DynamicConfig.Broker that exist only as dynamic configs (no static definition).
const (
	LeaderReplicationThrottledRate         = "leader.replication.throttled.rate"
	FollowerReplicationThrottledRate       = "follower.replication.throttled.rate"
	ReplicaAlterLogDirsIOMaxBytesPerSecond = "replica.alter.log.dirs.io.max.bytes.per.second"
)

// dynamicOnlyDefs are DynamicConfig.Broker's own definitions: LONG, default Long.MAX_VALUE
// (ReplicationQuotaManagerConfig.QuotaBytesPerSecondDefault), at least 0.
var dynamicOnlyDefs = map[string]Def{
	LeaderReplicationThrottledRate:         d(LeaderReplicationThrottledRate, TypeLong, longMax, atLeast(0)),
	FollowerReplicationThrottledRate:       d(FollowerReplicationThrottledRate, TypeLong, longMax, atLeast(0)),
	ReplicaAlterLogDirsIOMaxBytesPerSecond: d(ReplicaAlterLogDirsIOMaxBytesPerSecond, TypeLong, longMax, atLeast(0)),
}

// dynamicSecurityConfigs is SslConfigs.RECONFIGURABLE_CONFIGS: updatable only with a
// listener prefix, per broker.
var dynamicSecurityConfigs = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
}

// listenerReconfigurableConfigs is DynamicListenerConfig.ReconfigurableConfigs.
var listenerReconfigurableConfigs = []string{
	"advertised.listeners", "listeners", "listener.security.protocol.map",
	"principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
	"ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
	"ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
	"ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
	"sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
	"sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
	"sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
	"sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
	"sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
	"sasl.login.refresh.buffer.seconds",
	"max.connections", "max.connection.creation.rate",
	"num.network.threads",
}

// clusterLevelListenerConfigs may be set at the cluster default even with a listener prefix.
var clusterLevelListenerConfigs = map[string]bool{
	"max.connections": true, "max.connection.creation.rate": true, "num.network.threads": true,
}

// LogCleanerReconfigurableConfigs is LogCleaner.ReconfigurableConfigs.
var LogCleanerReconfigurableConfigs = []string{
	"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
	"log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
	"log.cleaner.backoff.ms",
}

// LogReconfigurableConfigs is DynamicLogConfig.ReconfigurableConfigs: the first broker
// synonym of every topic config (ServerTopicConfigSynonyms), log.message.format.version
// excluded. log.retention.hours and other lower-precedence synonyms are not dynamic.
var LogReconfigurableConfigs = []string{
	"log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes",
	"log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes", "log.retention.ms",
	"message.max.bytes", "log.index.interval.bytes", "log.cleaner.delete.retention.ms",
	"log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
	"log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio", "log.cleanup.policy",
	"unclean.leader.election.enable", "min.insync.replicas", "compression.type", "log.preallocate",
	"log.message.timestamp.type", "log.message.timestamp.difference.max.ms",
	"log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
	"log.message.downconversion.enable", "log.local.retention.ms", "log.local.retention.bytes",
}

// ThreadPoolReconfigurableConfigs is DynamicThreadPool.ReconfigurableConfigs.
var ThreadPoolReconfigurableConfigs = []string{
	"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
}

// SocketServerReconfigurableConfigs is SocketServer.ReconfigurableConfigs.
var SocketServerReconfigurableConfigs = []string{
	"max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections", "max.connection.creation.rate",
}

// allDynamicConfigs is DynamicBrokerConfig.AllDynamicConfigs.
var allDynamicConfigs = func() map[string]bool {
	m := map[string]bool{}
	for _, set := range [][]string{
		dynamicSecurityConfigs, LogCleanerReconfigurableConfigs, LogReconfigurableConfigs,
		ThreadPoolReconfigurableConfigs, {"metric.reporters"}, listenerReconfigurableConfigs,
		SocketServerReconfigurableConfigs,
		{"producer.id.expiration.ms", "transaction.partition.verification.enable"}, // ProducerStateManagerConfig
		{"remote.log.index.file.cache.total.size.bytes"},                           // DynamicRemoteLogConfig
	} {
		for _, k := range set {
			m[k] = true
		}
	}
	return m
}()

// perBrokerConfigs is DynamicBrokerConfig.PerBrokerConfigs.
var perBrokerConfigs = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range dynamicSecurityConfigs {
		m[k] = true
	}
	for _, k := range listenerReconfigurableConfigs {
		if !clusterLevelListenerConfigs[k] {
			m[k] = true
		}
	}
	return m
}()

// dynamicPasswordConfigs are the dynamic keys of type PASSWORD; a key ending with one of them
// (listener.name.x.ssl.key.password, listener.name.x.scram-sha-256.sasl.jaas.config) is
// stored encrypted.
var dynamicPasswordConfigs = func() []string {
	var out []string
	for k := range allDynamicConfigs {
		if x, ok := defsByName[k]; ok && x.Type == TypePassword {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}()

// listenerMechanismConfigs are given as listener.name.<l>.<mechanism>.<key>.
var listenerMechanismConfigs = []string{
	"sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
	"sasl.server.callback.handler.class", "connections.max.reauth.ms",
}

// ListenerConfigBase returns the key under a listener.name.<listener>. prefix (Kafka's
// ListenerConfigRegex), ok=false for a key without one.
func ListenerConfigBase(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '.')
	if i < 0 {
		return "", false
	}
	return rest[i+1:], true
}

// IsDynamicConfig reports whether name may be updated at runtime: one of Kafka's dynamic
// keys, a dynamic-only key, a listener-prefixed key, or a key Kafka does not define (custom
// configs are allowed dynamically, as in Kafka).
func IsDynamicConfig(name string) bool { return !IsNonDynamicConfig(name) }

// IsNonDynamicConfig is DynamicConfig.Broker.nonDynamicProps: a key KafkaConfig defines that
// is not in AllDynamicConfigs.
func IsNonDynamicConfig(name string) bool {
	if _, ok := defsByName[name]; !ok {
		return false
	}
	return !allDynamicConfigs[name]
}

// IsUnprefixedSecurityConfig reports whether name is an SSL key or trust store key without a
// listener prefix: Kafka updates those only per listener.
func IsUnprefixedSecurityConfig(name string) bool {
	for _, k := range dynamicSecurityConfigs {
		if k == name {
			return true
		}
	}
	return false
}

// IsPerBrokerConfig reports whether name may be set only per broker, never at the cluster
// default (PerBrokerConfigs plus listener-prefixed keys other than the cluster-level ones).
func IsPerBrokerConfig(name string) bool {
	if perBrokerConfigs[name] {
		return true
	}
	if base, ok := ListenerConfigBase(name); ok {
		return !clusterLevelListenerConfigs[base]
	}
	return false
}

// IsDynamicPasswordConfig is DynamicBrokerConfig.isPasswordConfig: stored encrypted.
func IsDynamicPasswordConfig(name string) bool {
	for _, p := range dynamicPasswordConfigs {
		if strings.HasSuffix(name, p) {
			return true
		}
	}
	return false
}

// DynamicUpdateMode is Kafka's dynamicConfigUpdateModes for a key: "per-broker",
// "cluster-wide", or "read-only" for a key that cannot be updated.
func DynamicUpdateMode(name string) string {
	switch {
	case perBrokerConfigs[name]:
		return "per-broker"
	case allDynamicConfigs[name], dynamicOnlyDefs[name].Name != "":
		return "cluster-wide"
	}
	return "read-only"
}

// LookupDynamicOnly returns the definition of a key that exists only as a dynamic broker
// config (leader.replication.throttled.rate...).
func LookupDynamicOnly(name string) (Def, bool) {
	x, ok := dynamicOnlyDefs[name]
	return x, ok
}

// DynamicOnlyNames are the dynamic-only keys, sorted.
func DynamicOnlyNames() []string {
	out := make([]string, 0, len(dynamicOnlyDefs))
	for k := range dynamicOnlyDefs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// BrokerConfigSynonyms is DynamicBrokerConfig.brokerConfigSynonyms: the keys that set the
// same value as name, highest precedence first. With matchListenerOverride a
// listener-prefixed key is followed by its base key (for mechanism configs, the part after
// the mechanism).
func BrokerConfigSynonyms(name string, matchListenerOverride bool) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	if base, ok := ListenerConfigBase(name); ok && matchListenerOverride {
		for _, m := range listenerMechanismConfigs {
			if strings.HasSuffix(base, m) {
				return []string{name, m}
			}
		}
		return []string{name, base}
	}
	return []string{name}
}

// OverrideProps is DynamicBrokerConfig.overrideProps: each key of over replaces its
// synonyms in props (so a dynamic log.roll.hours wins over a static log.roll.ms) and is set.
func OverrideProps(props, over map[string]string) {
	for k, v := range over {
		for _, s := range BrokerConfigSynonyms(k, false) {
			delete(props, s)
		}
		props[k] = v
	}
}

// ScalaSet renders names as Scala prints a Set ("Set(a, b)"), sorted, as Kafka's messages
// about config names do.
func ScalaSet(names []string) string {
	s := append([]string(nil), names...)
	sort.Strings(s)
	return "Set(" + strings.Join(s, ", ") + ")"
}

// ValidateDynamicConfigs is DynamicBrokerConfig.validateConfigs for an update of
// /config/brokers/<id> (perBroker) or /config/brokers/<default>: non-dynamic keys, security
// keys without a listener prefix, values that do not parse or fail their range (keys under
// a listener prefix checked as their base key), and per-broker keys at the default, in
// Kafka's order and wording.
func ValidateDynamicConfigs(props map[string]string, perBroker bool) error {
	var nonDynamic, unprefixed, onlyPerBroker []string
	for k := range props {
		if IsNonDynamicConfig(k) {
			nonDynamic = append(nonDynamic, k)
		}
	}
	if len(nonDynamic) > 0 {
		return fmt.Errorf("Cannot update these configs dynamically: %s", ScalaSet(nonDynamic))
	}
	for _, k := range dynamicSecurityConfigs {
		if _, ok := props[k]; ok {
			unprefixed = append(unprefixed, k)
		}
	}
	if len(unprefixed) > 0 {
		return fmt.Errorf("These security configs can be dynamically updated only per-listener using the listener prefix: %s", ScalaSet(unprefixed))
	}
	if err := ValidateDynamicConfigTypes(props); err != nil {
		return err
	}
	if !perBroker {
		for k := range props {
			if IsPerBrokerConfig(k) {
				onlyPerBroker = append(onlyPerBroker, k)
			}
		}
		if len(onlyPerBroker) > 0 {
			return fmt.Errorf("Cannot update these configs at default cluster level, broker id must be specified: %s", ScalaSet(onlyPerBroker))
		}
	}
	return nil
}

// ValidateDynamicConfigTypes is DynamicBrokerConfig.validateConfigTypes: every dynamic key
// (a listener-prefixed key as its base key) must parse as its type and pass its validator;
// keys Kafka does not know are custom configs and pass. Keys are checked in sorted order so
// the error is stable.
func ValidateDynamicConfigTypes(props map[string]string) error {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := ValidateDynamicValue(k, props[k]); err != nil {
			return err
		}
	}
	return nil
}

// ValidateDynamicValue checks one key of a dynamic update (see ValidateDynamicConfigTypes)
// and reports a failure as ConfigDef does: "Invalid value <v> for configuration <k>: <why>".
func ValidateDynamicValue(name, value string) error {
	base := name
	if b, ok := ListenerConfigBase(name); ok {
		base = b
	}
	x, ok := dynamicOnlyDefs[base]
	if !ok {
		if !allDynamicConfigs[base] {
			return nil // custom or non-dynamic: not part of DynamicConfig.Broker's definitions
		}
		if x, ok = defsByName[base]; !ok {
			return nil
		}
	}
	return x.kafkaCheck(value)
}

// kafkaCheck is ConfigDef.parseType followed by the key's validator, with ConfigDef's
// messages (the key named as Kafka names it: the base key).
func (x Def) kafkaCheck(value string) error {
	v := strings.TrimSpace(value)
	bad := func(shown, why string) error {
		return fmt.Errorf("Invalid value %s for configuration %s: %s", shown, x.Name, why)
	}
	switch x.Type {
	case TypeInt, TypeShort, TypeLong:
		bits := map[Type]int{TypeInt: 32, TypeShort: 16, TypeLong: 64}[x.Type]
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return bad(v, "Not a number of type "+x.Type.String())
		}
		v = strconv.FormatInt(n, 10)
	case TypeDouble:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return bad(v, "Not a number of type DOUBLE")
		}
	case TypeBoolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return bad(v, "Expected value to be either true or false")
		}
		v = strings.ToLower(v)
	case TypeList:
		v = strings.Join(splitList(v), ",")
	}
	if x.validate != nil {
		if why := x.validate(v); why != "" {
			return bad(v, strings.ToUpper(why[:1])+why[1:])
		}
	}
	return nil
}
