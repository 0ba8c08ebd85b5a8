package broker

// 32_describe_configs.go — DescribeConfigs v0-4 (kafka.server.ConfigHelper). Topic
// resources: every topic config with the value LogConfig resolves, its source and synonyms
// (topic override, then the primary broker key's synonyms through the per-broker dynamic,
// cluster-default dynamic, static and default layers). Broker resources: this broker's id
// lists every key with its current value, source, synonyms in Kafka's order (listener
// overrides before their base key, unit variants together), type, read-only (not
// dynamically updatable) and sensitive (PASSWORD or unknown type: null value); the empty
// name lists the cluster-wide dynamic defaults. BROKER_LOGGER: every logger and its level
// (logger_levels.go). include_documentation adds internal/config/docs.go's texts.
// DESCRIBE_CONFIGS on the topic or the cluster, else TOPIC_/CLUSTER_AUTHORIZATION_FAILED
// (authz.go). The dynamic layers come from DynamicBrokerConfig.Layers; without it only the
// static layer shows.

import (
	"context"
	"sort"
	"strconv"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 4, (*APIs).handleDescribeConfigs) }

// Kafka's DescribeConfigsResponse.ConfigSource ids.
const (
	sourceUnknown                   int8 = 0
	sourceTopicConfig               int8 = 1
	sourceDynamicBrokerConfig       int8 = 2
	sourceDynamicDefaultBroker      int8 = 3
	sourceStaticBrokerConfig        int8 = 4
	sourceDefaultConfig             int8 = 5
	sourceDynamicBrokerLoggerConfig int8 = 6
)

// Kafka's ConfigResource.Type ids.
const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
)

// configSynonym is one DescribeConfigsSynonym.
type configSynonym struct {
	Name   string
	Value  *string
	Source int8
}

// configEntry is one DescribeConfigsResourceResult (also CreateTopics v5+ configs).
type configEntry struct {
	Name        string
	Value       *string
	Source      int8
	ReadOnly    bool
	IsSensitive bool
	Synonyms    []configSynonym
	Type        int8
	Doc         *string // null unless include_documentation
}

// Kafka's DescribeConfigsResponse.ConfigType ids.
const (
	typeUnknown  int8 = 0
	typeBoolean  int8 = 1
	typeString   int8 = 2
	typeInt      int8 = 3
	typeShort    int8 = 4
	typeLong     int8 = 5
	typeDouble   int8 = 6
	typeList     int8 = 7
	typeClass    int8 = 8
	typePassword int8 = 9
)

// topicConfigTypes are LogConfig's ConfigDef types.
var topicConfigTypes = map[string]int8{
	"cleanup.policy": typeList, "compression.type": typeString, "delete.retention.ms": typeLong,
	"file.delete.delay.ms": typeLong, "flush.messages": typeLong, "flush.ms": typeLong,
	"follower.replication.throttled.replicas": typeList, "index.interval.bytes": typeInt,
	"leader.replication.throttled.replicas": typeList, "local.retention.bytes": typeLong,
	"local.retention.ms": typeLong, "max.compaction.lag.ms": typeLong, "max.message.bytes": typeInt,
	"message.downconversion.enable": typeBoolean, "message.format.version": typeString,
	"message.timestamp.after.max.ms": typeLong, "message.timestamp.before.max.ms": typeLong,
	"message.timestamp.difference.max.ms": typeLong, "message.timestamp.type": typeString,
	"min.cleanable.dirty.ratio": typeDouble, "min.compaction.lag.ms": typeLong, "min.insync.replicas": typeInt,
	"preallocate": typeBoolean, "remote.storage.enable": typeBoolean, "retention.bytes": typeLong,
	"retention.ms": typeLong, "segment.bytes": typeInt, "segment.index.bytes": typeInt,
	"segment.jitter.ms": typeLong, "segment.ms": typeLong, "unclean.leader.election.enable": typeBoolean,
}

// brokerKeyDefault returns Kafka's default of a broker key (DynamicBrokerConfig's
// staticDefaultConfigs); keys with a null default (log.retention.ms, log.roll.ms, ...) have
// none, and Kafka lists no DEFAULT_CONFIG synonym for them.
func brokerKeyDefault(name string) (string, bool) {
	d, ok := config.Lookup(name)
	if !ok || !d.HasDefault {
		return "", false
	}
	return d.Default, true
}

// staticBrokerProps are the properties the operator set (file and overrides): Kafka's
// staticBrokerConfigs, the broker layer of a topic's config.
func staticBrokerProps(cfg *config.Config) map[string]string {
	if cfg == nil {
		return nil
	}
	return cfg.Static
}

func strp(s string) *string { return &s }

// brokerConfigLayers are the layers DynamicBrokerConfig resolves a broker key through, most
// precedent first after the per-broker one: staticBrokerConfigs, currentDynamicDefaultConfigs
// (/config/brokers/<default>) and currentDynamicBrokerConfigs (/config/brokers/<id>).
type brokerConfigLayers struct {
	static, dynDefault, dynBroker map[string]string
}

// dynamicLayerSource is what DynamicBrokerConfig exposes of its layers. Asserted at run time
// so DescribeConfigs serves the static layer alone when no dynamic configs are wired.
type dynamicLayerSource interface {
	Layers() (static, dynDefault, dynBroker map[string]string)
}

// configLayers returns this broker's layers now.
func (a *APIs) configLayers() brokerConfigLayers {
	if a.DynamicConfig != nil {
		if src, ok := any(a.DynamicConfig).(dynamicLayerSource); ok {
			s, dd, db := src.Layers()
			return brokerConfigLayers{static: s, dynDefault: dd, dynBroker: db}
		}
	}
	return brokerConfigLayers{static: staticBrokerProps(a.config())}
}

// originals is KafkaConfig.originals of the current config: static, then the cluster
// defaults, then this broker's dynamic values on top.
func (l brokerConfigLayers) originals() map[string]string {
	out := make(map[string]string, len(l.static)+len(l.dynDefault)+len(l.dynBroker))
	for _, m := range []map[string]string{l.static, l.dynDefault, l.dynBroker} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// configSynonyms is ConfigHelper.configSynonyms: every synonym set in the per-broker layer,
// then the cluster-default layer, then static, then Kafka's defaults, each layer in the
// synonyms' order; everything before the first entry named name is dropped (e.g. a listener
// override when describing its base key). Sensitive values are null.
func (l brokerConfigLayers) configSynonyms(name string, synonyms []string, sensitive bool) []configSynonym {
	var all []configSynonym
	add := func(lookup func(string) (string, bool), source int8) {
		for _, s := range synonyms {
			if v, ok := lookup(s); ok {
				var value *string
				if !sensitive {
					value = strp(v)
				}
				all = append(all, configSynonym{Name: s, Value: value, Source: source})
			}
		}
	}
	fromMap := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	add(fromMap(l.dynBroker), sourceDynamicBrokerConfig)
	add(fromMap(l.dynDefault), sourceDynamicDefaultBroker)
	add(fromMap(l.static), sourceStaticBrokerConfig)
	add(brokerKeyDefault, sourceDefaultConfig)
	for i, s := range all {
		if s.Name == name {
			return all[i:]
		}
	}
	return nil
}

// brokerSynonymsOf is DynamicBrokerConfig.brokerConfigSynonyms(name, matchListenerOverride
// = true): the unit variants of a key (all of them, most precise first), a listener override
// followed by its base key, else the key alone.
func brokerSynonymsOf(name string) []string { return config.BrokerConfigSynonyms(name, true) }

// brokerKeyType is KafkaConfig.configType: the key's own type, else the first synonym's
// (listener overrides take their base key's); false when unknown.
func brokerKeyType(name string) (config.Type, bool) {
	if d, ok := config.Lookup(name); ok {
		return d.Type, true
	}
	if d, ok := config.LookupDynamicOnly(name); ok { // DynamicConfig.Broker's own keys
		return d.Type, true
	}
	for _, s := range brokerSynonymsOf(name) {
		if d, ok := config.Lookup(s); ok {
			return d.Type, true
		}
	}
	return 0, false
}

// configTypeID maps a ConfigDef type to DescribeConfigs' config_type.
func configTypeID(t config.Type) int8 {
	switch t {
	case config.TypeBoolean:
		return typeBoolean
	case config.TypeString:
		return typeString
	case config.TypeInt:
		return typeInt
	case config.TypeShort:
		return typeShort
	case config.TypeLong:
		return typeLong
	case config.TypeDouble:
		return typeDouble
	case config.TypeList:
		return typeList
	case config.TypeClass:
		return typeClass
	case config.TypePassword:
		return typePassword
	}
	return typeUnknown
}

// allDynamicBrokerConfigs is DynamicBrokerConfig.AllDynamicConfigs of Kafka 3.7: the keys a
// broker may change at runtime. DescribeConfigs reports every other key as read-only,
// including listener-prefixed and dynamic-only keys, as Kafka does (it checks the exact name).
var allDynamicBrokerConfigs = func() map[string]bool {
	m := map[string]bool{}
	for _, group := range [][]string{
		// SslConfigs.RECONFIGURABLE_CONFIGS
		{"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
			"ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
			"ssl.truststore.certificates"},
		// LogCleaner.ReconfigurableConfigs
		{"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size",
			"message.max.bytes", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms"},
		// DynamicLogConfig.ReconfigurableConfigs: each topic key's primary broker key but
		// log.message.format.version
		{"log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes", "log.flush.interval.messages",
			"log.flush.interval.ms", "log.retention.bytes", "log.retention.ms", "message.max.bytes", "log.index.interval.bytes",
			"log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
			"log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio", "log.cleanup.policy", "unclean.leader.election.enable",
			"min.insync.replicas", "compression.type", "log.preallocate", "log.message.timestamp.type",
			"log.message.timestamp.difference.max.ms", "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
			"log.message.downconversion.enable", "log.local.retention.ms", "log.local.retention.bytes"},
		// DynamicThreadPool.ReconfigurableConfigs
		{"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"},
		{"metric.reporters"},
		// DynamicListenerConfig.ReconfigurableConfigs
		{"advertised.listeners", "listeners", "listener.security.protocol.map", "principal.builder.class", "ssl.protocol",
			"ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
			"ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
			"sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms", "sasl.kerberos.service.name",
			"sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
			"sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
			"sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
			"max.connections", "max.connection.creation.rate", "num.network.threads"},
		// SocketServer.ReconfigurableConfigs
		{"max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections", "max.connection.creation.rate"},
		// ProducerStateManagerConfig.RECONFIGURABLE_CONFIGS
		{"producer.id.expiration.ms", "transaction.partition.verification.enable"},
		// DynamicRemoteLogConfig.ReconfigurableConfigs
		{"remote.log.index.file.cache.total.size.bytes"},
	} {
		for _, k := range group {
			m[k] = true
		}
	}
	return m
}()

// topicConfigEntries is ConfigHelper.createTopicConfigEntry over every topic config, sorted
// by name, for the overrides of one topic, with the broker layers as they are now.
func (a *APIs) topicConfigEntries(overrides map[string]string, withSynonyms, withDocs bool) []configEntry {
	return topicConfigEntriesOf(a.configLayers(), overrides, withSynonyms, withDocs)
}

// topicConfigEntriesOf builds the entries: the value LogConfig resolves (topic override, else
// the broker synonyms through the layers, else Kafka's default); synonyms are the topic
// override then the primary broker key's synonyms through the layers; unknown keys kept in
// the overrides are sensitive (Kafka hides values whose type it cannot tell).
func topicConfigEntriesOf(layers brokerConfigLayers, overrides map[string]string, withSynonyms, withDocs bool) []configEntry {
	brokerProps := layers.originals()
	lc, err := logstore.NewLogConfig(brokerProps, overrides)
	if err != nil {
		// A bad stored override: Kafka would fail the same way when building the LogConfig;
		// fall back to the broker layers so the other values still show.
		lc, _ = logstore.NewLogConfig(brokerProps, nil)
	}
	names := logstore.TopicConfigNames()
	for k := range overrides {
		if _, known := topicConfigTypes[k]; !known {
			names = append(names, k) // LogConfig.originals keeps unknown keys
		}
	}
	sort.Strings(names)
	out := make([]configEntry, 0, len(names))
	for _, name := range names {
		typ, known := topicConfigTypes[name]
		sensitive := !known
		var value *string
		if !sensitive {
			if v, ok := lc.Get(name); ok {
				value = strp(v)
			} else if v, ok := overrides[name]; ok {
				value = strp(v)
			}
		}
		var syns []configSynonym
		if _, ok := overrides[name]; ok {
			syns = append(syns, configSynonym{Name: name, Value: value, Source: sourceTopicConfig})
		}
		if primary := logstore.BrokerSynonym(name); primary != "" {
			syns = append(syns, layers.configSynonyms(primary, brokerSynonymsOf(primary), sensitive)...)
		}
		e := configEntry{Name: name, Value: value, Source: sourceDefaultConfig, IsSensitive: sensitive, Type: typ}
		if len(syns) > 0 {
			e.Source = syns[0].Source
		}
		if withSynonyms {
			e.Synonyms = syns
		}
		if withDocs {
			if d, ok := config.TopicDoc(name); ok {
				e.Doc = strp(d)
			}
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigEntries is ConfigHelper.createBrokerConfigEntry. perBroker (resource name =
// this broker's id): every known key and every key set in any layer, with the current
// value and all synonyms. Cluster default (empty name): the keys set at
// /config/brokers/<default>, with only their DYNAMIC_DEFAULT_BROKER_CONFIG synonyms.
func (a *APIs) brokerConfigEntries(perBroker, withSynonyms, withDocs bool) []configEntry {
	var props map[string]string
	if cfg := a.config(); cfg != nil {
		props = cfg.Props
	}
	return brokerConfigEntriesOf(a.configLayers(), props, perBroker, withSynonyms, withDocs)
}

// brokerConfigEntriesOf builds the entries from the layers and the current config's
// normalized properties.
func brokerConfigEntriesOf(layers brokerConfigLayers, props map[string]string, perBroker, withSynonyms, withDocs bool) []configEntry {
	var names []string
	var current map[string]string
	if perBroker {
		// AbstractConfig.originals (set keys, known or not) ++ nonInternalValues (every known key).
		current = layers.originals()
		seen := map[string]bool{}
		for _, k := range config.Names() {
			seen[k] = true
			names = append(names, k)
		}
		for k := range current {
			if !seen[k] {
				names = append(names, k)
			}
		}
	} else {
		current = layers.dynDefault
		for k := range current {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make([]configEntry, 0, len(names))
	for _, name := range names {
		typ, known := brokerKeyType(name)
		sensitive := !known || typ == config.TypePassword // KafkaConfig.maybeSensitive
		var value *string
		if !sensitive {
			value = brokerConfigValue(name, current, props, perBroker)
		}
		syns := layers.configSynonyms(name, brokerSynonymsOf(name), sensitive)
		if !perBroker {
			kept := syns[:0]
			for _, s := range syns {
				if s.Source == sourceDynamicDefaultBroker {
					kept = append(kept, s)
				}
			}
			syns = kept
		}
		e := configEntry{Name: name, Value: value, Source: sourceDefaultConfig, ReadOnly: !allDynamicBrokerConfigs[name],
			IsSensitive: sensitive, Type: typeUnknown}
		if known {
			e.Type = configTypeID(typ)
		}
		if len(syns) > 0 {
			e.Source = syns[0].Source
		}
		if withSynonyms {
			e.Synonyms = syns
		}
		if withDocs {
			if d, ok := config.BrokerDoc(name); ok {
				e.Doc = strp(d)
			}
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigValue is the value Kafka prints for a broker key: for a key of KafkaConfig's
// definition, its current parsed value (props, normalized), null when unset with a null
// default, even where a unit synonym gives the effective value (log.retention.ms); for any
// other key, the string it was set to.
func brokerConfigValue(name string, current, props map[string]string, perBroker bool) *string {
	v, set := current[name]
	d, defined := config.Lookup(name)
	if !perBroker || !defined {
		if set {
			return strp(v)
		}
		return nil
	}
	if set {
		if p, ok := props[name]; ok {
			return strp(p)
		}
		return strp(v)
	}
	if !d.HasDefault {
		return nil
	}
	if p, ok := props[name]; ok {
		return strp(p)
	}
	return strp(d.Default)
}

func (a *APIs) handleDescribeConfigs(ctx context.Context, rc *RequestContext, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	ad := a.admin()
	for _, res := range req.Resources {
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType, r.ResourceName = res.ResourceType, res.ResourceName
		// ConfigHelper.handleDescribeConfigsRequest: DESCRIBE_CONFIGS on the topic or the
		// cluster; the answer then carries the error's default message and no configs.
		if denied := a.configResourceAuthorized(rc, kmsg.ACLOperationDescribeConfigs, int8(res.ResourceType), res.ResourceName); denied != nil {
			r.ErrorCode = denied.code.Code
			msg := "Topic authorization failed."
			if denied.code == kerr.ClusterAuthorizationFailed {
				msg = "Cluster authorization failed."
			}
			r.ErrorMessage = &msg
			r.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
			resp.Resources = append(resp.Resources, r)
			continue
		}
		entries, err := a.describeResource(ad, res, req.IncludeSynonyms, req.IncludeDocumentation)
		if err != nil {
			r.ErrorCode, r.ErrorMessage = apiErrorParts(err)
			log := a.Log
			if ad != nil {
				log = ad.log
			}
			if log != nil {
				log.WithError(err).WithFields(logrus.Fields{"resource_type": res.ResourceType, "resource_name": res.ResourceName}).
					Debug("error processing describe configs request")
			}
			r.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
			resp.Resources = append(resp.Resources, r)
			continue
		}
		r.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		for _, e := range entries {
			// Kafka: a null or empty key list means every key.
			if len(res.ConfigNames) > 0 && !containsString(res.ConfigNames, e.Name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.IsSensitive
			c.Source = kmsg.ConfigSource(e.Source)
			c.IsDefault = e.Source == sourceDefaultConfig // v0's is_default
			c.ConfigType = kmsg.ConfigType(e.Type)
			c.Documentation = e.Doc
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
			for _, s := range e.Synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
			r.Configs = append(r.Configs, c)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// describeResource returns the entries of one resource or its error.
func (a *APIs) describeResource(ad *adminState, res kmsg.DescribeConfigsRequestResource, withSynonyms, withDocs bool) ([]configEntry, error) {
	switch res.ResourceType {
	case resourceTopic:
		if err := validateTopicName(res.ResourceName); err != nil {
			return nil, err
		}
		if ad == nil || a.Metadata == nil || !a.Metadata.Contains(res.ResourceName) {
			return nil, &apiError{code: kerr.UnknownTopicOrPartition}
		}
		overrides, err := ad.zk.GetTopicConfig(res.ResourceName)
		if err != nil {
			return nil, err
		}
		return a.topicConfigEntries(overrides, withSynonyms, withDocs), nil
	case resourceBroker:
		if res.ResourceName == "" {
			return a.brokerConfigEntries(false, withSynonyms, withDocs), nil
		}
		id, err := resourceNameToBrokerID(res.ResourceName)
		if err != nil {
			return nil, err
		}
		if id != a.BrokerID {
			return nil, newAPIError(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", a.BrokerID, res.ResourceName)
		}
		return a.brokerConfigEntries(true, withSynonyms, withDocs), nil
	case resourceBrokerLogger:
		if res.ResourceName == "" {
			return nil, newAPIError(kerr.InvalidRequest, "Broker id must not be empty")
		}
		id, err := resourceNameToBrokerID(res.ResourceName)
		if err != nil {
			return nil, err
		}
		if id != a.BrokerID {
			return nil, newAPIError(kerr.InvalidRequest, "Unexpected broker id, expected %d but received %s", a.BrokerID, res.ResourceName)
		}
		return a.brokerLoggerEntries(), nil
	}
	return nil, newAPIError(kerr.InvalidRequest, "Unsupported resource type: %s", res.ResourceType)
}

func resourceNameToBrokerID(name string) (int32, error) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, newAPIError(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
	}
	return int32(id), nil
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
